package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/mcpclients"
	"github.com/spotter-harness/spotter/internal/qa/qatest"
)

// inputsPage logs what reaches it to /log: a click on Press, the text in
// the focused field, a drag of the red box (where it was dropped) and a
// scroll.
const inputsPage = `<!doctype html><html><head><title>Inputs</title></head><body style="margin:0;height:3000px;font:16px sans-serif">
<input id="t" aria-label="Text" style="position:absolute;left:20px;top:20px;width:200px;height:30px">
<button style="position:absolute;left:20px;top:80px;width:120px;height:40px" onclick="log('clicked')">Press</button>
<div id="box" style="position:absolute;left:300px;top:80px;width:60px;height:60px;background:red"></div>
<script>
function log(s) { fetch('/log?e=' + encodeURIComponent(s)); }
t.focus();
t.addEventListener('input', () => { if (t.value === 'hello') log('typed hello'); });
let down = false;
box.addEventListener('mousedown', () => { down = true; });
document.addEventListener('mouseup', e => { if (down) log('dropped at ' + e.clientX + ',' + e.clientY); down = false; });
let scrolled = false;
addEventListener('scroll', () => { if (!scrolled && scrollY > 100) { scrolled = true; log('scrolled'); } });
</script></body></html>`

// pageLog serves inputsPage and keeps what it logged.
type pageLog struct {
	URL string
	mu  sync.Mutex
	got []string
}

func servePageLog(t *testing.T) *pageLog {
	p := &pageLog{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/log" {
			p.mu.Lock()
			p.got = append(p.got, r.URL.Query().Get("e"))
			p.mu.Unlock()
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, inputsPage)
	}))
	t.Cleanup(hs.Close)
	p.URL = hs.URL + "/"
	return p
}

func (p *pageLog) has(s string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, g := range p.got {
		if g == s {
			return true
		}
	}
	return false
}

// inspect runs the MCP Inspector's CLI against endpoint with args and
// returns its output; a failed run fails t unless wantFail.
func inspect(ctx context.Context, t *testing.T, endpoint string, args ...string) (string, error) {
	t.Helper()
	cmd := mcpclients.Command(ctx, t, mcpclients.Bin(t, "mcp-inspector"),
		append([]string{"--cli", endpoint, "--transport", "http"}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%v: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), err
}

// toolResult is a tools/call result as the Inspector prints it.
type toolResult struct {
	Content []struct{ Type, Text string }
	IsError bool
}

func (r toolResult) text() string {
	var s []string
	for _, c := range r.Content {
		if c.Type == "text" {
			s = append(s, c.Text)
		}
	}
	return strings.Join(s, "\n")
}

// The MCP Inspector's CLI (npm, the newest release) drives every tool of
// `spotter mcp --http`, building each argument from the tool's input
// schema out of its --tool-arg key=value form: the page sees the click,
// the typing, the drag and the scroll; navigate, snapshot and the session
// tools answer; a point written as "227,141" is refused in the schema's
// words. The Inspector's --strict finds nothing to say about the
// schemas, and ajv in strict mode compiles every one.
func TestInspectorDrivesEveryTool(t *testing.T) {
	integration(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	page := servePageLog(t)
	endpoint := startMCPServer(ctx, t, "--start-url", page.URL, "--viewport", "800x600", "--isolate", "none")

	list, err := inspect(ctx, t, endpoint, "--method", "tools/list", "--strict")
	if err != nil {
		t.Fatalf("tools/list --strict: %v", err)
	}
	ajv := mcpclients.Command(ctx, t, mcpclients.Node(t), mcpclients.Script(t, "spotter-ajv-strict.mjs", mcpclients.AJVStrict))
	ajv.Stdin = strings.NewReader(list)
	if out, err := ajv.CombinedOutput(); err != nil || strings.Count(string(out), "ok ") != 6 {
		t.Errorf("ajv strict over tools/list: %v\n%s", err, out)
	} else {
		t.Logf("ajv strict:\n%s", out)
	}

	// Each call is a connection, and a session, of its own: they run at
	// once. The image is the 800x600 viewport, pixel for pixel.
	calls := []struct {
		name string
		args []string
		page string // what the page logs
		text string // what the answer says
		fail bool
	}{
		{name: "computer", args: []string{"kind=click", `at={"x":80,"y":100}`}, page: "clicked"},
		{name: "computer", args: []string{"kind=type", "text=hello"}, page: "typed hello"},
		{name: "computer", args: []string{"kind=drag", `path=[{"x":330,"y":110},{"x":500,"y":300}]`}, page: "dropped at 500,300"},
		{name: "computer", args: []string{"kind=scroll", `at={"x":400,"y":300}`, "dy=600"}, page: "scrolled"},
		{name: "computer", args: []string{"kind=click", "at=227,141"}, text: `"at" must be an object, not a string`, fail: true},
		{name: "navigate", args: []string{"url=" + page.URL + "?again"}, text: `"ran":1`},
		{name: "snapshot", text: `button "Press" [ref=`},
		{name: "open_session", args: []string{"start_url=" + page.URL}, text: `"session":"s`},
		{name: "list_sessions", text: `"sessions"`},
		{name: "close_session", args: []string{"session=s999"}, text: `no such session "s999"`, fail: true},
	}
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() {
			args := []string{"--method", "tools/call", "--tool-name", c.name}
			for _, a := range c.args {
				args = append(args, "--tool-arg", a)
			}
			out, err := inspect(ctx, t, endpoint, args...)
			// The CLI exits 5 for a result with isError set, which it
			// prints all the same.
			if err != nil && (!c.fail || !strings.Contains(err.Error(), "tool_is_error")) {
				t.Errorf("%s %v: %v", c.name, c.args, err)
				return
			}
			var r toolResult
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Errorf("%s %v: output %q: %v", c.name, c.args, out, err)
				return
			}
			if r.IsError != c.fail || !strings.Contains(r.text(), c.text) {
				t.Errorf("%s %v: isError %v, %q; want isError %v and %q", c.name, c.args, r.IsError, r.text(), c.fail, c.text)
			}
			for _, gone := range []string{"Go struct", "unmarshal", "actions.Point"} {
				if strings.Contains(r.text(), gone) {
					t.Errorf("%s %v answered in Go's words: %q", c.name, c.args, r.text())
				}
			}
		})
	}
	wg.Wait()
	for _, c := range calls {
		if c.page != "" && !page.has(c.page) {
			t.Errorf("%s %v: the page did not log %q (it logged %q)", c.name, c.args, c.page, page.got)
		}
	}
}

