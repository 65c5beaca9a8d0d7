package web_test

// The secret matrix (issue 14): a password typed into a real password
// field, through every door of `spotter serve` (an agent session, an
// executor session, an MCP session), with every way its approval can end
// (approved, edited to another secret, edited keeping the text, denied,
// expired, the server stopped while it was pending, no supervision), in
// two patterns (a click on the
// field and the typing in one batch; the typing alone, into the field a
// call before focused). Every output is searched for the password: the
// trace directories and their reports, every file of the data directory
// (spotter.db and its -wal read as bytes), a SELECT of every column of
// every table, the session's event stream as the client received it, GET
// /session/:id, /sessions, /approvals and /audit, what the executor and
// MCP clients got back, the panel as real Chromium renders it, the
// server's debug logs, and what the model was sent. The page's own server
// tells whether the typing happened.
//
// The panel is rendered in a Spotter display (screen/cdp), not with
// chromedp, which only screen/cdp and internal/e2e import.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", to dump spotter.db

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/fieldsite"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/web"
)

// smLoginPage is the page every cell types into. The password field is at
// CSS (40..340, 220..256) of a 1280x800 viewport, which every session's
// screenshots show at that size; it reports its value to its server on
// every input event.
const smLoginPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Sign in</title>
<style>
body { margin: 0; font: 16px sans-serif; }
.at { position: absolute; margin: 0; }
input { font: 16px sans-serif; box-sizing: border-box; }
</style></head>
<body>
<h1 class="at" style="left:40px; top:20px">Sign in</h1>
<label class="at" style="left:40px; top:100px" for="user">User name</label>
<input id="user" name="user" type="text" autocomplete="username" class="at" style="left:40px; top:130px; width:300px; height:36px">
<label class="at" style="left:40px; top:190px" for="pass">Password</label>
<input id="pass" name="pass" type="password" autocomplete="current-password" class="at" style="left:40px; top:220px; width:300px; height:36px">
<script>
const pass = document.getElementById('pass');
pass.addEventListener('input', () => fetch('/typed', {method: 'POST', body: pass.value}));
</script>
</body></html>`

// smField is the middle of the password field, in the pixels of every
// screenshot (1280x800, the viewport's size).
var smField = actions.Point{X: 190, Y: 238}

// Outcomes of a cell's approval.
const (
	smApproved = "approved"
	smEdited   = "edited"      // the human edits the text to another secret
	smSameEdit = "edited-same" // the human's edit keeps the model's text
	smDenied   = "denied"
	smExpired  = "expired"
	smStopped  = "stopped" // the server stops while the approval is pending, then starts again
	smNone     = "none"    // supervise: none
)

// Doors.
const (
	smAgent    = "agent"
	smExecutor = "executor"
	smMCP      = "mcp"
)

// Typing patterns.
const (
	smBatch   = "batch"   // [click the field, type] in one call
	smFocused = "focused" // a call clicks the field; the next types
)

// smCell is one cell of the matrix: a server of its own on a fresh data
// directory, the login page, a fake provider (agent sessions), and
// everything the cell's outputs are collected into.
type smCell struct {
	t                      *testing.T
	door, outcome, pattern string
	secret, edited         string // what the model types; what the human edits it to
	page                   *fieldsite.Site
	logs                   *smBuf
	log                    *slog.Logger
	cfg                    web.Config
	srv                    *web.Server
	http                   *httptest.Server
	base                   string
	oa                     *openaitest.Server
	an                     *anthropictest.Server
	id                     string    // the Spotter session
	events                 *smEvents // its event stream, followed live
	put                    *smBuf    // an agent session's PUT /session stream
	outputs                map[string][]byte
	approvalRequested      bool
	modelBodies            func() [][]byte // agent sessions: every request the provider received
	callOutputs            [][]byte        // executor answers and MCP results, as the client received them
	restarted              bool
	// streamCtx ends the cell's event streams and MCP calls when the
	// server stops; streams are the goroutines reading them.
	streamCtx     context.Context
	cancelStreams context.CancelFunc
	streams       sync.WaitGroup
	panelDisplay  *cdp.Display
}

// smBuf is a buffer safe for concurrent writes: the server's logs.
type smBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *smBuf) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *smBuf) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}

// TestSecretMatrix walks the matrix. Each cell checks that the typing
// happened exactly when it should have, and that no output holds the
// password (nor, when edited, the human's replacement).
func TestSecretMatrix(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the secret matrix on a real Chromium")
	}
	// One Chromium for every cell (and the panels); it must start.
	browserOnce.Do(func() { browser, browserErr = cdp.Launch(context.Background(), cdp.Config{}) })
	if browserErr != nil {
		t.Fatalf("launch Chromium: %v", browserErr)
	}
	for _, door := range []string{smAgent, smExecutor, smMCP} {
		for _, outcome := range []string{smApproved, smEdited, smSameEdit, smDenied, smExpired, smStopped, smNone} {
			for _, pattern := range []string{smBatch, smFocused} {
				t.Run(door+"/"+outcome+"/"+pattern, func(t *testing.T) {
					t.Parallel()
					runSMCell(t, door, outcome, pattern)
				})
			}
		}
	}
}

func runSMCell(t *testing.T, door, outcome, pattern string) {
	// Each cell types its own password, so that a leak names its cell.
	tag := strings.NewReplacer("agent", "Ag", "executor", "Ex", "mcp", "Mc", "approved", "Ap", "edited-same", "Es",
		"edited", "Ed", "denied", "De", "expired", "Xp", "stopped", "St", "none", "No", "batch", "B", "focused", "F").Replace(door + outcome + pattern)
	c := &smCell{t: t, door: door, outcome: outcome, pattern: pattern,
		secret: "Hunter2-" + tag + "-q7Zx", edited: "Swapped-" + tag + "-k3Wv",
		outputs: map[string][]byte{}, logs: &smBuf{}}
	c.log = slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c.page = fieldsite.New(t, "/login.html", smLoginPage)
	c.streamCtx, c.cancelStreams = context.WithCancel(context.Background())
	c.configure()
	c.start()
	t.Cleanup(func() {
		c.stop()
		if c.panelDisplay != nil {
			c.panelDisplay.Close(context.Background())
		}
	})

	switch door {
	case smAgent:
		c.runAgent()
	case smExecutor:
		c.runExecutor()
	case smMCP:
		c.runMCP()
	}
	c.collectAPI("end")
	c.collectPanel("end")
	c.collectFiles("before close") // spotter.db-wal holds what was written since the last checkpoint
	c.stop()
	c.collectFiles("after close")
	c.check()
}

// configure builds the server's configuration: a data directory of its
// own, a debug logger into c.logs, displays on the shared Chromium with
// the same logger, the cell's fake providers, and a short approval
// timeout for the expired cells.
func (c *smCell) configure() {
	t := c.t
	timeout := 2 * time.Minute
	if c.outcome == smExpired {
		timeout = 2 * time.Second
	}
	c.cfg = web.Config{
		DataDir:         t.TempDir(),
		Token:           testToken,
		Logger:          c.log,
		ApprovalTimeout: timeout,
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return browser.NewDisplay(ctx, cdp.DisplayConfig{Viewport: d.Size(), DPR: d.DPR, Logger: c.log})
		},
		NewModel: func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			switch m.Provider {
			case "openai":
				return openai.New(openai.Config{BaseURL: c.oa.URL, APIKey: "test", Model: m.Name, Display: image,
					Tools: tools, MaxRetries: -1, Logger: c.log})
			case "anthropic":
				return anthropic.New(anthropic.Config{BaseURL: c.an.URL, APIKey: "test", Model: m.Name, Display: image,
					Tools: tools, MaxRetries: -1, Logger: c.log})
			}
			return nil, fmt.Errorf("no fake for provider %q", m.Provider)
		},
		MCP: web.MCPConfig{StartURL: c.page.URL + "/login.html"},
	}
	if c.outcome == smNone {
		c.cfg.MCP.Rules = approvals.Rules{Supervise: approvals.SuperviseNone}
	}
}

func (c *smCell) start() {
	c.t.Helper()
	srv, err := web.New(c.t.Context(), c.cfg)
	if err != nil {
		c.t.Fatalf("web.New: %v", err)
	}
	if err := srv.Start(c.t.Context()); err != nil {
		c.t.Fatalf("Start: %v", err)
	}
	c.srv = srv
	c.http = httptest.NewServer(srv.Handler())
	c.base = c.http.URL
}

// stop stops the server as a shutdown does: the client connections are
// cut, the sessions and the store closed.
func (c *smCell) stop() {
	if c.srv == nil {
		return
	}
	c.cancelStreams()
	if c.panelDisplay != nil {
		// The panel's event stream would reconnect to the server as soon
		// as its connection is cut: leave the panel first.
		blank := screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: "about:blank"}}
		if err := c.panelDisplay.Perform(context.Background(), blank); err != nil {
			c.t.Errorf("leave the panel: %v", err)
		}
	}
	c.http.CloseClientConnections()
	if err := c.srv.Close(context.Background()); err != nil {
		c.t.Errorf("Server.Close: %v", err)
	}
	c.http.CloseClientConnections()
	c.http.Close()
	c.streams.Wait()
	c.srv = nil
}

// restart starts a new server on the same data.
func (c *smCell) restart() {
	c.stop()
	c.streamCtx, c.cancelStreams = context.WithCancel(context.Background())
	c.restarted = true
	c.start()
}

func (c *smCell) supervise() string {
	if c.outcome == smNone {
		return session.SuperviseNone
	}
	return session.SuperviseFlagged
}

// request sends an authenticated request and returns the status and body.
func (c *smCell) request(method, path string, body any) (int, []byte) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// ---- the session's event stream ------------------------------------------

// smEvents is a session's event stream, followed from its start: the raw
// bytes as the client received them, and the events as they come.
type smEvents struct {
	mu      sync.Mutex
	raw     bytes.Buffer
	evs     []sseEvent
	changed chan struct{}
	done    bool
}

// follow opens GET /session/:id/events?after=N and reads it until the
// stream ends or the cell stops it.
func (c *smCell) follow(after int64) *smEvents {
	c.t.Helper()
	s := &smEvents{changed: make(chan struct{})}
	req, err := http.NewRequestWithContext(c.streamCtx, "GET", fmt.Sprintf("%s/session/%s/events?after=%d", c.base, c.id, after), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("GET events: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		c.t.Fatalf("GET events = %d %s", resp.StatusCode, b)
	}
	c.streams.Go(func() {
		defer resp.Body.Close()
		rd := newSSEReader(io.TeeReader(resp.Body, (*smRawWriter)(s)))
		for {
			ev, err := rd.next()
			s.mu.Lock()
			if err != nil {
				s.done = true
			} else {
				s.evs = append(s.evs, ev)
			}
			close(s.changed)
			s.changed = make(chan struct{})
			s.mu.Unlock()
			if err != nil {
				return
			}
		}
	})
	return s
}

// smRawWriter appends to an smEvents' raw bytes.
type smRawWriter smEvents

func (w *smRawWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.raw.Write(p)
}

func (s *smEvents) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.raw.Bytes())
}

func (s *smEvents) all() []sseEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sseEvent(nil), s.evs...)
}

// await waits up to a minute for the first event after skip that
// matches, and returns it with its index.
func (s *smEvents) await(t *testing.T, what string, skip int, match func(sseEvent) bool) (sseEvent, int) {
	t.Helper()
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	for {
		s.mu.Lock()
		for i := skip; i < len(s.evs); i++ {
			if match(s.evs[i]) {
				ev := s.evs[i]
				s.mu.Unlock()
				return ev, i
			}
		}
		changed, done := s.changed, s.done
		s.mu.Unlock()
		if done {
			t.Fatalf("the event stream ended without %s; it had %v", what, kinds(s.all()))
		}
		select {
		case <-changed:
		case <-limit.C:
			t.Fatalf("no %s within a minute; events %v%s", what, kinds(s.all()), stopErrors(s.all()))
		}
	}
}

// stopErrors lists the errors of the turn_stops in evs, for a failure's
// message.
func stopErrors(evs []sseEvent) string {
	var b strings.Builder
	for _, e := range evs {
		if msg := e.field("error"); e.Type == "turn_stop" && msg != "" {
			fmt.Fprintf(&b, "; turn_stop error %q", msg)
		}
	}
	return b.String()
}

func smIsType(typ string) func(sseEvent) bool {
	return func(e sseEvent) bool { return e.Type == typ }
}

func smIsStop(reason string) func(sseEvent) bool {
	return func(e sseEvent) bool { return e.Type == "turn_stop" && e.field("stopReason") == reason }
}

// awaitPermission waits for the cell's permission request (after skip)
// and returns the approval's id and the event's index.
func (c *smCell) awaitPermission(skip int) (string, int) {
	c.t.Helper()
	ev, i := c.events.await(c.t, "permission_request", skip, smIsType("permission_request"))
	c.approvalRequested = true
	id := ev.field("approvalId")
	if id == "" {
		c.t.Fatalf("permission_request %s has no approvalId", ev.Data)
	}
	return id, i
}

// decide makes the cell's decision on a pending approval, as the panel
// would: approve, edit the text (to c.edited, or to what the model
// wrote), or deny. For the stopped
// cells it stops the server instead, collects what is there while the
// approval is pending, and starts it again.
func (c *smCell) decide(approval string) {
	c.t.Helper()
	var body map[string]any
	switch c.outcome {
	case smApproved:
		body = map[string]any{"decision": "approve"}
	case smEdited:
		body = map[string]any{"decision": "edit", "edit": map[string]any{"text": c.edited}}
	case smSameEdit:
		body = map[string]any{"decision": "edit", "edit": map[string]any{"text": c.secret}}
	case smDenied:
		body = map[string]any{"decision": "deny", "reason": "not now"}
	case smExpired:
		return // nobody decides
	case smStopped:
		c.collectFiles("pending, before the stop")
		c.stop()
		c.collectFiles("after the stop")
		c.restart()
		return
	}
	code, b := c.request("POST", "/approvals/"+approval, body)
	if code != http.StatusOK {
		c.t.Fatalf("POST /approvals/%s %v = %d %s", approval, body, code, b)
	}
	c.outputs["POST /approvals answer"] = b
}

// ---- the doors -------------------------------------------------------------

// runAgent runs a session whose model types the password: the OpenAI
// fake in one computer_call batch (click, type), or the Anthropic fake in
// two turns (a click, then the typing).
func (c *smCell) runAgent() {
	t := c.t
	typed, _ := json.Marshal(c.secret)
	spec := map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": "Sign in."}},
		"display":   map[string]any{"width": 1280, "height": 800},
		"start_url": c.page.URL + "/login.html",
		"approvals": map[string]any{"supervise": c.supervise()},
	}
	var callID string
	switch c.pattern {
	case smBatch:
		callID = "call_pw"
		c.oa = openaitest.NewServer(t,
			openaitest.Reply{Output: []json.RawMessage{openaitest.Message("I will enter the password."),
				openaitest.ComputerCall(callID, fmt.Sprintf(`{"type":"click","button":"left","x":%v,"y":%v}`, smField.X, smField.Y),
					`{"type":"type","text":`+string(typed)+`}`)}},
			openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}},
		)
		spec["model"] = map[string]any{"provider": "openai", "name": "gpt-5.4"}
		c.modelBodies = func() [][]byte {
			var out [][]byte
			for _, r := range c.oa.Requests() {
				out = append(out, r.Body)
			}
			return out
		}
	case smFocused:
		callID = "toolu_type"
		c.an = anthropictest.NewServer(t,
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I will click the password field."),
				anthropictest.ToolUse("toolu_click", "computer", map[string]any{"action": "left_click", "coordinate": []float64{smField.X, smField.Y}})}},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Now the password."),
				anthropictest.ToolUse(callID, "computer", map[string]any{"action": "type", "text": c.secret})}},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}},
		)
		spec["model"] = map[string]any{"provider": "anthropic", "name": modelName}
		c.modelBodies = func() [][]byte {
			var out [][]byte
			for _, r := range c.an.Requests() {
				out = append(out, r.Body)
			}
			return out
		}
	}
	// The PUT's own stream is captured to its end as well.
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(c.streamCtx, "PUT", c.base+"/session", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT /session: %v", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("PUT /session = %d %s", resp.StatusCode, b)
	}
	c.id = resp.Header.Get("X-Session-Id")
	c.put = &smBuf{}
	c.streams.Go(func() {
		defer resp.Body.Close()
		io.Copy(c.put, resp.Body)
	})
	c.events = c.follow(0)

	if c.outcome != smNone {
		approval, _ := c.awaitPermission(0)
		c.pendingChecks(approval)
		c.decide(approval)
	}
	if c.restarted {
		// The resumed turn answers the call (the password is not kept
		// across a restart, so it cannot be typed) and the model ends.
		c.events = c.follow(0)
	}
	c.events.await(t, "turn_stop end_turn", 0, smIsStop("end_turn"))

	// What the model was sent after the call: its result, and no password.
	bodies := c.modelBodies()
	last := bodies[len(bodies)-1]
	if !bytes.Contains(last, []byte(callID)) {
		t.Errorf("the model's last request does not answer %s", callID)
	}
	for i, body := range bodies {
		c.outputs[fmt.Sprintf("model request %d", i+1)] = body
	}
}

// runExecutor runs an executor session whose client posts the typing: an
// OpenAI computer_call batch (click, type), or an Anthropic left_click
// and then an Anthropic type.
func (c *smCell) runExecutor() {
	t := c.t
	provider := map[string]string{smBatch: "openai", smFocused: "anthropic"}[c.pattern]
	code, b := c.request("POST", "/executor/sessions", map[string]any{"provider": provider,
		"display": map[string]any{"width": 1280, "height": 800}, "start_url": c.page.URL + "/login.html",
		"approvals": map[string]any{"supervise": c.supervise()}})
	var created struct {
		ID    string      `json:"id"`
		Image screen.Size `json:"image"`
	}
	if code != http.StatusOK || json.Unmarshal(b, &created) != nil || created.ID == "" {
		t.Fatalf("POST /executor/sessions = %d %.300s", code, b)
	}
	if created.Image != (screen.Size{W: 1280, H: 800}) {
		t.Fatalf("executor image %v, want 1280x800 (the page's coordinates)", created.Image)
	}
	c.id = created.ID
	c.events = c.follow(0)
	typed, _ := json.Marshal(c.secret)
	var callID, call string
	switch c.pattern {
	case smBatch:
		callID = "call_pw"
		call = fmt.Sprintf(`{"type":"computer_call","call_id":%q,"actions":[{"type":"click","button":"left","x":%v,"y":%v},{"type":"type","text":%s}],"pending_safety_checks":[]}`,
			callID, smField.X, smField.Y, typed)
	case smFocused:
		click := fmt.Sprintf(`{"type":"tool_use","id":"toolu_click","name":"computer","input":{"action":"left_click","coordinate":[%v,%v]}}`, smField.X, smField.Y)
		if a := c.execCall(click, "60s"); a.Status != "done" || a.Error != "" {
			t.Fatalf("the click = %+v, want done", a)
		}
		callID = "toolu_type"
		call = fmt.Sprintf(`{"type":"tool_use","id":%q,"name":"computer","input":{"action":"type","text":%s}}`, callID, typed)
	}
	if c.outcome == smNone {
		if a := c.execCall(call, "60s"); a.Status != "done" {
			t.Fatalf("the typing = %+v, want done", a)
		}
		return
	}
	if a := c.execCall(call, "0s"); a.Status == "done" {
		t.Fatalf("the typing = %+v, want it to wait for a human", a)
	}
	approval, _ := c.awaitPermission(0)
	c.pendingChecks(approval)
	c.decide(approval)
	if c.restarted {
		// The session survives the restart: the resumed call is answered
		// (the password is not kept across a restart, so it is not typed)
		// and the approval nothing waits for any more is closed.
		c.events = c.follow(0)
		c.events.await(t, "the call's result", 0, func(e sseEvent) bool {
			return e.Type == "tool_result" && e.field("toolCallId") == callID
		})
		code, b := c.request("GET", "/executor/sessions/"+c.id+"/calls/"+callID+"?wait=60s", nil)
		c.callOutputs = append(c.callOutputs, b)
		if code != http.StatusOK || !strings.Contains(string(b), `"done"`) {
			t.Errorf("after the restart the call was answered %d %.300s, want its result", code, b)
		}
		return
	}
	code, b = c.request("GET", "/executor/sessions/"+c.id+"/calls/"+callID+"?wait=60s", nil)
	c.callOutputs = append(c.callOutputs, b)
	if code != http.StatusOK || !strings.Contains(string(b), `"done"`) {
		t.Fatalf("GET the typing's result = %d %.500s, want done", code, b)
	}
}

// execCall posts an executor call and returns the answer, recording it.
func (c *smCell) execCall(call, wait string) execAnswer {
	c.t.Helper()
	req, err := http.NewRequestWithContext(c.t.Context(), "POST", c.base+"/executor/sessions/"+c.id+"/call?wait="+wait, strings.NewReader(call))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST call: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	c.callOutputs = append(c.callOutputs, b)
	var a execAnswer
	if err := json.Unmarshal(b, &a); err != nil || resp.StatusCode >= 300 && resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("POST call %s = %d %.500s", call, resp.StatusCode, b)
	}
	return a
}

// runMCP runs an MCP client over /mcp that types the password with the
// computer tool: a batch (click, type), or a click and then the typing.
func (c *smCell) runMCP() {
	t := c.t
	client := sdk.NewClient(&sdk.Implementation{Name: "secret-matrix", Version: "1"}, nil)
	cs, err := client.Connect(c.streamCtx, &sdk.StreamableClientTransport{Endpoint: c.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{testToken}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("MCP Connect: %v", err)
	}
	defer cs.Close()
	call := func(args map[string]any) (*sdk.CallToolResult, error) {
		res, err := cs.CallTool(c.streamCtx, &sdk.CallToolParams{Name: "computer", Arguments: args})
		if res != nil {
			b, _ := json.Marshal(res)
			c.callOutputs = append(c.callOutputs, b)
		}
		return res, err
	}
	first, err := call(map[string]any{"kind": "screenshot"})
	if err != nil || first.IsError {
		t.Fatalf("MCP screenshot = %s, %v", c.callOutputs[len(c.callOutputs)-1:], err)
	}
	var frame string
	for _, p := range first.Content {
		if tc, ok := p.(*sdk.TextContent); ok {
			var n struct {
				FrameID string `json:"frame_id"`
			}
			if json.Unmarshal([]byte(tc.Text), &n) == nil && n.FrameID != "" {
				frame = n.FrameID
			}
		}
	}
	code, b := c.request("GET", "/sessions", nil)
	var list struct {
		Sessions []struct{ ID, Kind string }
	}
	if code != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("GET /sessions = %d %s", code, b)
	}
	for _, s := range list.Sessions {
		if s.Kind == session.KindMCP {
			c.id = s.ID
		}
	}
	if c.id == "" || frame == "" {
		t.Fatalf("no MCP session in %s, or no frame in the screenshot's answer", b)
	}
	c.events = c.follow(0)
	at := map[string]any{"x": smField.X, "y": smField.Y}
	var args map[string]any
	switch c.pattern {
	case smBatch:
		args = map[string]any{"frame_id": frame, "actions": []map[string]any{{"kind": "click", "at": at}, {"kind": "type", "text": c.secret}}}
	case smFocused:
		if res, err := call(map[string]any{"kind": "click", "at": at, "frame_id": frame}); err != nil || res.IsError {
			t.Fatalf("MCP click = %v, %v", res, err)
		}
		args = map[string]any{"kind": "type", "text": c.secret}
	}
	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := call(args)
		done <- answer{res, err}
	}()
	if c.outcome != smNone {
		approval, _ := c.awaitPermission(0)
		select {
		case a := <-done:
			t.Fatalf("the MCP typing returned %v, %v before anyone decided", a.res, a.err)
		default:
		}
		c.pendingChecks(approval)
		c.decide(approval)
	}
	a := <-done
	if c.outcome == smStopped {
		return // the call ended with the server, however it could
	}
	if a.err != nil {
		t.Fatalf("MCP typing: %v", a.err)
	}
	if wantErr := c.outcome == smDenied || c.outcome == smExpired; a.res.IsError != wantErr {
		t.Errorf("MCP typing isError = %v, want %v: %s", a.res.IsError, wantErr, c.callOutputs[len(c.callOutputs)-1])
	}
}

// pendingChecks runs while the cell's approval waits for a human: the
// request is stored and shown masked, and the panel shows its card.
func (c *smCell) pendingChecks(approval string) {
	c.collectAPI("pending")
	if c.outcome == smExpired {
		return // the card may be gone before the panel draws it
	}
	c.collectPanel("pending")
	code, b := c.request("GET", "/approvals?status=pending&session="+c.id, nil)
	if code != http.StatusOK || !strings.Contains(string(b), approval) || !strings.Contains(string(b), `"text":"`+actions.SecretMask+`"`) {
		c.t.Errorf("GET /approvals?status=pending = %d %.600s, want %s with the text masked as %q", code, b, approval, actions.SecretMask)
	}
}

// ---- collecting the outputs -----------------------------------------------

// collectAPI reads what the API shows of the cell: the session, every
// session, every approval and the audit log, with and without the
// session's filter, and the event stream from its start.
func (c *smCell) collectAPI(when string) {
	c.t.Helper()
	for _, path := range []string{"/session/" + c.id, "/sessions", "/approvals", "/approvals?session=" + c.id,
		"/audit", "/audit?session=" + c.id} {
		code, b := c.request("GET", path, nil)
		if code != http.StatusOK {
			c.t.Errorf("GET %s = %d %.300s", path, code, b)
		}
		c.outputs[when+": GET "+path] = b
	}
	// A fresh replay of the whole stream, as a reconnecting client gets it.
	code, h := c.request("GET", "/session/"+c.id, nil)
	var hist struct {
		LastSeq int64 `json:"lastSeq"`
	}
	if code != http.StatusOK || json.Unmarshal(h, &hist) != nil {
		c.t.Fatalf("GET /session/%s = %d", c.id, code)
	}
	replay := c.follow(0)
	replay.await(c.t, fmt.Sprintf("event %d", hist.LastSeq), 0, func(e sseEvent) bool { return e.ID >= hist.LastSeq })
	c.outputs[when+": SSE replay"] = replay.bytes()
	c.outputs[when+": SSE live"] = c.events.bytes()
}

// collectFiles reads every file of the data directory as bytes (but
// screenshots): spotter.db, its -wal and -shm, and every trace file. With
// the server closed, it also renders each trace's report and dumps every
// table of the database.
func (c *smCell) collectFiles(when string) {
	t := c.t
	t.Helper()
	closed := c.srv == nil
	if closed {
		traces, _ := filepath.Glob(filepath.Join(c.cfg.DataDir, "sessions", "*", "t*", trace.EventsFile))
		if len(traces) == 0 {
			t.Errorf("no trace (%s) under %s", trace.EventsFile, c.cfg.DataDir)
		}
		for _, ev := range traces {
			if _, err := trace.WriteReport(filepath.Dir(ev)); err != nil {
				t.Errorf("WriteReport(%s): %v", filepath.Dir(ev), err)
			}
		}
	}
	err := filepath.WalkDir(c.cfg.DataDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a -wal gone meanwhile
		}
		if err != nil {
			return err
		}
		if bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}) {
			return nil
		}
		rel, _ := filepath.Rel(c.cfg.DataDir, p)
		c.outputs[when+": file "+rel] = b
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", c.cfg.DataDir, err)
	}
	if closed {
		c.outputs[when+": SELECT * of every table"] = smDumpSQLite(t, filepath.Join(c.cfg.DataDir, "spotter.db"))
	}
}

// smDumpSQLite selects every column of every row of every table.
func smDumpSQLite(t *testing.T, path string) []byte {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	ctx := t.Context()
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatalf("list the tables of %s: %v", path, err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	for _, want := range []string{"sessions", "events", "messages", "tool_calls", "approvals", "audit"} {
		if !slices.Contains(tables, want) {
			t.Errorf("spotter.db has tables %v, want %s among them", tables, want)
		}
	}
	var out bytes.Buffer
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT * FROM "`+table+`"`)
		if err != nil {
			t.Fatalf("SELECT * FROM %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			fmt.Fprintf(&out, "%s:", table)
			for i, v := range vals {
				if b, ok := v.([]byte); ok {
					v = string(b)
				}
				fmt.Fprintf(&out, " %s=%v", cols[i], v)
			}
			out.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("rows of %s: %v", table, err)
		}
		rows.Close()
	}
	return out.Bytes()
}

