// Package pgtest starts throwaway PostgreSQL servers for tests.
//
// Start runs Debian's PostgreSQL (initdb and postgres from
// /usr/lib/postgresql/*/bin, or from PATH) in a temporary directory, as the
// postgres system user when the test runs as root. The server listens only on
// a unix socket in that directory, trusts local connections, and is stopped
// and removed when the test ends. Like every integration test, it needs
// SPOTTER_INTEGRATION=1: unset, the test is skipped; set, a missing
// PostgreSQL fails it.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// startTimeout bounds initdb and the server's start.
const startTimeout = 60 * time.Second

// Start starts a PostgreSQL server for t and returns the DSN of its
// "postgres" database, as superuser "postgres". The server is stopped and
// its files removed when t ends. Use NewDB for more databases in it.
func Start(t testing.TB) string { return StartServer(t).DSN }

// Server is a throwaway PostgreSQL server (StartServer).
type Server struct {
	DSN string // its "postgres" database, as superuser "postgres"

	t      testing.TB
	bin    string
	dir    string
	cred   *syscall.Credential
	cmd    *exec.Cmd
	exited chan struct{}
	err    error // how cmd exited, once exited is closed
}

// StartServer is Start, returning the Server, which a test can stop and
// start again on the same data (Restart).
func StartServer(t testing.TB) *Server {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("PostgreSQL tests need SPOTTER_INTEGRATION=1")
	}
	bin, err := binDir()
	if err != nil {
		t.Fatalf("pgtest: %v (install it: apt-get install -y postgresql)", err)
	}
	cred, err := credential()
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}

	// Not t.TempDir: the server's user must be able to reach the directory.
	dir, err := os.MkdirTemp("", "spotter-pg-")
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			t.Fatalf("pgtest: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", filepath.Join(dir, "data"), "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	s := &Server{t: t, bin: bin, dir: dir, cred: cred}
	s.DSN = (&url.URL{
		Scheme:   "postgres",
		User:     url.User("postgres"),
		Path:     "/postgres",
		RawQuery: url.Values{"host": {dir}, "sslmode": {"disable"}}.Encode(),
	}).String()
	t.Cleanup(func() { s.stop(syscall.SIGINT) })
	s.start()
	return s
}

// start starts the server on its data directory and returns once it
// accepts connections.
func (s *Server) start() {
	t := s.t
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.dir, "server.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer logf.Close()
	srv := exec.Command(filepath.Join(s.bin, "postgres"), "-D", filepath.Join(s.dir, "data"),
		"-k", s.dir, // the socket
		"-c", "listen_addresses=", // no TCP
		"-c", "shared_buffers=16MB",
		"-c", "max_connections=200",
		// A throwaway server: nothing is lost if the machine stops, so
		// skip the flushes (the store's durability is PostgreSQL's own).
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
	)
	srv.Stdout, srv.Stderr, srv.Dir = logf, logf, s.dir
	// SIGQUIT (immediate shutdown) if this process dies without cleaning up.
	srv.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGQUIT}
	if err := srv.Start(); err != nil {
		t.Fatalf("pgtest: start postgres: %v", err)
	}
	s.cmd, s.exited = srv, make(chan struct{})
	go func(exited chan struct{}) {
		s.err = srv.Wait()
		close(exited)
	}(s.exited)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for {
		err := ping(ctx, s.DSN)
		if err == nil {
			return
		}
		select {
		case <-s.exited:
			t.Fatalf("pgtest: postgres exited: %v\n%s", s.err, readLog(s.dir))
		case <-ctx.Done():
			t.Fatalf("pgtest: postgres did not accept connections within %v: %v\n%s", startTimeout, err, readLog(s.dir))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop stops the server with sig (SIGINT: a fast shutdown) and waits for
// it to exit, killing it after 30s.
func (s *Server) stop(sig syscall.Signal) {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
}

// Stop stops the server as pg_ctl stop -m fast does: it disconnects every
// client, rolling back their open transactions, and exits.
func (s *Server) Stop() { s.stop(syscall.SIGINT) }

// Start starts a stopped server again on its data, as pg_ctl start does,
// and returns once it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("pgtest: Start of a server that runs")
	}
	s.start()
}

// Restart is Stop then Start: pg_ctl restart -m fast.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// NewDB creates an empty database in the server at dsn (from Start) and
// returns its DSN. It is dropped with the server.
func NewDB(t testing.TB, dsn string) string {
	t.Helper()
	name := "t_" + strings.ToLower(rand.Text()[:12])
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer conn.Close(context.WithoutCancel(t.Context()))
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+name+" STRATEGY = FILE_COPY"); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

func ping(ctx context.Context, dsn string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return conn.Ping(ctx)
}

// binDir finds the directory with initdb and postgres: the newest
// /usr/lib/postgresql/<version>/bin (Debian's layout), else PATH.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(d string) float64 {
		v, _ := strconv.ParseFloat(filepath.Base(filepath.Dir(d)), 64)
		return v
	}
	slices.SortFunc(dirs, func(a, b string) int { return int(version(b)*100 - version(a)*100) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		d := filepath.Dir(p)
		if isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("PostgreSQL not found: no /usr/lib/postgresql/*/bin/initdb and no initdb in PATH")
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// credential is the postgres user's when running as root (the server
// refuses to run as root), else nil: run as ourselves.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root and no postgres user to run the server as: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func readLog(dir string) string {
	b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(bytes.TrimSpace(b))
}
