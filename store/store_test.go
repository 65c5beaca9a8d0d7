package store_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/store/pgtest"
	"github.com/spotter-harness/spotter/store/storetest"
)

func sqliteDSN(t testing.TB) string { return filepath.Join(t.TempDir(), "spotter.db") }

func TestSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) string { return sqliteDSN(t) })
}

func TestPostgres(t *testing.T) {
	start := time.Now()
	dsn := pgtest.Start(t)
	t.Logf("server started in %v", time.Since(start))
	storetest.Run(t, func(t *testing.T) string { return pgtest.NewDB(t, dsn) })
	t.Run("SchemaMatchesSQLite", func(t *testing.T) { testSchemasMatch(t, pgtest.NewDB(t, dsn)) })
}

func TestSQLiteOpenErrors(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dsn := range []string{
		"",
		":memory:",
		"file:x.db?mode=memory",
		filepath.Join(dir, "missing", "spotter.db"),
		dir,
		notDB,
	} {
		if s, err := store.Open(t.Context(), dsn); err == nil {
			s.Close()
			t.Errorf("Open(%q) = nil error, want an error", dsn)
		}
	}
}

func TestSQLiteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "odd ?#% name.db")
	s, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	defer s.Close()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the database file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("database file mode = %v, want 0600", fi.Mode().Perm())
	}
	raw := rawSQLite(t, path)
	var mode string
	if err := raw.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("PRAGMA journal_mode on a plain connection = %q, %v, want wal", mode, err)
	}
	var version int
	if err := raw.QueryRow("SELECT max(version) FROM schema_version").Scan(&version); err != nil || version < 1 {
		t.Errorf("schema version = %d, %v, want at least 1", version, err)
	}
}

// TestNewerSchema checks that a database from a newer Spotter is refused,
// not silently used.
func TestNewerSchema(t *testing.T) {
	path := sqliteDSN(t)
	s, err := store.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	s.Close()
	if _, err := rawSQLite(t, path).Exec("INSERT INTO schema_version VALUES (999, 0)"); err != nil {
		t.Fatal(err)
	}
	if s, err := store.Open(t.Context(), path); err == nil || !strings.Contains(err.Error(), "newer") {
		if s != nil {
			s.Close()
		}
		t.Errorf("Open(a database of schema 999) = %v, want a newer-schema error", err)
	}
}

func TestPostgresOpenErrors(t *testing.T) {
	dsn := "postgres://spotter:hunter2@/spotter?host=" + t.TempDir() + "&connect_timeout=5"
	s, err := store.Open(t.Context(), dsn)
	if err == nil {
		s.Close()
		t.Fatalf("Open(%q) = nil error, want one (no server there)", dsn)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open() error shows the password: %v", err)
	}
	if _, err := store.Open(t.Context(), "postgres://%zz"); err == nil {
		t.Errorf("Open(bad URL) = nil error, want one")
	}
}

// testSchemasMatch checks that both backends have the same logical schema:
// tables, columns and which columns may be NULL.
func testSchemasMatch(t *testing.T, pgDSN string) {
	ctx := t.Context()
	path := sqliteDSN(t)
	for _, dsn := range []string{path, pgDSN} {
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatalf("Open(%q) = %v", dsn, err)
		}
		s.Close()
	}
	columns := func(db *sql.DB, q string) []string {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var table, col string
			var notNull bool
			if err := rows.Scan(&table, &col, &notNull); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s.%s notnull=%v", table, col, notNull))
		}
		return out
	}
	lite := columns(rawSQLite(t, path), `SELECT m.name, p.name, p."notnull" OR p.pk > 0
FROM sqlite_master m JOIN pragma_table_info(m.name) p
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.name`)
	pg, err := sql.Open("pgx", pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	pgc := columns(pg, `SELECT table_name::text, column_name::text, is_nullable = 'NO'
FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name COLLATE "C", column_name COLLATE "C"`)
	if diff := cmp.Diff(lite, pgc); diff != "" {
		t.Errorf("columns (-sqlite +postgres):\n%s", diff)
	}
}

func rawSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	u := url.URL{Scheme: "file", Path: path}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// crashEnv names the database a child of TestSQLiteCrash appends to.
const crashEnv = "SPOTTER_STORE_CRASH_CHILD"

// TestSQLiteCrash kills a process that appends events with SIGKILL,
// twice, and checks that every append it acknowledged survived, that the
// sequence has no gap, and that the file is intact.
func TestSQLiteCrash(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	ctx := t.Context()
	path := sqliteDSN(t)
	s, err := store.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open() = %v", err)
	}
	if err := s.CreateSession(ctx, store.Session{ID: "s", Kind: "agent", Status: store.StatusRunning}); err != nil {
		t.Fatalf("CreateSession() = %v", err)
	}
	s.Close()

	var acked int64
	for round := range 2 {
		last := crashRound(t, path, 150)
		if last <= acked {
			t.Fatalf("round %d: last acknowledged seq %d, want more than %d", round, last, acked)
		}
		acked = last

		s, err := store.Open(ctx, path)
		if err != nil {
			t.Fatalf("round %d: Open() after kill -9 = %v", round, err)
		}
		evs, err := s.Events(ctx, "s", 0)
		s.Close()
		if err != nil {
			t.Fatalf("round %d: Events() after kill -9 = %v", round, err)
		}
		if int64(len(evs)) < acked {
			t.Fatalf("round %d: %d events after kill -9, want at least the %d acknowledged", round, len(evs), acked)
		}
		for i, e := range evs {
			if e.Seq != int64(i+1) {
				t.Fatalf("round %d: event %d has seq %d: a gap or a duplicate", round, i, e.Seq)
			}
			var d struct{ Seq int64 }
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Seq != e.Seq {
				t.Fatalf("round %d: event %d data %s, want {\"seq\":%d}", round, e.Seq, e.Data, e.Seq)
			}
		}
		t.Logf("round %d: %d acknowledged, %d stored", round, acked, len(evs))
		acked = int64(len(evs))

		var check string
		if err := rawSQLite(t, path).QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
			t.Fatalf("round %d: PRAGMA integrity_check = %q, %v, want ok", round, check, err)
		}
	}
}

