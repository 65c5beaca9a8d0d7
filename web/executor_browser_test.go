package web_test

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// pages are the pages the executor's browser tests serve. Each reports
// what happened to it with report(), which the test server collects.
var pages = map[string]string{
	// target.html, at 1920x1080: a 200x100 target at CSS (1500, 800); a
	// click anywhere else is a miss.
	"target.html": `<!doctype html><meta charset="utf-8"><title>target</title>
<script>function report(v) { return fetch('/report?v=' + encodeURIComponent(v)); }</script>
<style>html, body {margin: 0; height: 100%} #t {position: absolute; left: 1500px; top: 800px; width: 200px; height: 100px; background: #c00}</style>
<body onclick="report('miss:' + event.clientX + ',' + event.clientY)">
<div id="t" onclick="event.stopPropagation(); report('hit')"></div>`,
	// page.html, at 1280x800: an alert button centred at (160, 70), a link
	// opening a new tab at (160, 170), a file input at (190, 270).
	"page.html": `<!doctype html><meta charset="utf-8"><title>opener</title>
<script>function report(v) { return fetch('/report?v=' + encodeURIComponent(v)); }</script>
<style>body {margin: 0} .c {position: absolute; left: 40px; width: 240px; height: 60px; display: block; font: 20px sans-serif}</style>
<button class="c" style="top: 40px" onclick="alert('Saved!'); report('alert-closed')">alert</button>
<a class="c" style="top: 140px; background: #ddd" href="newtab.html" target="_blank">open a new tab</a>
<input class="c" style="top: 240px; width: 300px" type="file" onchange="const f = this.files[0]; f.text().then(t => report('uploaded:' + f.name + ':' + t.trim()))">`,
	"newtab.html": `<!doctype html><meta charset="utf-8"><title>the new tab</title>
<script>fetch('/report?v=newtab-loaded');</script>
<body style="background: #0a0"></body>`,
}

// pageServer serves pages on loopback and collects their reports.
type pageServer struct {
	*httptest.Server
	reports chan string
}