// A client of the official TypeScript SDK that declares no elicitation,
// over stdio to `spotter mcp` (this test binary): its click on "Buy now",
// which the purchase rule flags, is refused, and the refusal says why and
// what to do about it; nothing is bought.
func TestTypeScriptClientWithoutElicitation(t *testing.T) {
	integration(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	site := qatest.ShopSite(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	calls, _ := json.Marshal([]map[string]any{
		{"name": "computer", "arguments": map[string]any{"kind": "screenshot"}},
		{"name": "computer", "arguments": map[string]any{"kind": "click", "at": map[string]any{"x": 200, "y": 320}}},
	})
	cmd := mcpclients.Command(ctx, t, mcpclients.Node(t), mcpclients.Script(t, "spotter-ts-client.mjs", mcpclients.TSClient),
		self, "mcp", "--start-url", site.URL, "--viewport", "800x600", "--isolate", "none")
	cmd.Env = append(cmd.Env, "CALLS="+string(calls))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the TypeScript client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the TypeScript client printed %q, want two results", out)
	}
	var buy struct {
		IsError bool
		Text    []string
	}
	if err := json.Unmarshal([]byte(lines[1]), &buy); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(buy.Text, "\n")
	t.Logf("refusal: %s", text)
	for _, want := range []string{"rule purchase", "cannot ask its user", "--approvals none", "--rules", "/mcp"} {
		if !buy.IsError || !strings.Contains(text, want) {
			t.Errorf("click without elicitation: isError %v, %q; want a refusal that says %q", buy.IsError, text, want)
		}
	}
	if n := site.Purchases.Load(); n != 0 {
		t.Errorf("%d purchases, want 0", n)
	}
}

// The official MCP conformance suite passes against `spotter mcp --http`,
// but for the scenarios that need its fixture server's own tools,
// resources and prompts, which conformance-expected.yaml lists with the
// reason for each (a scenario listed that passes fails the run too).
func TestConformanceStandalone(t *testing.T) {
	integration(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	endpoint := startMCPServer(ctx, t, "--isolate", "none")
	mcpclients.Conformance(ctx, t, endpoint)
}

// A text-only client (it reads no image) completes the shop's form through
// `spotter mcp` with the snapshot tool and element refs alone: the PIN
// typed into the field its ref names (the password rule asks first), then
// "Buy now" by its ref, which the purchase rule flags: the client's user
// is asked (the question frames the element) and approves, and the shop
// sees one purchase. The session's trace (--out) shows each ref beside
// the point it resolved to, and no PIN.
func TestTextOnlyClientCompletesAForm(t *testing.T) {
	integration(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	site := qatest.ShopSite(t)
	out := t.TempDir()
	var asked []string
	approve := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
	}}
	cs := startMCPClient(ctx, t, approve, "--start-url", site.URL, "--viewport", "800x600", "--isolate", "none", "--out", out)
	text := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		var s []string
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				s = append(s, tc.Text)
			}
		}
		if res.IsError {
			t.Fatalf("%s %v: %s", name, args, strings.Join(s, "\n"))
		}
		return strings.Join(s, "\n")
	}
	ref := func(snap, line string) string {
		t.Helper()
		m := regexp.MustCompile(regexp.QuoteMeta(line) + `[^\n]*\[ref=(e\d+)\]`).FindStringSubmatch(snap)
		if m == nil {
			t.Fatalf("no %q with a ref in the snapshot:\n%s", line, snap)
		}
		return m[1]
	}
	const pin = "80417"
	snap := text("snapshot", nil)
	pinRef, buyRef := ref(snap, `textbox "Card PIN"`), ref(snap, `button "Buy now"`)
	text("computer", map[string]any{"kind": "click", "at": map[string]any{"ref": pinRef}})
	text("computer", map[string]any{"kind": "type", "text": pin})
	bought := text("computer", map[string]any{"kind": "click", "at": map[string]any{"ref": buyRef}})
	if n := site.Purchases.Load(); n != 1 {
		t.Errorf("%d purchases, want 1", n)
	}
	if !strings.Contains(bought, buyRef+` (button \"Buy now\") is at (`) {
		t.Errorf("the click's answer %q does not say where %s resolved", bought, buyRef)
	}
	// The rules flag typing into the password field too; the purchase's
	// question frames the button.
	if len(asked) != 2 || !strings.Contains(asked[0], "rule password") || !strings.Contains(asked[1], "rule purchase") ||
		!strings.Contains(asked[1], "element: framed at (100,300)-(300,340)") {
		t.Errorf("questions %q, want the password's and the purchase's, which frames the button", asked)
	}
	if after := text("snapshot", nil); !strings.Contains(after, `"Bought"`) || strings.Contains(after, pin) {
		t.Errorf("snapshot after buying: want the page's Bought, never the PIN:\n%s", after)
	}
	list := text("list_sessions", nil)
	var sessions struct{ Sessions []struct{ ID string } }
	if err := json.Unmarshal([]byte(list), &sessions); err != nil || len(sessions.Sessions) != 1 {
		t.Fatalf("list_sessions = %s (%v)", list, err)
	}
	text("close_session", map[string]any{"session": sessions.Sessions[0].ID})

	dirs, err := os.ReadDir(out)
	if err != nil || len(dirs) != 1 {
		t.Fatalf("--out holds %v (%v), want one session", dirs, err)
	}
	dir := filepath.Join(out, dirs[0].Name())
	evs, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	resolved := map[string]actions.Point{}
	for _, e := range evs {
		if e.Type == trace.TypeAction && e.Action.HasAt && e.Action.At.Ref != "" {
			resolved[e.Action.At.Ref] = e.Action.At
		}
	}
	for _, r := range []string{pinRef, buyRef} {
		if p, ok := resolved[r]; !ok || p.X <= 0 || p.Y <= 0 {
			t.Errorf("the trace's actions show %s at %v (%v), want the ref beside a point", r, p, ok)
		}
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(pin)) {
				t.Errorf("%s holds the PIN", path)
			}
		}
		return nil
	})
}

