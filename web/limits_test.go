package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
)

// refusal checks a refused answer: its status, a JSON reason that says
// what, and Retry-After when it asks for one.
func refusal(t *testing.T, what string, resp *http.Response, status int, reason string, retry bool) {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var body struct{ Error string }
	if resp.StatusCode != status || json.Unmarshal(b, &body) != nil || !strings.Contains(body.Error, reason) {
		t.Errorf("%s = %d %s, want %d with a JSON reason saying %q", what, resp.StatusCode, b, status, reason)
	}
	if got := resp.Header.Get("Retry-After"); retry && got == "" {
		t.Errorf("%s has no Retry-After", what)
	}
}

// A flood of executor sessions past the server's bound (the default, from
// the machine's memory): the sessions past it are refused with 503, a JSON
// reason and Retry-After, leave nothing stored, and a deleted session
// makes room for one more. The displays are in memory: the bound is on
// displays open, whatever they are (internal/session's TestMaxSessionsChromium
// floods real browsers).
func TestSessionFlood(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	max := session.DefaultMaxSessions()
	n := max + 4
	codes := make([]int, n)
	ids := make([]string, n)
	var wg sync.WaitGroup
	work := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range work {
				resp := e.request("POST", "/executor/sessions", map[string]any{"provider": "anthropic"})
				codes[i] = resp.StatusCode
				if resp.StatusCode == http.StatusOK {
					var ex struct{ ID string }
					_ = json.NewDecoder(resp.Body).Decode(&ex)
					ids[i] = ex.ID
					resp.Body.Close()
					continue
				}
				refusal(t, fmt.Sprintf("session %d of %d", i+1, n), resp, http.StatusServiceUnavailable, "too many sessions", true)
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	ok, refused := 0, 0
	var some string
	for i, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
			some = ids[i]
		case http.StatusServiceUnavailable:
			refused++
		}
	}
	if ok != max || refused != n-max {
		t.Fatalf("%d sessions posted at once: %d created, %d refused; want %d and %d", n, ok, refused, max, n-max)
	}
	var list struct{ Sessions []struct{ ID string } }
	e.getJSON("/sessions", &list)
	if len(list.Sessions) != max {
		t.Errorf("sessions stored = %d, want %d", len(list.Sessions), max)
	}
	dirs, _ := os.ReadDir(filepath.Join(e.data, "sessions"))
	if len(dirs) != max {
		t.Errorf("session directories = %d, want %d", len(dirs), max)
	}
	resp := e.request("DELETE", "/executor/sessions/"+some, nil)
	resp.Body.Close()
	postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic"}, http.StatusOK, nil)
	resp = e.request("POST", "/executor/sessions", map[string]any{"provider": "anthropic"})
	refusal(t, "a session past the bound again", resp, http.StatusServiceUnavailable, "too many sessions", true)
}