// ---- the panel in Chromium ---------------------------------------------------

// smPanelState is what the panel shows: its whole document, its visible
// text and the values of its inputs.
type smPanelState struct {
	Ready   bool     `json:"ready"` // the condition waited for holds
	HTML    string   `json:"html"`
	Text    string   `json:"text"`
	Inputs  []string `json:"inputs"`
	Started bool     `json:"started"` // the app shows
	Login   bool     `json:"login"`   // the login form shows
}

// collectPanel opens the panel in a tab of the shared Chromium, logs in,
// opens the cell's session and waits until its timeline shows every event
// (and, while an approval is pending, its card), then keeps what it
// renders. The home page, with its list of pending approvals, is kept too.
func (c *smCell) collectPanel(when string) {
	t := c.t
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if c.panelDisplay == nil {
		d, err := browser.NewDisplay(ctx, cdp.DisplayConfig{Viewport: screen.Size{W: 1280, H: 1000}})
		if err != nil {
			t.Fatalf("open a tab for the panel: %v", err)
		}
		c.panelDisplay = d
	}
	d := c.panelDisplay
	code, h := c.request("GET", "/session/"+c.id, nil)
	var hist struct {
		LastSeq int64 `json:"lastSeq"`
	}
	if code != http.StatusOK || json.Unmarshal(h, &hist) != nil {
		t.Fatalf("GET /session/%s = %d", c.id, code)
	}
	// A new page each time: the panel's state is what it loads.
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: c.base + "/"}}); err != nil {
		t.Fatalf("open the panel: %v", err)
	}
	// poll waits, in the page, until cond (a JavaScript expression) holds,
	// and returns what the panel then shows. Each evaluation gives up
	// after 5s, within the display's command timeout; poll tries again
	// until its minute is up.
	poll := func(what, cond string) smPanelState {
		t.Helper()
		expr := `new Promise((resolve) => {
			const $ = (id) => document.getElementById(id);
			const snapshot = (ready) => JSON.stringify({ready,
				html: document.documentElement.outerHTML,
				text: document.body.innerText,
				inputs: [...document.querySelectorAll('input, textarea')].map(e => e.value),
				started: !$('app').hidden, login: !$('login').hidden,
			});
			const until = Date.now() + 5000;
			const check = () => {
				let ok = false;
				try { ok = !!(` + cond + `); } catch (_) { /* not there yet */ }
				if (ok || Date.now() > until) resolve(snapshot(ok)); else setTimeout(check, 50);
			};
			check();
		})`
		var st smPanelState
		for {
			raw, err := d.Eval(ctx, expr)
			if err == nil {
				var s string
				if err = json.Unmarshal(raw, &s); err == nil {
					err = json.Unmarshal([]byte(s), &st)
				}
			}
			if err == nil && st.Ready {
				return st
			}
			if ctx.Err() != nil {
				t.Fatalf("the panel never showed %s (%v): %.2000s", what, err, st.Text)
			}
		}
	}
	// The panel shows its login form or its app once its script has run.
	st := poll("the login form or the app", `!$('app').hidden || !$('login').hidden`)
	if !st.Started {
		login := fmt.Sprintf(`(() => { document.getElementById('login-token').value = %q;
			document.getElementById('login-form').requestSubmit(); return true; })()`, testToken)
		if _, err := d.Eval(ctx, login); err != nil {
			t.Fatalf("log in to the panel: %v", err)
		}
	}
	home := poll("the home page with its sessions", `!$('app').hidden && document.querySelectorAll('#session-list li').length > 0`)
	c.outputs[when+": panel home"] = []byte(home.HTML + "\n" + home.Text + "\n" + strings.Join(home.Inputs, "\n"))
	if _, err := d.Eval(ctx, fmt.Sprintf(`(() => { location.hash = '#/session/%s'; return true; })()`, c.id)); err != nil {
		t.Fatalf("open the session in the panel: %v", err)
	}
	pending := when == "pending"
	cond := fmt.Sprintf(`document.querySelectorAll('#timeline li').length >= %d`, hist.LastSeq)
	if pending {
		cond += ` && document.querySelectorAll('#approval-list .approval').length > 0`
	}
	st = poll(fmt.Sprintf("the session's %d events", hist.LastSeq), cond)
	c.outputs[when+": panel session"] = []byte(st.HTML + "\n" + st.Text + "\n" + strings.Join(st.Inputs, "\n"))
	if !strings.Contains(st.Text, actions.SecretMask) {
		t.Errorf("%s: the panel's session view does not show the typing masked (%q):\n%s", when, actions.SecretMask, st.Text)
	}
	if pending {
		// The card's editor holds the text a human may change: masked.
		if _, err := d.Eval(ctx, `(() => { for (const b of document.querySelectorAll('#approval-list .edit-toggle')) b.click(); return true; })()`); err != nil {
			t.Fatalf("open the card's editor: %v", err)
		}
		st = poll("the card's editor", `[...document.querySelectorAll('#approval-list .edit-text')].some(e => e.value === '`+actions.SecretMask+`')`)
		c.outputs[when+": panel card editor"] = []byte(st.HTML + "\n" + st.Text + "\n" + strings.Join(st.Inputs, "\n"))
	}
}