// A stdio client that goes away (its pipe to `spotter mcp` closed) ends
// its session at once: spotter mcp exits, and the browser it started for
// the session is gone with it.
func TestStdioDropEndsTheSession(t *testing.T) {
	integration(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := selfMCP(t, "--browsers", "0", "--isolate", "none")
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}})
	if err != nil || res.IsError {
		t.Fatalf("screenshot = %v %+v", err, res)
	}
	browsers := descendants(cmd.Process.Pid)
	if len(browsers) == 0 {
		t.Fatal("spotter mcp has no child process while its session is open: no browser to watch")
	}
	start := time.Now()
	cs.Close() // closes the pipe, then waits for the process
	if cmd.ProcessState == nil {
		t.Fatal("spotter mcp still runs after its client's pipe closed")
	}
	// Chromium's last helpers exit once they see their browser gone.
	if left := waitGone(browsers, 10*time.Second); len(left) > 0 {
		t.Errorf("processes of the session's browser outlived spotter mcp by 10s: %q", left)
	}
	t.Logf("spotter mcp and its %d browser processes ended %v after the pipe closed", len(browsers), time.Since(start).Round(time.Millisecond))
}

// selfMCP is a command that runs this test binary as `spotter mcp` with
// args (TestMain).
func selfMCP(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(self, append([]string{"mcp"}, args...)...)
}

