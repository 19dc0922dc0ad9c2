package api

import (
	"errors"
	"net"
	"net/http"
	"testing"
	"time"
)

func TestConnLimiter_closedWhileWaitingForRoom_acceptReturns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimiter(ln, 1)
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	busy, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	l.track(busy, http.StateActive) // serving a request: not to be evicted
	accepted := make(chan error, 1)
	go func() {
		c, err := l.Accept() // no room, nothing to evict: waits
		if c != nil {
			_ = c.Close()
		}
		accepted <- err
	}()
	select {
	case err := <-accepted:
		t.Fatalf("Accept returned at the cap with a busy connection: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	_ = l.Close()
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("Accept after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Accept still waiting for room after the listener was closed")
	}
	if open, evicted := l.stats(); open != 1 || evicted != 0 {
		t.Errorf("open %d, evicted %d; want 1, 0", open, evicted)
	}
}

func TestConnLimiter_atTheCap_evictsTheLongestWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := newConnLimiter(ln, 2)
	defer l.Close()
	var server []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		sc, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		server = append(server, sc)
	}
	// The first (waiting longest) made room for the third.
	if _, err := server[0].Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("the oldest connection: write err %v, want it closed", err)
	}
	for _, c := range server[1:] {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Errorf("a newer connection was closed: %v", err)
		}
	}
	if open, evicted := l.stats(); open != 2 || evicted != 1 {
		t.Errorf("open %d, evicted %d; want 2, 1", open, evicted)
	}
}
