package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/web"
)

const testToken = "test-token-0123456789"

// integration reports whether integration tests run (SPOTTER_INTEGRATION=1).
func integration() bool { return os.Getenv("SPOTTER_INTEGRATION") == "1" }

// fakeDisplay is screentest's in-memory display with a Close.
type fakeDisplay struct{ *screentest.Fake }

func (fakeDisplay) Close(context.Context) error { return nil }

// env is a server under test with a scripted Anthropic endpoint.
type env struct {
	t     *testing.T
	srv   *web.Server
	http  *httptest.Server
	model *anthropictest.Server
	data  string
	base  string // the server's URL

	cfg web.Config

	mu    sync.Mutex
	fakes []*screentest.Fake // displays opened, in order
}

type envOpts struct {
	// fake keeps the in-memory display even in integration runs, which
	// otherwise run every session on a real Chromium.
	fake    bool
	db      string // a postgres:// DSN; "": SQLite in the data directory
	data    string
	timeout time.Duration
	// displays are Config.Displays.
	displays []string
	// retention is Config.Retention.
	retention web.Retention
}

func newEnv(t *testing.T, o envOpts, replies ...anthropictest.Reply) *env {
	t.Helper()
	e := &env{t: t, model: anthropictest.NewServer(t, replies...), data: o.data}
	if e.data == "" {
		e.data = t.TempDir()
	}
	cfg := web.Config{
		DataDir: e.data,
		Token:   testToken,
		NewModel: func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return anthropic.New(anthropic.Config{BaseURL: e.model.URL, APIKey: "test", Model: m.Name, Display: image,
				Tools: tools, MaxRetries: -1})
		},
		ApprovalTimeout: o.timeout,
		DB:              o.db,
		Displays:        o.displays,
		Retention:       o.retention,
	}
	switch {
	case integration() && !o.fake:
		cfg.NewDisplay = openBrowser
	default:
		cfg.NewDisplay = func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			f := &screentest.Fake{Viewport: d.Size(), DPR: d.DPR}
			e.mu.Lock()
			e.fakes = append(e.fakes, f)
			e.mu.Unlock()
			return fakeDisplay{f}, nil
		}
	}
	e.cfg = cfg
	e.start()
	t.Cleanup(func() { e.stop() })
	return e
}

// start starts the server on e.cfg.
func (e *env) start() {
	e.t.Helper()
	srv, err := web.New(e.t.Context(), e.cfg)
	if err != nil {
		e.t.Fatalf("web.New: %v", err)
	}
	if err := srv.Start(e.t.Context()); err != nil {
		e.t.Fatalf("Start: %v", err)
	}
	e.srv = srv
	e.http = httptest.NewServer(srv.Handler())
	e.base = e.http.URL
}

// stop stops the server as a shutdown would: sessions keep their state.
func (e *env) stop() {
	if e.srv == nil {
		return
	}
	e.http.CloseClientConnections()
	e.http.Close()
	if err := e.srv.Close(context.Background()); err != nil {
		e.t.Errorf("Close: %v", err)
	}
	for _, v := range web.SpecViolations(e.srv) {
		e.t.Errorf("docs/openapi.yaml: %s", v)
	}
	e.srv = nil
}

// restart stops the server and starts a new one on the same data.
func (e *env) restart() {
	e.t.Helper()
	e.stop()
	e.start()
}

// click is an Anthropic computer-tool call of the model's tool version.
func click(t *testing.T, id string, x, y int) json.RawMessage {
	return anthropictest.ToolUse(id, "computer", map[string]any{"action": "left_click", "coordinate": []int{x, y}})
}

func move(t *testing.T, id string, x, y int) json.RawMessage {
	return anthropictest.ToolUse(id, "computer", map[string]any{"action": "mouse_move", "coordinate": []int{x, y}})
}

// sseEvent is one event of a stream.
type sseEvent struct {
	ID   int64
	Type string
	Data json.RawMessage
}

func (e sseEvent) field(name string) string {
	var m map[string]any
	_ = json.Unmarshal(e.Data, &m)
	v, _ := m[name].(string)
	return v
}

// readSSE reads a stream to its end.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Type != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read SSE: %v", err)
	}
	return out
}

// request sends an authenticated API request.
func (e *env) request(method, path string, body any) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// stream sends a request answered by SSE and reads it to its end.
func (e *env) stream(method, path string, body any) (*http.Response, []sseEvent) {
	e.t.Helper()
	resp := e.request(method, path, body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, b)
	}
	return resp, readSSE(e.t, resp.Body)
}

// getJSON decodes an authenticated GET.
func (e *env) getJSON(path string, v any) {
	e.t.Helper()
	resp := e.request("GET", path, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET %s = %d %s", path, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		e.t.Fatalf("GET %s: %v", path, err)
	}
}

// kinds lists event types with their call ids: "tool_call:call_001".
func kinds(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		s := e.Type
		if id := e.field("toolCallId"); id != "" {
			s += ":" + id
		}
		if r := e.field("stopReason"); r != "" {
			s += ":" + r
		}
		out = append(out, s)
	}
	return out
}

// model returns the Anthropic model name the tests use.
const modelName = "claude-sonnet-4-5"

func spec(msg string, extra map[string]any) map[string]any {
	s := map[string]any{
		"messages": []map[string]any{{"role": "user", "content": msg}},
		"model":    map[string]any{"provider": "anthropic", "name": modelName},
		"display":  map[string]any{"width": 1024, "height": 640},
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

// One Chromium serves every in-process integration test, a tab (in its
// own browser context) per session.
var (
	browserOnce sync.Once
	browser     *cdp.Browser
	browserErr  error
)

func TestMain(m *testing.M) {
	isolatetest.AgentMain() // the containerd sandboxes' agent (isolate_test.go)
	code := m.Run()
	if browser != nil {
		_ = browser.Close(context.Background())
	}
	if left := web.LeftSpecViolations(); len(left) > 0 {
		// Servers made outside env (fuzz, load, cluster tests).
		fmt.Fprintf(os.Stderr, "%d exchanges broke docs/openapi.yaml:\n", len(left))
		for _, v := range left {
			fmt.Fprintf(os.Stderr, "  %s\n", v)
		}
		code = 1
	}
	os.Exit(code)
}

// openBrowser opens a real Chromium display (integration tests).
func openBrowser(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
	browserOnce.Do(func() {
		browser, browserErr = cdp.Launch(context.Background(), cdp.Config{})
	})
	if browserErr != nil {
		return nil, browserErr
	}
	return browser.NewDisplay(ctx, cdp.DisplayConfig{Viewport: d.Size(), DPR: d.DPR})
}

var _ = fmt.Sprint

// sseReader reads events one at a time from a stream that stays open.
type sseReader struct{ sc *bufio.Scanner }

func newSSEReader(r io.Reader) *sseReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	return &sseReader{sc}
}

func (r *sseReader) next() (sseEvent, error) {
	var cur sseEvent
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if cur.Type != "" {
				return cur, nil
			}
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = json.RawMessage(strings.TrimPrefix(line, "data: "))
		}
	}
	if err := r.sc.Err(); err != nil {
		return cur, err
	}
	return cur, io.EOF
}