// crashRound runs a child that appends events, SIGKILLs it once it has
// acknowledged n of them, and returns the last seq it acknowledged.
func crashRound(t *testing.T, path string, n int) int64 {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSQLiteCrash$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	var last int64
	count := 0
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		seq, err := strconv.ParseInt(strings.TrimPrefix(sc.Text(), "acked "), 10, 64)
		if err != nil || !strings.HasPrefix(sc.Text(), "acked ") {
			continue // the test framework's own output
		}
		if seq <= last {
			t.Errorf("child acknowledged seq %d after %d", seq, last)
		}
		last = seq
		count++
		if count == n && !killed {
			// Lines still in the pipe were acknowledged too: read on.
			cmd.Process.Kill()
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child ended after %d acknowledgements, before the kill: %v", count, err)
	}
	return last
}

// crashChild appends events until it is killed. Each event's data holds
// the seq it got, so the parent can check what it reads.
func crashChild(path string) {
	ctx := context.Background()
	s, err := store.Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	evs, err := s.Events(ctx, "s", 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		os.Exit(2)
	}
	next := int64(len(evs)) + 1
	for i := 0; i < 100000; i++ {
		e := &store.Event{Session: "s", Type: "tick", Data: json.RawMessage(fmt.Sprintf(`{"seq":%d}`, next))}
		if err := s.AppendEvent(ctx, e); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		if e.Seq != next {
			fmt.Fprintf(os.Stderr, "child: got seq %d, want %d\n", e.Seq, next)
			os.Exit(2)
		}
		fmt.Printf("acked %d\n", e.Seq)
		next++
	}
	os.Exit(3) // never killed: the parent fails
}

func benchStore(b *testing.B) store.Store {
	s, err := store.Open(b.Context(), sqliteDSN(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.CreateSession(b.Context(), store.Session{ID: "s", Kind: "agent", Status: store.StatusRunning}); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchData is a typical tool_call event.
var benchData = json.RawMessage(`{"toolCallId":"toolu_01A09q90qw90lq917835lq9","name":"computer","input":{"action":"left_click","coordinate":[512,384]}}`)

// BenchmarkAppendEvent measures one durable append on SQLite, which every
// step of every session pays several times.
func BenchmarkAppendEvent(b *testing.B) {
	s := benchStore(b)
	for b.Loop() {
		if err := s.AppendEvent(b.Context(), &store.Event{Session: "s", Type: "tool_call", Data: benchData}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventParallel appends from many goroutines at once.
func BenchmarkAppendEventParallel(b *testing.B) {
	s := benchStore(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.AppendEvent(b.Context(), &store.Event{Session: "s", Type: "tool_call", Data: benchData}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendEvent16 appends from 16 goroutines at once, as 16
// sessions' steps do: with group commit they share syncs.
func BenchmarkAppendEvent16(b *testing.B) {
	s := benchStore(b)
	b.SetParallelism(8) // 8 per GOMAXPROCS: 16 on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := s.AppendEvent(b.Context(), &store.Event{Session: "s", Type: "tool_call", Data: benchData}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// A PostgreSQL restart (pg_ctl restart -m fast) under writes loses
// nothing: writes in flight when it stops, and writes made while it is
// down, wait for it and are stored once it is back, each once, in order;
// Ping fails while it is down.
func TestPostgresRestart(t *testing.T) {
	srv := pgtest.StartServer(t)
	s, err := store.Open(t.Context(), pgtest.NewDB(t, srv.DSN))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.CreateSession(ctx, store.Session{ID: "a", Kind: "agent", Status: store.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	const n = 200
	errs := make(chan error, n)
	go func() {
		for i := range n {
			errs <- s.AppendEvent(ctx, &store.Event{Session: "a", Type: "x", Data: json.RawMessage(strconv.Itoa(i))})
		}
	}()
	for i := range 20 { // some are stored before the stop
		if err := <-errs; err != nil {
			t.Fatalf("AppendEvent %d before the stop = %v", i, err)
		}
	}
	srv.Stop()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if err := s.Ping(pctx); err == nil {
		t.Error("Ping() while the server is stopped = nil")
	}
	cancel()
	srv.Start()
	for i := 20; i < n; i++ {
		if err := <-errs; err != nil {
			t.Errorf("AppendEvent %d across the restart = %v, want it stored", i, err)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping() after the restart = %v", err)
	}
	evs, err := s.Events(ctx, "a", 0)
	if err != nil || len(evs) != n {
		t.Fatalf("Events() after the restart = %d, %v, want %d", len(evs), err, n)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) || string(e.Data) != strconv.Itoa(i) {
			t.Fatalf("event %d = seq %d data %s, want seq %d data %d: a write lost, repeated or out of order", i, e.Seq, e.Data, i+1, i)
		}
	}
}
