package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
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
	var h http.Handler
	var mu sync.Mutex
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hh := h
		mu.Unlock()
		hh.ServeHTTP(w, r)
	}))
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), DB: db, Token: testToken,
		Cluster: web.ClusterConfig{Advertise: "http://" + hs.Listener.Addr().String(), ReplicaID: id, LeaseTTL: 1500 * time.Millisecond},
		NewModel: func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return endModel{}, nil // fuzz_test.go's
		},
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		}})
	if err != nil {
		t.Fatalf("web.New(%s): %v", id, err)
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