// ---- the checks ---------------------------------------------------------------

// check checks that the typing reached the page exactly when it should
// have, that the outputs show that it was recorded (masked), and that no
// output holds the password or the human's replacement.
func (c *smCell) check() {
	t := c.t
	got := c.page.Received()
	switch c.outcome {
	case smApproved, smSameEdit, smNone:
		if !slices.Contains(got, c.secret) {
			t.Errorf("the page's password field reported %q, want %q: the typing did not happen", got, c.secret)
		}
	case smEdited:
		if !slices.Contains(got, c.edited) || slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.secret) }) {
			t.Errorf("the page's password field reported %q, want %q (the human's edit) and never the model's text", got, c.edited)
		}
	default:
		if len(got) > 0 {
			t.Errorf("the page's password field reported %q, want nothing: the typing must not happen (%s)", got, c.outcome)
		}
	}
	if c.approvalRequested != (c.outcome != smNone) {
		t.Errorf("approval requested = %v, want %v", c.approvalRequested, c.outcome != smNone)
	}

	for i, b := range c.callOutputs {
		c.outputs[fmt.Sprintf("%s client answer %d", c.door, i+1)] = b
	}
	c.outputs["server logs"] = c.logs.Bytes()
	if c.put != nil {
		c.outputs["PUT /session stream"] = c.put.Bytes()
	}

	// Controls: the call was recorded, masked, and the debug logs were
	// captured; otherwise finding nothing would prove nothing.
	var sse []byte
	for name, b := range c.outputs {
		if strings.HasPrefix(name, "end: SSE replay") {
			sse = b
		}
	}
	if !bytes.Contains(sse, []byte(`"event: tool_call`)) && !bytes.Contains(sse, []byte("event: tool_call")) {
		t.Errorf("the event stream has no tool_call:\n%s", sse)
	}
	if !bytes.Contains(sse, []byte(actions.SecretMask)) {
		t.Errorf("the event stream never shows the typing masked as %q", actions.SecretMask)
	}
	logs := c.outputs["server logs"]
	if c.outcome != smNone && !bytes.Contains(logs, []byte("approval needed")) {
		t.Errorf("the logs lack the gate's debug line: debug logging was not captured")
	}
	var secretActions int
	for name, b := range c.outputs {
		if !strings.HasSuffix(name, trace.EventsFile) || !strings.HasPrefix(name, "after") {
			continue
		}
		for line := range bytes.Lines(b) {
			var e trace.Event
			if json.Unmarshal(line, &e) == nil && e.Type == trace.TypeAction && e.Action.Kind == actions.Type && e.Secret {
				secretActions++
			}
		}
	}
	if secretActions == 0 {
		t.Errorf("no trace holds the typing as a secret action")
	}

	secrets := []string{c.secret}
	if c.outcome == smEdited {
		secrets = append(secrets, c.edited)
	}
	names := make([]string, 0, len(c.outputs))
	for name := range c.outputs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		b := c.outputs[name]
		for _, s := range secrets {
			for _, form := range smForms(s) {
				i := bytes.Index(b, []byte(form))
				if i < 0 {
					continue
				}
				excerpt := b[max(i-160, 0):min(i+len(form)+60, len(b))]
				t.Errorf("%s holds %q: …%s…", name, s, bytes.ToValidUTF8(excerpt, []byte("?")))
				break
			}
		}
	}
	t.Logf("searched %d outputs for the password", len(names))
}

// smForms are the forms a secret may take in an output: as it is, and
// URL-encoded. (It has no character JSON or HTML would escape.)
func smForms(s string) []string {
	return []string{s, url.QueryEscape(s)}
}
