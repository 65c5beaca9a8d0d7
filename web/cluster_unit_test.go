package web_test

import (
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/web"
)

// inProcessReplica is a web.Server with ClusterConfig on an httptest
// listener, in this process (so that -race sees the cluster code).
type inProcessReplica struct {
	srv  *web.Server
	http *httptest.Server
	once sync.Once
}

func (r *inProcessReplica) close() {
	r.once.Do(func() {
		r.http.Close()
		_ = r.srv.Close(context.Background())
	})
}

func newInProcessReplica(t *testing.T, id, db string) *inProcessReplica {
	t.Helper()
	return newInProcessReplicaWith(t, id, db, t.TempDir(), web.Retention{}, 0)
}

// newInProcessReplicaWith is newInProcessReplica with a data directory,
// a retention and a lease (0: 1.5s).
func newInProcessReplicaWith(t *testing.T, id, db, data string, retain web.Retention, lease time.Duration) *inProcessReplica {
	t.Helper()
	return newInProcessReplicaHooked(t, id, db, data, retain, lease, nil)
}

// newInProcessReplicaHooked is newInProcessReplicaWith that calls
// beforeStart (when not nil) between web.New and Start.
func newInProcessReplicaHooked(t *testing.T, id, db, data string, retain web.Retention, lease time.Duration, beforeStart func(*web.Server)) *inProcessReplica {
	t.Helper()
	var h http.Handler
	var mu sync.Mutex
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hh := h
		mu.Unlock()
		hh.ServeHTTP(w, r)
	}))
	srv, err := web.New(t.Context(), web.Config{DataDir: data, DB: db, Token: testToken, Retention: retain,
		Cluster: web.ClusterConfig{Advertise: "http://" + hs.Listener.Addr().String(), ReplicaID: id, LeaseTTL: cmp.Or(lease, 1500*time.Millisecond)},
		NewModel: func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return endModel{}, nil // fuzz_test.go's
		},
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		}})
	if err != nil {
		t.Fatalf("web.New(%s): %v", id, err)
	}
	if beforeStart != nil {
		beforeStart(srv)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	mu.Lock()
	h = srv.Handler()
	mu.Unlock()
	hs.Start()
	r := &inProcessReplica{srv: srv, http: hs}
	t.Cleanup(r.close)
	return r
}

// get GETs path on base with the token and returns the status and the
// replica that answered.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get(web.HeaderReplica)
}

// Two replicas in one process, sharing a store: a session created on one
// is answered through the other (forwarded), and when its replica closes
// (hands its sessions over), the other adopts it within a round.
func TestClusterInProcess(t *testing.T) {
	db := filepath.Join(t.TempDir(), "shared.db")
	a := newInProcessReplica(t, "a", db)
	b := newInProcessReplica(t, "b", db)

	e := &env{t: t, base: a.http.URL}
	resp, evs := e.stream("PUT", "/session", spec("Say done", nil))
	id := resp.Header.Get("X-Session-Id")
	owner := resp.Header.Get(web.HeaderReplica)
	if k := kinds(evs); k[len(k)-1] != "turn_stop:end_turn" {
		t.Fatalf("PUT /session stream = %v", k)
	}
	other := b
	if owner == "b" {
		other = a
	} else if owner != "a" {
		t.Fatalf("PUT /session answered by %q, want a or b", owner)
	}
	if code, by := get(t, other.http.URL, "/session/"+id); code != http.StatusOK || by != owner {
		t.Errorf("GET /session/%s through the other replica = %d from %q, want 200 from its owner %s", id, code, by, owner)
	}
	if code, _ := get(t, other.http.URL, "/session/nope"); code != http.StatusNotFound {
		t.Errorf("GET /session/nope = %d, want 404", code)
	}
	if code, by := get(t, other.http.URL, "/sessions"); code != http.StatusOK || by != other.srv.Replica() {
		t.Errorf("GET /sessions = %d from %q, want 200 from the replica asked", code, by)
	}

	// The owner closes: its sessions are released and adopted.
	closed := time.Now()
	if owner == "a" {
		a.close()
	} else {
		b.close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, by := get(t, other.http.URL, "/session/"+id)
		if code == http.StatusOK && by == other.srv.Replica() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /session/%s after its owner closed = %d from %q, want 200 from %s within 10s", id, code, by, other.srv.Replica())
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("adopted %v after its owner closed", time.Since(closed).Round(time.Millisecond))
	// It goes on where it was: a new turn runs on the adopter.
	e.base = other.http.URL
	_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{{"role": "user", "content": "Again"}}})
	if k := kinds(evs); k[len(k)-1] != "turn_stop:end_turn" {
		t.Errorf("POST /session/%s on the adopter = %v, want a turn to end_turn", id, k)
	}
	checkSeq(t, e, id)
}

