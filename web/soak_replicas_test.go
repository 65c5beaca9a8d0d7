package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/store/pgtest"
	"github.com/spotter-harness/spotter/web"
)

// soakEnv reads a soak setting: SPOTTER_SOAK_<name>, or def.
func soakEnv(t *testing.T, name, def string) string {
	t.Helper()
	if v := os.Getenv("SPOTTER_SOAK_" + name); v != "" {
		return v
	}
	return def
}

// soakInterval is what one interval of the soak measured.
type soakInterval struct {
	calls, sessions, errors int64
	lat                     []time.Duration
}

// TestSoakReplicas is `make soak`: SPOTTER_SOAK_CLIENTS clients (default
// 4) drive executor sessions (create, calls on a noisy page, DELETE)
// against SPOTTER_SOAK_REPLICAS replicas (default 2, in this process,
// sharing one PostgreSQL and one data directory, each session's browser
// a Chromium behind its egress proxy) for SPOTTER_SOAK_FOR (required),
// each client's requests going to the replicas in turn (so half of them
// are forwarded), under --retain SPOTTER_SOAK_RETAIN (default 2m). Every
// SPOTTER_SOAK_EVERY (default 1m) it prints the interval's calls,
// sessions, errors, call p50 and p95, and the process's RSS, Go heap,
// goroutines, file descriptors and Chromium processes, the data
// directory's bytes and the database's size. At the end it checks that
// goroutines, fds and Chromium processes come back to where they were
// after a warm-up, and that the data directory stays bounded.
func TestSoakReplicas(t *testing.T) {
	forS := os.Getenv("SPOTTER_SOAK_FOR")
	if !integration() || forS == "" {
		t.Skip("make soak runs it: SPOTTER_INTEGRATION=1 SPOTTER_SOAK_FOR=10m (and SPOTTER_SOAK_CLIENTS, _REPLICAS, _RETAIN, _EVERY)")
	}
	dur, err := time.ParseDuration(forS)
	if err != nil {
		t.Fatalf("SPOTTER_SOAK_FOR=%q: %v", forS, err)
	}
	clients, err1 := strconv.Atoi(soakEnv(t, "CLIENTS", "4"))
	nrep, err2 := strconv.Atoi(soakEnv(t, "REPLICAS", "2"))
	every, err3 := time.ParseDuration(soakEnv(t, "EVERY", "1m"))
	retain, err4 := web.ParseRetention(soakEnv(t, "RETAIN", "2m"))
	if err := errors.Join(err1, err2, err3, err4); err != nil || clients < 1 || nrep < 1 {
		t.Fatalf("soak settings: %v (clients %d, replicas %d)", err, clients, nrep)
	}

	pg := pgtest.Start(t)
	dsn := pgtest.NewDB(t, pg)
	data := t.TempDir()
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, noisyPage)
	}))
	defer page.Close()
	var reps []*soakReplica
	for i := range nrep {
		reps = append(reps, startSoakReplica(t, fmt.Sprintf("soak-%d", i+1), dsn, data, retain))
	}
	dbSize := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return -1
		}
		defer conn.Close(context.Background())
		var n int64
		if err := conn.QueryRow(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
			return -1
		}
		return n
	}

	const calls = 8
	var cur atomic.Pointer[soakInterval]
	cur.Store(&soakInterval{})
	var mu sync.Mutex // guards the interval's latencies
	// session runs one executor session of client c through the replicas
	// in turn, and records its calls' latencies.
	session := func(c, n int) error {
		e := &env{t: t, base: reps[(c+n)%len(reps)].base}
		code, a := e.createExec(map[string]any{"provider": "anthropic", "start_url": page.URL,
			"display": map[string]any{"width": 1024, "height": 640}})
		if code != http.StatusOK {
			return fmt.Errorf("create: %d %s", code, a.Error)
		}
		for i := range calls {
			e.base = reps[(c+n+i)%len(reps)].base
			input := map[string]any{"action": "screenshot"}
			if i%2 == 1 {
				input = map[string]any{"action": "left_click", "coordinate": []int{300, 200}}
			}
			t0 := time.Now()
			code, ans := e.execPost("/executor/sessions/"+a.ID+"/call?wait=60s",
				anthropictest.ToolUse(fmt.Sprintf("c%dn%di%d", c, n, i), "computer", input))
			d := time.Since(t0)
			if code != http.StatusOK || ans.Error != "" {
				return fmt.Errorf("call %d: %d %s", i, code, ans.Error)
			}
			iv := cur.Load()
			mu.Lock()
			iv.lat = append(iv.lat, d)
			mu.Unlock()
			atomic.AddInt64(&iv.calls, 1)
		}
		resp := e.request("DELETE", "/executor/sessions/"+a.ID, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("delete: %d", resp.StatusCode)
		}
		atomic.AddInt64(&cur.Load().sessions, 1)
		return nil
	}

	// Warm-up: one session per client, then the baseline.
	for c := range clients {
		if err := session(c, 0); err != nil {
			t.Fatalf("warm-up session: %v", err)
		}
	}
	base := soakSettle(t, soakMeasure(t))
	t.Logf("soak: %d clients, %d replicas, %v, --retain %s; baseline %v", clients, nrep, dur, retain, base)
	t.Logf("%8s %6s %5s %4s %8s %8s %8s %8s %6s %5s %4s %9s %9s", "elapsed", "calls", "sess", "err", "p50", "p95",
		"RSS MB", "heap MB", "gorout", "fds", "chr", "data MB", "db MB")

	ctx, stop := context.WithTimeout(t.Context(), dur)
	defer stop()
	var wg sync.WaitGroup
	var failures atomic.Int64
	for c := range clients {
		wg.Go(func() {
			for n := 1; ctx.Err() == nil; n++ {
				if err := session(c, n); err != nil {
					atomic.AddInt64(&cur.Load().errors, 1)
					if failures.Add(1) <= 10 {
						t.Logf("client %d session %d: %v", c, n, err)
					}
				}
			}
		})
	}
	t0 := time.Now()
	tick := time.NewTicker(every)
	var peakData int64
	report := func() {
		iv := cur.Swap(&soakInterval{})
		mu.Lock()
		lat := iv.lat
		mu.Unlock()
		u := soakMeasure(t)
		d := dirBytesOf(data)
		peakData = max(peakData, d)
		t.Logf("%8v %6d %5d %4d %8v %8v %8.1f %8.1f %6d %5d %4d %9.1f %9.1f", time.Since(t0).Round(time.Second),
			iv.calls, iv.sessions, iv.errors, stats.Percentile(lat, 50).Round(time.Millisecond),
			stats.Percentile(lat, 95).Round(time.Millisecond), mb(u.rss), mb(u.heap), u.goroutines, u.fds, u.chromium,
			float64(d)/(1<<20), float64(dbSize())/(1<<20))
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			report()
		}
	}
	tick.Stop()
	wg.Wait()
	report()
	end := soakSettle(t, base)
	t.Logf("after %v: %v; data directory peaked at %.1f MB", time.Since(t0).Round(time.Second), end, float64(peakData)/(1<<20))
	if n := failures.Load(); n > 0 {
		t.Errorf("%d sessions failed", n)
	}
	checkLeftOver(t, base, end)
}

// soakReplica is one in-process replica of the soak.
type soakReplica struct {
	srv  *web.Server
	base string
}

// startSoakReplica starts a replica with the server's own display opener
// (a Chromium per session behind its egress proxy) on loopback.
func startSoakReplica(t *testing.T, id, dsn, data string, retain web.Retention) *soakReplica {
	t.Helper()
	var h atomic.Value
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.Load().(http.Handler).ServeHTTP(w, r)
	}))
	srv, err := web.New(t.Context(), web.Config{DataDir: data, DB: dsn, Token: testToken, Retention: retain,
		Cluster: web.ClusterConfig{Advertise: "http://" + hs.Listener.Addr().String(), ReplicaID: id},
		Logger:  slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		t.Fatalf("web.New(%s): %v", id, err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start(%s): %v", id, err)
	}
	h.Store(srv.Handler())
	hs.Start()
	t.Cleanup(func() {
		hs.Close()
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Close(%s): %v", id, err)
		}
	})
	return &soakReplica{srv: srv, base: hs.URL}
}

// dirBytesOf adds up the regular files under dir.
func dirBytesOf(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
