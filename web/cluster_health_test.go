package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/web"
)

// gateModel ends its turn once released; asked says it was asked.
type gateModel struct {
	asked   chan struct{}
	release chan struct{}
}

func (m *gateModel) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	select {
	case m.asked <- struct{}{}:
	default:
	}
	select {
	case <-m.release:
		return harness.Turn{Text: "Done.", Stop: harness.StopEndTurn}, nil
	case <-ctx.Done():
		return harness.Turn{}, context.Cause(ctx)
	}
}

// pingStore is a store whose Ping fails while down is set.
type pingStore struct {
	store.Store
	down atomic.Bool
}

func (p *pingStore) Ping(ctx context.Context) error {
	if p.down.Load() {
		return errors.New("connection refused by /var/run/postgresql")
	}
	return p.Store.Ping(ctx)
}

type probeAnswer struct {
	Ready  bool
	Checks map[string]any
}

// probe GETs a probe path without credentials.
func probe(t *testing.T, base, path string) (int, probeAnswer, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var a probeAnswer
	_ = json.Unmarshal(b, &a)
	return resp.StatusCode, a, string(b)
}

// waitProbe polls a probe path until it answers code, for at most 20s.
func waitProbe(t *testing.T, base, path string, code int) probeAnswer {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, a, body := probe(t, base, path)
		if got == code {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s = %d %s, want %d within 20s", path, got, body, code)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// /readyz is 503 until a browser was started, and whenever the database
// does not answer or a browser cannot start; it names the failed check
// without the server's paths, and needs no credentials (nor does
// /healthz).
func TestReadyz(t *testing.T) {
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ps := &pingStore{Store: st}
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), Token: testToken, Store: ps,
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		_ = srv.Close(context.Background())
	}()

	if code, _, body := probe(t, hs.URL, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz = %d %s, want 200", code, body)
	}
	a := waitProbe(t, hs.URL, "/readyz", http.StatusOK)
	if !a.Ready || a.Checks["database"] != "ok" || a.Checks["browser"] != "ok" {
		t.Errorf("GET /readyz = %+v, want ready, database and browser ok", a)
	}

	ps.down.Store(true)
	code, a, body := probe(t, hs.URL, "/readyz")
	if code != http.StatusServiceUnavailable || a.Ready || a.Checks["database"] != "unreachable" || strings.Contains(body, "/var/run") {
		t.Errorf("GET /readyz with the database down = %d %s, want 503 naming the database, no path", code, body)
	}
	ps.down.Store(false)
	if code, _, body := probe(t, hs.URL, "/readyz"); code != http.StatusOK {
		t.Errorf("GET /readyz with the database back = %d %s, want 200", code, body)
	}
}

// A browser that cannot start makes the server unready, in words that
// name no path.
func TestReadyzBrowser(t *testing.T) {
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), Token: testToken,
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return nil, errors.New("fork/exec /usr/lib/chromium/chromium: no such file")
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		_ = srv.Close(context.Background())
	}()
	a := waitProbe(t, hs.URL, "/readyz", http.StatusServiceUnavailable)
	deadline := time.Now().Add(20 * time.Second)
	for a.Checks["browser"] == "not checked yet" && time.Now().Before(deadline) {
		_, a, _ = probe(t, hs.URL, "/readyz")
	}
	_, _, body := probe(t, hs.URL, "/readyz")
	if a.Ready || a.Checks["browser"] != "cannot start a browser" || strings.Contains(body, "chromium") {
		t.Errorf("GET /readyz with no browser = %s, want unready, the browser check failed, no path", body)
	}
}

// Drain makes the server unready and refuses new sessions with 503 and
// Retry-After, while the session in a turn goes on and its turn ends; it
// returns once no turn runs.
func TestDrain(t *testing.T) {
	model := &gateModel{asked: make(chan struct{}, 1), release: make(chan struct{})}
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), Token: testToken,
		NewModel: func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return model, nil
		},
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		_ = srv.Close(context.Background())
	}()
	e := &env{t: t, base: hs.URL}
	waitProbe(t, hs.URL, "/readyz", http.StatusOK)

	streamed := make(chan []sseEvent, 1)
	go func() {
		resp := e.request("PUT", "/session", spec("Wait for the drain", nil))
		defer resp.Body.Close()
		streamed <- readSSE(t, resp.Body)
	}()
	<-model.asked // the turn runs
	drained := make(chan error, 1)
	go func() { drained <- srv.Drain(t.Context()) }()

	a := waitProbe(t, hs.URL, "/readyz", http.StatusServiceUnavailable)
	if a.Checks["draining"] != true {
		t.Errorf("GET /readyz while draining = %+v, want draining named", a)
	}
	for _, r := range []struct{ method, path string }{{"PUT", "/session"}, {"POST", "/executor/sessions"}} {
		resp := e.request(r.method, r.path, spec("One more", map[string]any{"provider": "anthropic"}))
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "draining") {
			t.Errorf("%s %s while draining = %d (Retry-After %q) %s, want 503 with Retry-After", r.method, r.path,
				resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	var list struct{ Sessions []struct{ ID, Status string } }
	e.getJSON("/sessions", &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Status != "running" {
		t.Fatalf("sessions while draining = %+v, want the one running", list.Sessions)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain() = %v while a turn runs, want it to wait", err)
	default:
	}
	close(model.release)
	evs := <-streamed
	if got := kinds(evs); got[len(got)-1] != "turn_stop:end_turn" {
		t.Errorf("the running session's stream while draining = %v, want it to end its turn", got)
	}
	select {
	case err := <-drained:
		if err != nil {
			t.Errorf("Drain() = %v, want nil once no turn runs", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Drain() did not return within 20s of the last turn's end")
	}
}