// lostAnswerStore commits every claim of a session and then answers as
// if its deadline had passed during the commit.
type lostAnswerStore struct {
	store.Store
	mu   sync.Mutex
	lost int
}

func (s *lostAnswerStore) ClaimSession(ctx context.Context, session, replica string, epoch int64, at time.Time) (store.Owner, error) {
	if _, err := s.Store.ClaimSession(ctx, session, replica, epoch, at); err != nil {
		return store.Owner{}, err
	}
	s.mu.Lock()
	s.lost++
	s.mu.Unlock()
	return store.Owner{}, context.DeadlineExceeded
}

// A claim that took effect though its answer was lost (a deadline passed
// during the commit) still ends in an adopted session: the store says
// the claimant owns it, so no other replica ever will.
func TestClaimAnswerLost(t *testing.T) {
	db := filepath.Join(t.TempDir(), "shared.db")
	a := newInProcessReplica(t, "a", db)
	lost := &lostAnswerStore{}
	b := newInProcessReplicaHooked(t, "b", db, t.TempDir(), web.Retention{}, 0, func(s *web.Server) {
		web.WrapClusterStore(s, func(st store.Store) store.Store { lost.Store = st; return lost })
	})
	e := &env{t: t, base: a.http.URL}
	resp, _ := e.stream("PUT", "/session", spec("Say done", nil))
	id := resp.Header.Get("X-Session-Id")
	if by := resp.Header.Get(web.HeaderReplica); by != "a" {
		t.Fatalf("PUT /session on a, both empty, placed on %q: want a (a tie stays where it was asked)", by)
	}
	a.close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, by := get(t, b.http.URL, "/session/"+id)
		if code == http.StatusOK && by == "b" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /session/%s after a closed and b's claim lost its answer = %d from %q, want 200 from b", id, code, by)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lost.mu.Lock()
	defer lost.mu.Unlock()
	if lost.lost == 0 {
		t.Error("no claim lost its answer: the test did not test it")
	}
}

// startReplicaErr starts a replica like newInProcessReplica, and returns
// Start's error (the replica is closed when the test ends, or at once if
// Start failed).
func startReplicaErr(t *testing.T, id, db string, lease time.Duration) error {
	t.Helper()
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), DB: db, Token: testToken,
		Cluster: web.ClusterConfig{Advertise: "http://127.0.0.1:1", ReplicaID: id, LeaseTTL: lease},
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		}})
	if err != nil {
		t.Fatalf("web.New(%s): %v", id, err)
	}
	err = srv.Start(t.Context())
	if err != nil {
		_ = srv.Close(context.Background())
	} else {
		t.Cleanup(func() { _ = srv.Close(context.Background()) })
	}
	return err
}

// A replica id that a live replica holds is refused at start, with a
// reason that names the holder; the holder's sessions stay its own. An
// id whose holder died (its lease no longer renewed) is taken over once
// the lease lapses.
func TestReplicaIDHeld(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "shared.db")
	a := newInProcessReplica(t, "same", db)
	e := &env{t: t, base: a.http.URL}
	resp, _ := e.stream("PUT", "/session", spec("Say done", nil))
	id := resp.Header.Get("X-Session-Id")

	t0 := time.Now()
	err := startReplicaErr(t, "same", db, 1500*time.Millisecond)
	if !errors.Is(err, web.ErrReplicaIDHeld) || !strings.Contains(err.Error(), a.http.URL) ||
		!strings.Contains(err.Error(), "--replica-id") {
		t.Fatalf("Start of a second replica with a live replica's id = %v, want ErrReplicaIDHeld naming %s and --replica-id", err, a.http.URL)
	}
	t.Logf("refused after %v: %v", time.Since(t0).Round(time.Millisecond), err)
	if code, by := get(t, a.http.URL, "/session/"+id); code != http.StatusOK || by != "same" {
		t.Errorf("GET /session/%s on the first replica after the refusal = %d from %q, want 200 from it", id, code, by)
	}
	// The first one stops renewing without handing over (as if killed):
	// its row stays, its lease runs out, and the id is anyone's.
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if _, err := st.Heartbeat(t.Context(), store.Replica{ID: "gone", Addr: "http://127.0.0.1:2", Incarnation: "dead",
		Started: now, Renewed: now, Expires: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	if err := startReplicaErr(t, "gone", db, 1500*time.Millisecond); err != nil {
		t.Fatalf("Start with the id of a replica that stopped renewing = %v, want it taken over", err)
	}
	if time.Now().Before(now.Add(time.Second)) {
		t.Errorf("took the id over before its holder's lease lapsed")
	}
	t.Logf("took a dead replica's id over after %v", time.Since(t0).Round(time.Millisecond))
}