// An executor session's bounds over HTTP: calls queued past
// MaxQueuedCalls are 429 with Retry-After; a call older than the last
// MaxRetainedCalls is 410 with a reason, asked for or posted again; after
// DELETE every result is 410.
func TestExecutorCallBounds(t *testing.T) {
	e := newEnv(t, envOpts{})
	var ex struct{ ID string }
	postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "display": map[string]any{"width": 1024, "height": 640}},
		http.StatusOK, &ex)
	shot := func(id string) json.RawMessage {
		return anthropictest.ToolUse(id, "computer", map[string]any{"action": "screenshot"})
	}
	call := "/executor/sessions/" + ex.ID + "/call"
	for i := range session.MaxRetainedCalls + 2 {
		postJSON(t, e, call+"?wait=60s", shot(fmt.Sprintf("c%d", i)), http.StatusOK, nil)
	}
	refusal(t, "GET an old call", e.request("GET", "/executor/sessions/"+ex.ID+"/calls/c0", nil), http.StatusGone,
		"no longer kept", false)
	refusal(t, "an old call posted again", e.request("POST", call, shot("c1")), http.StatusGone, "no longer kept", false)
	last := fmt.Sprintf("c%d", session.MaxRetainedCalls+1)
	postJSON(t, e, call+"?wait=0s", shot(last), http.StatusOK, nil) // a retry of a kept one

	// A click that waits for a human holds the loop; calls queue behind it.
	postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "approvals": map[string]any{"supervise": "all"}},
		http.StatusOK, &ex)
	call = "/executor/sessions/" + ex.ID + "/call"
	postJSON(t, e, call+"?wait=0s", anthropictest.ToolUse("held", "computer",
		map[string]any{"action": "left_click", "coordinate": []int{10, 10}}), http.StatusAccepted, nil)
	follow(t, e, ex.ID, func(ev sseEvent) bool { return ev.Type == "permission_request" })
	for i := range session.MaxQueuedCalls {
		postJSON(t, e, call+"?wait=0s", shot(fmt.Sprintf("q%d", i)), http.StatusAccepted, nil)
	}
	refusal(t, "a call past the queue", e.request("POST", call+"?wait=0s", shot("one-too-many")), http.StatusTooManyRequests,
		"too many calls", true)
	resp := e.request("DELETE", "/executor/sessions/"+ex.ID, nil)
	resp.Body.Close()
	refusal(t, "GET a call of a deleted session", e.request("GET", "/executor/sessions/"+ex.ID+"/calls/held", nil),
		http.StatusGone, "let go", false)
	refusal(t, "a call to a deleted session", e.request("POST", call, shot("after")), http.StatusConflict, "stopped", false)
}

// Calls carrying a megabyte of fields the provider's format does not have
// (or long values in its own) leave the database the size it would be
// without them: 50 such calls added 143 MB before.
func TestJunkCallsStayOutOfTheDatabase(t *testing.T) {
	e := newEnv(t, envOpts{})
	var ex struct{ ID string }
	postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "display": map[string]any{"width": 1024, "height": 640}},
		http.StatusOK, &ex)
	// The database's size once the server stopped (SQLite then moves its
	// write-ahead log into the file); the session goes on after the
	// restart.
	size := func() int64 {
		e.stop()
		defer e.start()
		fi, err := os.Stat(filepath.Join(e.data, "spotter.db"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	call := func(id, junk string) json.RawMessage {
		input := map[string]any{"action": "screenshot"}
		b, _ := json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": "computer", "input": input})
		if junk == "" {
			return b
		}
		input["junk"] = junk
		b, _ = json.Marshal(map[string]any{"type": "tool_use", "id": id, "name": "computer", "input": input, "extra": junk})
		return b
	}
	for i := range 10 {
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", call(fmt.Sprintf("plain%d", i), ""), http.StatusOK, nil)
	}
	plain := size()
	junk := strings.Repeat("J", 480<<10) // twice in a call: just under the 1 MiB body limit
	for i := range 20 {
		postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s", call(fmt.Sprintf("junk%d", i), junk), http.StatusOK, nil)
	}
	grew := size() - plain
	t.Logf("database after 10 plain calls %d KB; 20 calls with %d KB of junk each added %d KB", plain>>10, 2*len(junk)>>10, grew>>10)
	if grew > 1<<20 {
		t.Errorf("20 calls with junk grew the database by %.1f MB, want under 1 MB", float64(grew)/(1<<20))
	}
	var h struct {
		ToolCalls []struct{ Input json.RawMessage }
	}
	e.getJSON("/session/"+ex.ID, &h)
	for _, c := range h.ToolCalls {
		if strings.Contains(string(c.Input), "JJJJ") {
			t.Fatalf("a stored call holds the junk: %.200s", c.Input)
		}
	}
}

// web.Config.MaxSessions (spotter serve --max-sessions) is the bound the
// server keeps.
func TestConfiguredMaxSessions(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	e.stop()
	e.cfg.MaxSessions = 2
	e.start()
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusServiceUnavailable} {
		resp := e.request("POST", "/executor/sessions", map[string]any{"provider": "anthropic"})
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("session %d = %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}
