package api

import (
	connlist "container/list"
	"net"
	"net/http"
	"sync"
)

// connLimiter caps the connections served at once, so that no number of
// clients exhausts the process's file descriptors or memory. At the cap, a
// new connection takes the place of the one that has waited longest for
// a request (a new connection that has not finished its headers, or a
// kept-alive idle one), which is closed: so a client with a real request,
// /healthz included, gets in at once however many idle or header-less
// connections are open. When every connection is serving a request, a new
// one waits in the kernel's backlog until one finishes (as with
// golang.org/x/net/netutil.LimitListener).
//
// It learns which connections wait for a request from the server's
// ConnState hook (track).
type connLimiter struct {
	net.Listener
	max int

	mu      sync.Mutex
	freed   *sync.Cond // a connection closed, or the listener did
	open    int
	closed  bool
	waiting connlist.List // *limitedConn without a request in progress, longest waiting first
	evicted int64         // connections closed to make room (tests read it)
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	l := &connLimiter{Listener: ln, max: max}
	l.freed = sync.NewCond(&l.mu)
	return l
}

// Accept accepts a connection and admits it once there is room for it.
func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	for l.open >= l.max && !l.closed {
		if e := l.waiting.Front(); e != nil {
			victim := e.Value.(*limitedConn)
			l.unwait(victim)
			l.evicted++
			l.mu.Unlock()
			_ = victim.Close() // frees its place
			l.mu.Lock()
			continue
		}
		l.freed.Wait()
	}
	if l.closed {
		l.mu.Unlock()
		_ = c.Close()
		return nil, net.ErrClosed
	}
	l.open++
	lc := &limitedConn{Conn: c, l: l}
	l.wait(lc) // StateNew follows; a connection waits for its first request
	l.mu.Unlock()
	return lc, nil
}

// Close closes the listener and wakes an Accept waiting for room.
func (l *connLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.freed.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// track is the http.Server's ConnState hook: a connection waits for a
// request when it is new or idle, and not while a request is in progress.
func (l *connLimiter) track(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateNew, http.StateIdle:
		l.wait(lc)
	default:
		l.unwait(lc)
	}
}

// wait puts c at the back of the waiting list (l.mu held).
func (l *connLimiter) wait(c *limitedConn) {
	if c.done {
		return
	}
	l.unwait(c)
	c.elem = l.waiting.PushBack(c)
}

// unwait takes c out of the waiting list (l.mu held).
func (l *connLimiter) unwait(c *limitedConn) {
	if c.elem != nil {
		l.waiting.Remove(c.elem)
		c.elem = nil
	}
}

// stats reports the connections open and those evicted so far.
func (l *connLimiter) stats() (open int, evicted int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.evicted
}

// limitedConn gives its place back when it is closed, once.
type limitedConn struct {
	net.Conn
	l    *connLimiter
	elem *connlist.Element // in l.waiting; nil when not waiting (l.mu)
	done bool              // closed (l.mu)
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.done = true
		c.l.unwait(c)
		c.l.open--
		c.l.freed.Signal()
		c.l.mu.Unlock()
	})
	return err
}