// waitGone waits, for at most bound, until none of pids runs, and returns
// those that still do (pid and command line).
func waitGone(pids []int, bound time.Duration) []string {
	alive := func() []string {
		var left []string
		for _, pid := range pids {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil {
				left = append(left, fmt.Sprintf("%d %.80s", pid, strings.ReplaceAll(string(b), "\x00", " ")))
			}
		}
		return left
	}
	for deadline := time.Now().Add(bound); len(alive()) > 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // polling the condition, bounded
	}
	return alive()
}

// A streamable HTTP client that goes away without a DELETE (three POSTs:
// initialize, initialized, a screenshot; then nothing) has its session
// closed by the idle timeout: the session's browser (one of its own,
// --browsers 0) is gone and its record (--out) closed with its report.
func TestIdleTimeoutReleasesTheBrowser(t *testing.T) {
	integration(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const idle = 2 * time.Second
	out := t.TempDir()
	cmd := selfMCP(t, "--http", "127.0.0.1:0", "--browsers", "0", "--isolate", "none", "--idle-timeout", idle.String(), "--out", out)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	endpointURL := mcpEndpoint(ctx, t, stderr)

	conn := ""
	post := func(body string) string {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpointURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if conn != "" {
			req.Header.Set("Mcp-Session-Id", conn)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("POST %s = %d %s", body, resp.StatusCode, b)
		}
		if conn == "" {
			conn = resp.Header.Get("Mcp-Session-Id")
		}
		return string(b)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"vanishing","version":"1"}}}`)
	post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if res := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"computer","arguments":{"kind":"screenshot"}}}`); !strings.Contains(res, `"image/png"`) || strings.Contains(res, `"isError":true`) {
		t.Fatalf("screenshot = %.300s", res)
	}
	last := time.Now()
	browsers := descendants(cmd.Process.Pid)
	if len(browsers) == 0 {
		t.Fatal("spotter mcp has no child process while its session is open: no browser to watch")
	}
	reports := func() []string {
		m, _ := filepath.Glob(filepath.Join(out, "*", "report.html"))
		return m
	}
	if r := reports(); len(r) != 0 {
		t.Fatalf("the session's record is closed (%v) while it is open", r)
	}
	// The client says nothing more: no DELETE, no other request.
	if left := waitGone(browsers, idle+30*time.Second); len(left) > 0 {
		t.Fatalf("the session's browser runs %v after its client's last call (idle timeout %v): %q", time.Since(last).Round(time.Millisecond), idle, left)
	}
	gone := time.Since(last)
	for len(reports()) == 0 && time.Since(last) < idle+30*time.Second {
		time.Sleep(50 * time.Millisecond) // polling the condition, bounded
	}
	closed := time.Since(last)
	if len(reports()) != 1 {
		t.Fatalf("no report of the session in %s %v after its last call: its record was not closed", out, closed.Round(time.Millisecond))
	}
	if gone < idle {
		t.Errorf("the browser was gone %v after the last call, before the idle timeout %v", gone, idle)
	}
	t.Logf("idle timeout %v: the session's %d browser processes gone %v after its last call, its record closed at %v",
		idle, len(browsers), gone.Round(time.Millisecond), closed.Round(time.Millisecond))
	// The connection is gone too: its id is unknown (404, which tells a
	// client to start anew).
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpointURL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", conn)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a request of the idle connection after the timeout = %d, want 404", resp.StatusCode)
	}
}

// descendants returns the pids of pid's children and theirs.
func descendants(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			var c int
			if _, err := fmt.Sscan(s, &c); err == nil {
				out = append(out, c)
				out = append(out, descendants(c)...)
			}
		}
	}
	return out
}
