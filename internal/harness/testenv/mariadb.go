package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDB is a private mariadbd process with its own data directory, for
// tests that stop, kill and restart the database. Unlike the shared server
// of scripts/test.sh it may be paused without disturbing other packages.
type MariaDB struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	sock string
	tmp  string
	user string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

func findMariadbd() string {
	if p, err := exec.LookPath("mariadbd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/mariadbd"); err == nil {
		return "/usr/sbin/mariadbd"
	}
	return ""
}

// StartMariaDB initialises a data directory and starts mariadbd on a free
// loopback port with durable commits (innodb_flush_log_at_trx_commit=1).
// It creates the database "promptd". The server is killed when t ends.
func StartMariaDB(t testing.TB) *MariaDB {
	t.Helper()
	bin := findMariadbd()
	if bin == "" {
		unavailable(t, "mariadbd not found")
	}
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		unavailable(t, "mariadb-install-db not found")
	}
	dir, err := os.MkdirTemp("", "promptd-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	m := &MariaDB{t: t, bin: bin, dir: dir, sock: filepath.Join(dir, "mysql.sock"), user: currentUser()}
	t.Cleanup(func() { m.Kill(); _ = os.RemoveAll(dir) })
	if m.user == "root" {
		m.user = "mysql"
		if u, err := user.Lookup("mysql"); err == nil {
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			_ = os.Chown(dir, uid, gid)
		}
	}
	// A private tmpdir: with the default /tmp, concurrent installs and
	// servers (parallel test packages, the test script's own instance)
	// share the directory of their internal temporary tables, and one
	// CI run failed "Error on delete of '/tmp/#sql-temptable-...'".
	m.tmp = filepath.Join(dir, "tmp")
	if err := os.MkdirAll(m.tmp, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(m.tmp, 0o777)
	var out []byte
	for attempt := 1; ; attempt++ {
		out, err = exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"),
			"--tmpdir="+m.tmp, "--user="+m.user, "--auth-root-authentication-method=normal", "--skip-test-db",
			"--innodb-log-file-size=16M").CombinedOutput()
		if err == nil {
			break
		}
		if attempt == 2 {
			t.Fatalf("testenv: mariadb-install-db (attempt %d): %v: %s", attempt, err, out)
		}
		t.Logf("testenv: mariadb-install-db failed, retrying once on a clean data directory: %v", err)
		_ = os.RemoveAll(filepath.Join(dir, "data"))
	}
	m.port = FreePort(t)
	m.Restart()
	db := m.open("")
	defer db.Close()
	if _, err := db.Exec("CREATE DATABASE promptd CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		t.Fatalf("testenv: create database: %v", err)
	}
	return m
}

func currentUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

// DSN is a go-sql-driver DSN of database "promptd" over TCP.
func (m *MariaDB) DSN() string {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName, c.ParseTime = "root", "tcp", "127.0.0.1:"+strconv.Itoa(m.port), "promptd", true
	c.Timeout = 2 * time.Second
	return c.FormatDSN()
}

func (m *MariaDB) open(dbname string) *sql.DB {
	c := mysql.NewConfig()
	c.User, c.Net, c.Addr, c.DBName = "root", "unix", m.sock, dbname
	db, err := sql.Open("mysql", c.FormatDSN())
	if err != nil {
		m.t.Fatal(err)
	}
	return db
}

// Pause stops mariadbd with SIGSTOP; Resume continues it.
func (m *MariaDB) Pause()  { m.signal(syscall.SIGSTOP) }
func (m *MariaDB) Resume() { m.signal(syscall.SIGCONT) }

func (m *MariaDB) signal(sig os.Signal) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd != nil {
		_ = m.cmd.Process.Signal(sig)
	}
}

// Kill kills mariadbd with SIGKILL and waits for it; the data stays.
func (m *MariaDB) Kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGCONT)
	_ = m.cmd.Process.Kill()
	<-m.exited
	m.cmd = nil
}

// Restart (re)starts mariadbd on the same port and data directory, after
// a crash recovery if it was killed, and waits until it answers.
func (m *MariaDB) Restart() {
	m.t.Helper()
	m.Kill()
	logf, err := os.OpenFile(filepath.Join(m.dir, "mariadbd.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		m.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(m.bin, "--no-defaults", "--datadir="+filepath.Join(m.dir, "data"), "--user="+m.user,
		"--tmpdir="+m.tmp, "--socket="+m.sock, "--port="+strconv.Itoa(m.port), "--bind-address=127.0.0.1", "--skip-name-resolve",
		"--pid-file="+filepath.Join(m.dir, "mysqld.pid"), "--innodb-flush-log-at-trx-commit=1",
		"--innodb-log-file-size=16M", "--innodb-use-native-aio=0", "--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci", "--max-connections=500")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		m.t.Fatalf("testenv: start mariadbd: %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()
	db := m.open("")
	defer db.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := db.PingContext(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-exited:
			m.t.Fatalf("testenv: mariadbd exited: %s", tail(filepath.Join(m.dir, "mariadbd.log")))
		default:
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("testenv: mariadbd not ready: %v: %s", err, tail(filepath.Join(m.dir, "mariadbd.log")))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// String names the server for logs.
func (m *MariaDB) String() string { return fmt.Sprintf("mariadbd on 127.0.0.1:%d", m.port) }
