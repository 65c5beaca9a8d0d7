package web_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/store"
)

// Every event of a stream carries the time it was stored, live and when
// replayed after a restart; the run's turn_stop names its report.
func TestEventsCarryTheirStoredTime(t *testing.T) {
	e := newEnv(t, envOpts{fake: true}, anthropictest.Reply{Content: []json.RawMessage{
		anthropictest.Text("clicking"), click(t, "toolu_1", 10, 20)}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("done")}})
	resp, live := e.stream("PUT", "/session", spec("click", map[string]any{"approvals": map[string]any{"supervise": "none"}}))
	id := resp.Header.Get("X-Session-Id")
	if len(live) < 4 || live[len(live)-1].Type != "turn_stop" {
		t.Fatalf("stream = %q, want the turn to its end", kinds(live))
	}
	if r := live[len(live)-1].field("report"); r != "/session/"+id+"/report/t1" {
		t.Errorf("turn_stop's report = %q, want /session/%s/report/t1", r, id)
	}
	e.restart()
	replay := e.eventsAfter(id, 0, len(live))
	e.stop()
	st, err := store.Open(context.WithoutCancel(t.Context()), filepath.Join(e.data, "spotter.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	stored, err := st.Events(context.WithoutCancel(t.Context()), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(live) {
		t.Fatalf("the store has %d events, the stream had %d", len(stored), len(live))
	}
	for i, want := range stored {
		for name, evs := range map[string][]sseEvent{"live": live, "replayed": replay} {
			var got struct{ Time time.Time }
			if err := json.Unmarshal(evs[i].Data, &got); err != nil || !got.Time.Equal(want.Time) {
				t.Errorf("%s event %d (%s) has time %v (%v), want the stored %v: %s", name, want.Seq, want.Type, got.Time, err, want.Time, evs[i].Data)
			}
		}
	}
}

// eventsAfter reads n events of GET /session/:id/events?after=after.
func (e *env) eventsAfter(id string, after int64, n int) []sseEvent {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/session/%s/events?after=%d", e.base, id, after), nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	r := newSSEReader(resp.Body)
	var out []sseEvent
	for len(out) < n {
		ev, err := r.next()
		if err != nil {
			e.t.Fatalf("after %d of %d events: %v", len(out), n, err)
		}
		out = append(out, ev)
	}
	return out
}

// The live view starts with the session's latest screenshot and then
// shows each new one (a display without a live view of its own, here);
// it is the session's only, for a scoped token.
func TestLiveView(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	id := e.execSession("anthropic", map[string]any{"supervise": "none"})
	other := e.execSession("anthropic", map[string]any{"supervise": "none"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/session/"+id+"/live", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET live = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	r := newSSEReader(resp.Body)
	frame := func() (time.Time, []byte) {
		t.Helper()
		ev, err := r.next()
		if err != nil || ev.Type != "frame" {
			t.Fatalf("live event %q, %v; want a frame", ev.Type, err)
		}
		var f struct {
			Time          time.Time
			MimeType      string
			Width, Height int
			Data          string
		}
		if err := json.Unmarshal(ev.Data, &f); err != nil {
			t.Fatal(err)
		}
		data, err := base64.StdEncoding.DecodeString(f.Data)
		if err != nil || f.MimeType != "image/png" || f.Width != 1000 || f.Height != 600 || len(data) == 0 {
			t.Fatalf("frame = %s %dx%d, %d bytes (%v); want a 1000x600 PNG", f.MimeType, f.Width, f.Height, len(data), err)
		}
		return f.Time, data
	}
	first, _ := frame()
	if code, a := e.execPost("/executor/sessions/"+id+"/call",
		json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`)); code != 200 {
		t.Fatalf("call = %d %+v", code, a)
	}
	if next, _ := frame(); !next.After(first) {
		t.Errorf("the frame after a call was drawn at %v, not after the first (%v)", next, first)
	}

	tok := e.scopedToken(other)
	for _, path := range []string{"/session/" + id + "/live", "/session/" + id + "/report/t1"} {
		req, _ := http.NewRequestWithContext(ctx, "GET", e.base+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("GET %s with another session's token = %d, want 403", path, resp.StatusCode)
		}
	}
}

// A run's report is served under the report's own policy; a run the
// session does not have is 404 with the reason.
func TestSessionReport(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	id := e.execSession("anthropic", map[string]any{"supervise": "none"})
	if code, a := e.execPost("/executor/sessions/"+id+"/call",
		json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`)); code != 200 {
		t.Fatalf("call = %d %+v", code, a)
	}
	resp := e.request("GET", "/session/"+id+"/report/t1", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		resp.Header.Get("Content-Security-Policy") != trace.ReportCSP() || !strings.Contains(string(b), `id="step-1"`) {
		t.Errorf("GET report/t1 = %d %s, CSP %q, %d bytes; want the run's report under its policy",
			resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Content-Security-Policy"), len(b))
	}
	for _, run := range []string{"t2", "x", "..", "t1%2F..%2F..", "t0"} {
		resp := e.request("GET", "/session/"+id+"/report/"+run, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(b), e.data) {
			t.Errorf("GET report/%s = %d %s, want 404 without the server's paths", run, resp.StatusCode, b)
		}
	}
}

// GET /auth tells anyone whether their request is logged in, and is never
// an error.
func TestAuthState(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	get := func(set func(*http.Request)) bool {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/auth", nil)
		set(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out struct{ Authenticated bool }
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&out) != nil {
			t.Fatalf("GET /auth = %d", resp.StatusCode)
		}
		return out.Authenticated
	}
	login, err := http.PostForm(e.base+"/login", map[string][]string{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	login.Body.Close()
	cookies := login.Cookies()
	for _, tt := range []struct {
		name string
		set  func(*http.Request)
		want bool
	}{
		{"nothing", func(*http.Request) {}, false},
		{"a wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") }, false},
		{"a wrong cookie", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "spotter_auth", Value: "nope"}) }, false},
		{"the token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testToken) }, true},
		{"the login cookie", func(r *http.Request) {
			for _, c := range cookies {
				r.AddCookie(c)
			}
		}, true},
	} {
		if got := get(tt.set); got != tt.want {
			t.Errorf("GET /auth with %s: authenticated %v, want %v", tt.name, got, tt.want)
		}
	}
}