func newPageServer(t *testing.T) *pageServer {
	p := &pageServer{reports: make(chan string, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /report", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		select {
		case p.reports <- r.URL.Query().Get("v"):
		default:
			t.Errorf("report %q dropped: too many unread reports", r.URL.Query().Get("v"))
		}
	})
	mux.HandleFunc("GET /{page}", func(w http.ResponseWriter, r *http.Request) {
		html, ok := pages[r.PathValue("page")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprint(w, html)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

// await waits for the page to report want, failing on any other report
// or when nothing comes within 20s.
func (p *pageServer) await(t *testing.T, want string) {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	select {
	case got := <-p.reports:
		if got != want {
			t.Fatalf("the page reported %q, want %q", got, want)
		}
	case <-timeout.C:
		t.Fatalf("the page never reported %q", want)
	}
}

// policy allows every kind, navigation to the page server, and uploads of
// files only.
func (p *pageServer) policy(t *testing.T, files ...string) actions.Policy {
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	pol := actions.Standard()
	pol.Hosts, pol.Files = []string{u.Host}, files
	return pol
}

// execCall posts a call and returns the answer, failing unless it is done.
func (e *env) execCall(id, call string) execAnswerFrame {
	e.t.Helper()
	code, out := e.postRaw("/executor/sessions/"+id+"/call?wait=60s", call)
	var a execAnswerFrame
	if err := json.Unmarshal(out, &a); err != nil || code != http.StatusOK || a.Status != "done" {
		e.t.Fatalf("call %s = %d %.500s, want 200 done", call, code, out)
	}
	return a
}

type execAnswerFrame struct {
	execAnswer
	Frame screen.Frame `json:"frame"`
}

// TestExecutorImageSizeIntegration: on a real Chromium at 1920x1080, an
// Anthropic executor session sends 1456x819 screenshots (what Anthropic's
// API lets through unresized), and a click Claude would send in that
// space lands on the element it saw there.
func TestExecutorImageSizeIntegration(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs this on a real Chromium")
	}
	pg := newPageServer(t)
	e := newEnv(t, envOpts{})
	code, s := e.createExec(map[string]any{"provider": "anthropic", "start_url": pg.URL + "/target.html",
		"display": map[string]any{"width": 1920, "height": 1080}, "approvals": map[string]any{"supervise": "none"}})
	if code != http.StatusOK {
		t.Fatalf("create = %d %+v", code, s)
	}
	if want := (screen.Size{W: 1456, H: 819}); s.Image != want || s.Frame.Sent != want {
		t.Fatalf("create answer: image %v, frame.sent %v, want %v", s.Image, s.Frame.Sent, want)
	}
	// The target's centre, CSS (1600, 850), in the 1456x819 image.
	x, y := int(math.Round(1600*1456/1920.0)), int(math.Round(850*819/1080.0))
	a := e.execCall(s.ID, fmt.Sprintf(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[%d,%d]}}`, x, y))
	if a.Error != "" {
		t.Fatalf("click at (%d, %d): %s", x, y, a.Error)
	}
	pg.await(t, "hit")
	// A point of the display's CSS size is outside the image the model saw.
	a = e.execCall(s.ID, `{"type":"tool_use","id":"toolu_2","name":"computer","input":{"action":"left_click","coordinate":[1600,850]}}`)
	if !strings.Contains(a.Error, "outside the 1456x819 display") {
		t.Errorf("click at CSS (1600, 850) = error %q, want it outside the image", a.Error)
	}
}

// browserClient writes one provider's calls.
type browserClient struct {
	provider string
	// click is a click at (x, y) in the pixels of the 1280x800 screenshot.
	click func(id string, x, y int) string
	// browser is a browser action with its arguments.
	browser func(id, action string, args map[string]any) string
}

var browserClients = []browserClient{
	{"anthropic",
		func(id string, x, y int) string {
			return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"computer","input":{"action":"left_click","coordinate":[%d,%d]}}`, id, x, y)
		},
		func(id, action string, args map[string]any) string {
			in := map[string]any{"action": action}
			for k, v := range args {
				in[k] = v
			}
			return mustJSON(map[string]any{"type": "tool_use", "id": id, "name": "browser", "input": in})
		}},
	{"gemini",
		func(id string, x, y int) string { // the 0..999 grid
			return fmt.Sprintf(`{"functionCall":{"id":%q,"name":"click_at","args":{"x":%d,"y":%d}}}`, id, x*1000/1280, y*1000/800)
		},
		func(id, action string, args map[string]any) string {
			fc := map[string]any{"id": id, "name": action}
			if args != nil {
				fc["args"] = args
			}
			return mustJSON(map[string]any{"functionCall": fc})
		}},
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestExecutorBrowserActions: Anthropic-format and Gemini-format executor
// clients, on a real Chromium, answer a page's alert() (which otherwise
// blocks every other action), list and switch tabs, and answer a file
// chooser with a file the session's policy makes available; a file
// outside the policy is refused.
func TestExecutorBrowserActions(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs this on a real Chromium")
	}
	allowed := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(allowed, []byte("quarterly notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{})
	for _, bc := range browserClients {
		t.Run(bc.provider, func(t *testing.T) {
			pg := newPageServer(t)
			code, s := e.createExec(map[string]any{"provider": bc.provider, "start_url": pg.URL + "/page.html",
				"display": map[string]any{"width": 1280, "height": 800}, "policy": pg.policy(t, allowed),
				"approvals": map[string]any{"supervise": "none"}})
			if code != http.StatusOK {
				t.Fatalf("create = %d %+v", code, s)
			}
			t.Cleanup(func() { e.request("DELETE", "/executor/sessions/"+s.ID, nil).Body.Close() })
			n := 0
			call := func(raw func(id string) string) execAnswerFrame {
				t.Helper()
				n++
				return e.execCall(s.ID, raw(fmt.Sprintf("c%d", n)))
			}
			click := func(x, y int) execAnswerFrame {
				return call(func(id string) string { return bc.click(id, x, y) })
			}
			browser := func(action string, args map[string]any) execAnswerFrame {
				return call(func(id string) string { return bc.browser(id, action, args) })
			}
			result := func(a execAnswerFrame) string { return string(a.Result) }

			// An alert blocks the page until the client answers it.
			if a := click(160, 70); a.Error != "" || !strings.Contains(result(a), `alert dialog (\"Saved!\") is open`) {
				t.Fatalf("click on the alert button: error %q, result %.500s, want the dialog's note", a.Error, a.Result)
			}
			if a := click(600, 600); !strings.Contains(a.Error, "answer it with the dialog action first") {
				t.Errorf("click while the alert is open: error %q, want it refused", a.Error)
			}
			if a := browser("dialog", map[string]any{"accept": true}); a.Error != "" {
				t.Fatalf("dialog accept: %s", a.Error)
			}
			pg.await(t, "alert-closed")

			// A link opens a new tab; list the tabs and go back to the first.
			if a := click(160, 170); a.Error != "" || !strings.Contains(result(a), "A new tab opened") {
				t.Fatalf("click on the link: error %q, result %.500s, want a new tab", a.Error, a.Result)
			}
			pg.await(t, "newtab-loaded")
			if a := browser("list_tabs", nil); a.Error != "" || !strings.Contains(result(a), "[0] opener") ||
				!strings.Contains(result(a), "[1] the new tab") {
				t.Errorf("list_tabs: error %q, result %s, want both tabs", a.Error, regexp.MustCompile(`"data":"[^"]*"`).ReplaceAll(a.Result, []byte(`"data":"..."`)))
			}
			if a := browser("switch_tab", map[string]any{"tab": 0}); a.Error != "" || !strings.HasSuffix(a.Frame.URL, "/page.html") {
				t.Fatalf("switch_tab 0: error %q, screenshot of %s, want the opener", a.Error, a.Frame.URL)
			}

			// A file chooser takes only the policy's files.
			if a := click(190, 270); a.Error != "" || !strings.Contains(result(a), "A file chooser is open") {
				t.Fatalf("click on the file input: error %q, result %.500s, want the chooser", a.Error, a.Result)
			}
			if a := browser("upload", map[string]any{"files": []string{"/etc/passwd"}}); !strings.Contains(a.Error, `upload of "/etc/passwd" is not allowed`) {
				t.Errorf("upload /etc/passwd: error %q, want it refused", a.Error)
			}
			if a := browser("upload", map[string]any{"files": []string{allowed}}); a.Error != "" {
				t.Fatalf("upload %s: %s", allowed, a.Error)
			}
			pg.await(t, "uploaded:notes.txt:quarterly notes")
		})
	}
}
