package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/internal/batch"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
)

// The test binary is also the containerd sandboxes' agent ("agent ...").
func TestMain(m *testing.M) {
	// The test binary stands in for spotter: the agent in a sandbox, and
	// `spotter mcp` for the MCP clients from npm (mcpclients_test.go).
	if len(os.Args) > 1 && (os.Args[1] == "agent" || os.Args[1] == "mcp") {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
		err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// integration skips t unless SPOTTER_INTEGRATION=1; then a missing Xvnc,
// xterm or Chromium fails the test.
func integration(t *testing.T) {
	t.Helper()
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Xvnc desktop and Chromium")
	}
}

// xtermCat returns a desktop's command: an xterm at the top left (cells
// at 100,100 are inside it) whose shell copies what is typed into proof.
func xtermCat(proof string) []string {
	return []string{"xterm", "-geometry", "80x24+0+0", "-e", "sh", "-c", "cat > " + proof}
}

// waitFile waits until path holds want, and fails t at ctx's end.
func waitFile(ctx context.Context, t *testing.T, path, want string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := os.ReadFile(path)
		if err == nil && string(got) == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s = %q (%v) at the deadline, want %q: the typing did not reach the desktop's terminal", path, got, err, want)
		case <-tick.C:
		}
	}
}

// desktopTask is a task file whose scripted model clicks into the
// terminal, types a line, and tries a browser-only action, which the
// desktop refuses in words.
func desktopTask(proof string) string {
	cmd, _ := json.Marshal(xtermCat(proof))
	return `name: desktop
task: type a line into the terminal
display: {backend: desktop, width: 1024, height: 768, command: ` + string(cmd) + `}
policy: {allow: [click, type, navigate, screenshot], hosts: [example.com]}
model:
  turns:
    - say: I click into the terminal.
      actions: [{type: click, x: 100, y: 100}]
    - say: I type a line.
      actions: '[{"type": "type", "text": "spotter-ok\n"}]'
    - say: A desktop has no URL bar.
      actions: [{type: navigate, url: "https://example.com/"}]
      expect_error: "not a browser"
    - say: Done.
`
}

// `spotter run` runs a task on a fresh Xvnc desktop: the clicks and keys
// reach the terminal, the result, trace and report are written, and a
// browser-only action is refused with an error that says why.
func TestRunDesktopTask(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	proof := filepath.Join(dir, "proof.txt")
	task := filepath.Join(dir, "desktop.yaml")
	if err := os.WriteFile(task, []byte(desktopTask(proof)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"run", task, "--out", out, "--isolate", "none"}, &stdout, &stderr); err != nil {
		t.Fatalf("spotter run = %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	waitFile(ctx, t, proof, "spotter-ok\n")
	var res runner.Result
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Display != "desktop" || res.Outcome.Calls != 3 || res.Outcome.Failed != 1 {
		t.Errorf("result.json = ok %v, display %q, %d calls (%d failed), want ok, desktop, 3 calls (1 failed)",
			res.OK, res.Display, res.Outcome.Calls, res.Outcome.Failed)
	}
	if _, err := os.Stat(filepath.Join(out, "report.html")); err != nil {
		t.Errorf("no report: %v", err)
	}
	events, err := os.ReadFile(filepath.Join(out, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(events, []byte("not a browser")) {
		t.Errorf("events.jsonl lacks the navigate's error saying the desktop is not a browser")
	}
}

// `spotter batch` runs a Chromium job and a desktop job side by side; each
// gets its own display, and each's input arrives.
func TestBatchMixesChromiumAndDesktop(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	clicked := make(chan struct{}, 1)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/clicked":
			select {
			case clicked <- struct{}{}:
			default:
			}
		default:
			fmt.Fprint(w, `<!doctype html><body style="margin:0;height:100vh" onclick="fetch('/clicked')">click anywhere</body>`)
		}
	}))
	defer page.Close()
	host := strings.TrimPrefix(page.URL, "http://")

	dir := t.TempDir()
	proof := filepath.Join(dir, "proof.txt")
	cmd, _ := json.Marshal(xtermCat(proof))
	jobs := fmt.Sprintf(`{"id":"browser","task":"click the page","start_url":%q,"policy":{"allow":["click"],"hosts":[%q]},"model":{"turns":[{"say":"click","actions":[{"type":"click","x":200,"y":200}]},{"say":"done"}]}}
{"id":"desktop","task":"type into the terminal","display":{"backend":"desktop","width":1024,"height":768,"command":%s},"policy":{"allow":["click","type"]},"model":{"turns":[{"say":"click","actions":[{"type":"click","x":100,"y":100}]},{"say":"type","actions":[{"type":"type","text":"batch-ok\n"}]},{"say":"done"}]}}
`, page.URL+"/", host, cmd)
	file := filepath.Join(dir, "jobs.jsonl")
	if err := os.WriteFile(file, []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"batch", file, "--out", out, "--parallel", "2", "--isolate", "none", "--progress", "json"}, &stdout, &stderr); err != nil {
		t.Fatalf("spotter batch = %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	select {
	case <-clicked:
	case <-ctx.Done():
		t.Fatal("the Chromium job's click never reached the page")
	}
	waitFile(ctx, t, proof, "batch-ok\n")
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum batch.Summary
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	displays := map[string]string{}
	for _, j := range sum.Jobs {
		if j.Status != batch.Passed {
			t.Errorf("job %s: %s (%s), want passed", j.ID, j.Status, j.Error)
		}
		displays[j.ID] = j.Display
	}
	if displays["browser"] != "chromium" || displays["desktop"] != "desktop" {
		t.Errorf("summary displays = %v, want browser on chromium and desktop on desktop", displays)
	}
}

// An MCP session of `spotter mcp --display desktop` opens a desktop: a
// click and typed text reach its terminal, and navigate says that a
// desktop is not a browser.
func TestMCPOpensADesktop(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	proof := filepath.Join(t.TempDir(), "proof.txt")
	cmd, _ := json.Marshal(xtermCat(proof))
	display := fmt.Sprintf(`{backend: desktop, width: 1024, height: 768, command: %s}`, cmd)
	policy := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policy, []byte("allow: [click, type, navigate, screenshot]\nhosts: [example.com]\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// On the host: the proof file is written by the desktop's xterm.
	cs := startMCP(ctx, t, "--display", display, "--policy", policy, "--isolate", "none")
	callTool := func(name string, args map[string]any) (images int, errText string) {
		t.Helper()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("CallTool(%s, %v) = %v", name, args, err)
		}
		for _, c := range res.Content {
			switch c := c.(type) {
			case *sdk.ImageContent:
				images++
			case *sdk.TextContent:
				if rest, ok := strings.CutPrefix(c.Text, "error: "); ok {
					errText = rest
				}
			}
		}
		return images, errText
	}
	if n, e := callTool("computer", map[string]any{"kind": "screenshot"}); n != 1 || e != "" {
		t.Fatalf("screenshot: %d images, error %q; want one image", n, e)
	}
	if n, e := callTool("computer", map[string]any{"kind": "click", "at": map[string]any{"x": 100, "y": 100}}); n != 1 || e != "" {
		t.Fatalf("click: %d images, error %q; want it run", n, e)
	}
	if n, e := callTool("computer", map[string]any{"kind": "type", "text": "mcp-ok\n"}); n != 1 || e != "" {
		t.Fatalf("type: %d images, error %q; want it run", n, e)
	}
	waitFile(ctx, t, proof, "mcp-ok\n")
	if _, e := callTool("navigate", map[string]any{"url": "https://example.com/"}); !strings.Contains(e, "not a browser") {
		t.Errorf("navigate on a desktop: error %q, want it to say the desktop is not a browser", e)
	}
}

// A desktop session under `spotter serve`, supervised over the HTTP API:
// every action waits for a human (supervise all), and runs once approved;
// an operator then takes over and types into the desktop, and hands it
// back.
func TestServeSupervisesADesktopSession(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const token = "desktop-test-token-0123456789abcdef"
	proof := filepath.Join(t.TempDir(), "proof.txt")
	mcpProof := filepath.Join(t.TempDir(), "proof.txt")
	mcpCmd, _ := json.Marshal(xtermCat(mcpProof))
	api := &serveAPI{t: t, ctx: ctx, token: token, base: startServe(t, "--token", token, "--displays", "chromium, desktop",
		"--mcp-display", fmt.Sprintf("{backend: desktop, width: 1024, height: 768, command: %s}", mcpCmd))}

	id := api.superviseDesktopTurn(desktopSessionSpec("served-ok\n", proof))
	waitFile(ctx, t, proof, "served-ok\n")
	api.checkLiveView(id)
	api.takeOverAndType(id, proof)
	api.ok("POST", "/session/"+id+"/stop", nil, nil)
	api.executorOnDesktop()
	api.mcpOnDesktop(mcpProof)
}

// serveAPI is a client of a spotter serve under test, holding its token.
type serveAPI struct {
	t           *testing.T
	ctx         context.Context
	base, token string
}

// do sends body as JSON with the token.
func (a *serveAPI) do(method, path string, body any) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(a.ctx, method, a.base+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return http.DefaultClient.Do(req)
}

// ok sends body and fails the test unless the answer is 200; the answer's
// JSON goes into into, when given.
func (a *serveAPI) ok(method, path string, body, into any) {
	a.t.Helper()
	resp, err := a.do(method, path, body)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		a.t.Fatalf("%s %s = %d %s, want 200", method, path, resp.StatusCode, b)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
}

// pending waits for the session's one pending approval and returns its
// id.
func (a *serveAPI) pending(id string) string {
	a.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var list struct {
			Approvals []struct {
				ID string `json:"id"`
			} `json:"approvals"`
		}
		a.ok("GET", "/approvals?status=pending&session="+id, nil, &list)
		if len(list.Approvals) == 1 {
			return list.Approvals[0].ID
		}
		select {
		case <-a.ctx.Done():
			a.t.Fatalf("no pending approval for session %s at the deadline", id)
		case <-tick.C:
		}
	}
}

// createSession PUTs spec and returns the session's id once the creating
// stream ends (the first action waits for a human).
func (a *serveAPI) createSession(spec map[string]any) string {
	a.t.Helper()
	resp, err := a.do("PUT", "/session", spec)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	id := resp.Header.Get("X-Session-Id")
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || id == "" {
		a.t.Fatalf("PUT /session = %d %s, want 200 with a session id", resp.StatusCode, b)
	}
	return id
}

// desktopSessionSpec is a supervised desktop session whose scripted
// model clicks into the terminal and types text; the terminal writes what
// it receives to proof.
func desktopSessionSpec(text, proof string) map[string]any {
	return map[string]any{
		"messages": []any{map[string]any{"role": "user", "content": "type a line into the terminal"}},
		"model": map[string]any{"provider": "script", "turns": []any{
			map[string]any{"say": "I click into the terminal.", "actions": []any{map[string]any{"type": "click", "x": 100, "y": 100}}},
			map[string]any{"say": "I type.", "actions": []any{map[string]any{"type": "type", "text": text}}},
			map[string]any{"say": "Done."},
		}},
		"display":   map[string]any{"backend": "desktop", "width": 1024, "height": 768, "command": xtermCat(proof)},
		"approvals": map[string]any{"supervise": "all"},
	}
}

// superviseDesktopTurn creates the session, approves each of its two
// actions as its event stream asks, and returns once its turn ends. A
// desktop's approval requests say they were decided without a DOM.
func (a *serveAPI) superviseDesktopTurn(spec map[string]any) string {
	t := a.t
	id := a.createSession(spec)
	events, err := a.do("GET", "/session/"+id+"/events?after=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	evc := make(chan sseEvent)
	rctx, stopReader := context.WithCancel(a.ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopReader()
	defer events.Body.Close() // ends the reader's Scan
	wg.Go(func() { readSSE(rctx, events.Body, evc) })
	approved, noDOM := 0, false
	for end := false; !end; {
		var ev sseEvent
		select {
		case ev = <-evc:
		case <-a.ctx.Done():
			t.Fatalf("the session's turn did not end (%d approvals given)", approved)
		}
		switch ev.typ {
		case "permission_request":
			var pr struct {
				ApprovalID string `json:"approvalId"`
				NoDOM      bool   `json:"noDom"`
			}
			if err := json.Unmarshal(ev.data, &pr); err != nil || pr.ApprovalID == "" {
				t.Fatalf("permission_request %s: %v", ev.data, err)
			}
			noDOM = noDOM || pr.NoDOM
			a.ok("POST", "/approvals/"+pr.ApprovalID, map[string]any{"decision": "approve"}, nil)
			approved++
		case "turn_stop":
			end = turnEnded(t, ev.data)
		}
	}
	if approved != 2 {
		t.Errorf("approved %d requests, want 2 (the click and the typing)", approved)
	}
	if !noDOM {
		t.Errorf("no permission_request said noDom: a desktop's approvals are decided on the action alone, and say so")
	}
	return id
}

// sseEvent is one event of a session's stream.
type sseEvent struct {
	typ  string
	data json.RawMessage
}

// readSSE sends r's events to evc until r ends or ctx is done.
func readSSE(ctx context.Context, r io.Reader, evc chan<- sseEvent) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var typ string
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			typ = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			select {
			case evc <- sseEvent{typ, json.RawMessage(v)}:
			case <-ctx.Done():
				return
			}
		}
	}
}

// turnEnded reports whether a turn_stop ends the turn: tool_use means it
// waits for a human, end_turn that it ended; anything else fails.
func turnEnded(t *testing.T, data json.RawMessage) bool {
	t.Helper()
	var ts struct {
		StopReason string `json:"stopReason"`
	}
	json.Unmarshal(data, &ts)
	switch ts.StopReason {
	case "tool_use":
		return false
	case "end_turn":
		return true
	}
	t.Fatalf("turn_stop %s, want end_turn", data)
	return true
}

// checkLiveView checks that the panel's live view shows the desktop.
func (a *serveAPI) checkLiveView(id string) {
	resp, err := a.do("GET", "/session/"+id+"/screen", nil)
	if err != nil {
		a.t.Fatal(err)
	}
	live, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(live, []byte("\x89PNG")) {
		a.t.Errorf("GET /session/%s/screen = %d with %d bytes, want a PNG of the desktop", id, resp.StatusCode, len(live))
	}
}

// takeOverAndType has the operator take over and type into the terminal:
// the input reaches the desktop, answers with a screenshot and is
// audited.
func (a *serveAPI) takeOverAndType(id, proof string) {
	t := a.t
	a.ok("POST", "/session/"+id+"/takeover", map[string]any{"active": true}, nil)
	var shot struct {
		Screenshot struct {
			MimeType string `json:"mimeType"`
			Data     string `json:"data"`
		} `json:"screenshot"`
	}
	a.ok("POST", "/session/"+id+"/input", map[string]any{"kind": "click", "at": map[string]any{"x": 100, "y": 100}, "has_at": true}, &shot)
	a.ok("POST", "/session/"+id+"/input", map[string]any{"kind": "type", "text": "operator-ok\n"}, &shot)
	if shot.Screenshot.MimeType != "image/png" || shot.Screenshot.Data == "" {
		t.Errorf("input answered screenshot %q (%d bytes), want a PNG", shot.Screenshot.MimeType, len(shot.Screenshot.Data))
	}
	waitFile(a.ctx, t, proof, "served-ok\noperator-ok\n")
	a.ok("POST", "/session/"+id+"/takeover", map[string]any{"active": false}, nil)

	var audit struct {
		Audit []struct {
			Action string `json:"action"`
		} `json:"audit"`
	}
	a.ok("GET", "/audit?session="+id, nil, &audit)
	var inputs int
	for _, e := range audit.Audit {
		if e.Action == "input" {
			inputs++
		}
	}
	if inputs != 2 {
		t.Errorf("audit has %d inputs, want the operator's 2", inputs)
	}
}

// executorOnDesktop runs an executor session on a desktop: the client's
// own loop posts Anthropic tool_use blocks, which reach the terminal.
func (a *serveAPI) executorOnDesktop() {
	t := a.t
	proof := filepath.Join(t.TempDir(), "proof.txt")
	var es struct {
		ID    string             `json:"id"`
		Image struct{ W, H int } `json:"image"`
	}
	a.ok("POST", "/executor/sessions", map[string]any{"provider": "anthropic",
		"display":   map[string]any{"backend": "desktop", "width": 1024, "height": 768, "command": xtermCat(proof)},
		"approvals": map[string]any{"supervise": "none"}}, &es)
	if es.ID == "" || es.Image.W != 1024 || es.Image.H != 768 {
		t.Fatalf("POST /executor/sessions = %+v, want an id and a 1024x768 image", es)
	}
	for i, input := range []map[string]any{
		{"action": "left_click", "coordinate": []int{100, 100}},
		{"action": "type", "text": "executor-ok\n"},
	} {
		var res struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		}
		a.ok("POST", "/executor/sessions/"+es.ID+"/call?wait=60s",
			map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i+1), "name": "computer", "input": input}, &res)
		if res.Status != "done" || res.Error != "" {
			t.Fatalf("call %v: status %q, error %q; want done without an error", input, res.Status, res.Error)
		}
	}
	waitFile(a.ctx, t, proof, "executor-ok\n")
	a.ok("POST", "/session/"+es.ID+"/stop", nil, nil)
}

// mcpOnDesktop opens an MCP session at /mcp, on the desktop --mcp-display
// names, and types into its terminal.
func (a *serveAPI) mcpOnDesktop(proof string) {
	t := a.t
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(a.ctx, &sdk.StreamableClientTransport{Endpoint: a.base + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{a.token}}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer cs.Close()
	for _, args := range []map[string]any{
		{"kind": "screenshot"},
		{"kind": "click", "at": map[string]any{"x": 100, "y": 100}},
		{"kind": "type", "text": "serve-mcp-ok\n"},
	} {
		res, err := cs.CallTool(a.ctx, &sdk.CallToolParams{Name: "computer", Arguments: args})
		if err != nil {
			t.Fatalf("MCP computer %v = %v", args, err)
		}
		if res.IsError {
			var text []string
			for _, c := range res.Content {
				if tc, ok := c.(*sdk.TextContent); ok {
					text = append(text, tc.Text)
				}
			}
			t.Fatalf("MCP computer %v failed: %s", args, strings.Join(text, "; "))
		}
	}
	waitFile(a.ctx, t, proof, "serve-mcp-ok\n")
}

// bearer adds the server's token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// `spotter run --isolate containerd` runs a desktop task in a sandbox: the
// desktop (its default xterm) runs inside it, and what the model types
// reaches the terminal there, which turns the terminal red; the run's
// last screenshot shows it.
func TestRunDesktopTaskInSandbox(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	task := filepath.Join(dir, "desktop.yaml")
	const body = `name: sandboxed-desktop
task: turn the terminal red
display: {backend: desktop, width: 1024, height: 768}
policy: {allow: [click, type]}
model:
  turns:
    - say: I click into the terminal.
      actions: [{type: click, x: 100, y: 100}]
    - say: I make it red.
      actions: '[{"type": "type", "text": "printf ''\\033[41m\\033[2J''\n"}]'
    - say: I look again.
      actions: [{type: screenshot}]
    - say: And once more.
      actions: [{type: screenshot}]
    - say: Done.
`
	if err := os.WriteFile(task, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "run")
	var stdout, stderr bytes.Buffer
	if err := run(ctx, []string{"run", task, "--out", out, "--isolate", "containerd"}, &stdout, &stderr); err != nil {
		t.Fatalf("spotter run --isolate containerd = %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var res runner.Result
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Display != "desktop" || res.Sandbox == nil || res.Sandbox.Backend != "containerd" {
		t.Fatalf("result.json = ok %v, display %q, sandbox %+v; want ok, a desktop in a containerd sandbox", res.OK, res.Display, res.Sandbox)
	}
	shots, err := filepath.Glob(filepath.Join(out, "shots", "*.png"))
	if err != nil || len(shots) == 0 {
		t.Fatalf("no screenshots in the trace (%v)", err)
	}
	// The shell's answer to the typing shows in a screenshot after it
	// (the screenshots are taken as the screen settles, so the one right
	// after the typing may show the echo without the answer).
	slices.Sort(shots)
	var seen []string
	for _, shot := range shots {
		b, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("decode %s: %v", shot, err)
		}
		r, g, bl, _ := img.At(300, 200).RGBA()
		if r>>8 >= 150 && g>>8 <= 80 && bl>>8 <= 80 {
			return
		}
		seen = append(seen, fmt.Sprintf("%s rgb(%d,%d,%d)", filepath.Base(shot), r>>8, g>>8, bl>>8))
	}
	t.Errorf("no screenshot shows the terminal red at (300,200) (%s): the typing did not reach the sandbox's terminal", strings.Join(seen, ", "))
}

// A desktop session whose server stops while an approval is pending
// resumes after the restart (Server.Start): a fresh desktop is started,
// the approval is still pending, and once approved the turn goes on there.
func TestServeRestoresADesktopSession(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	const token = "desktop-restore-token-0123456789abcdef"
	data := t.TempDir()
	proof := filepath.Join(t.TempDir(), "proof.txt")

	// serveOnce runs spotter serve on data until stop is called.
	serveOnce := func() (base string, stop func()) {
		pr, pw := io.Pipe()
		sctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		var stderr bytes.Buffer
		go func() {
			err := serveCmd(sctx, []string{"--addr", "127.0.0.1:0", "--data", data, "--isolate", "none", "--token", token,
				"--displays", "desktop"}, pw, &stderr)
			pw.CloseWithError(io.EOF)
			done <- err
		}()
		listening := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				if u, ok := strings.CutPrefix(sc.Text(), "spotter: listening on "); ok {
					listening <- u
				}
			}
			close(listening)
		}()
		stop = func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v\n%s", err, stderr.String())
			}
		}
		select {
		case u, ok := <-listening:
			if !ok {
				stop()
				t.Fatalf("serve exited before listening")
			}
			return u, stop
		case <-ctx.Done():
			stop()
			t.Fatal("serve did not listen")
		}
		return "", stop
	}
	base, stop := serveOnce()
	api := &serveAPI{t: t, ctx: ctx, token: token, base: base}
	id := api.createSession(desktopSessionSpec("restored-ok\n", proof))
	first := api.pending(id)
	stop()

	base, stop = serveOnce()
	defer stop()
	api.base = base
	if again := api.pending(id); again != first {
		t.Fatalf("after the restart the pending approval is %s, want %s", again, first)
	}
	api.ok("POST", "/approvals/"+first, map[string]any{"decision": "approve"}, nil)
	second := api.pending(id)
	api.ok("POST", "/approvals/"+second, map[string]any{"decision": "approve"}, nil)
	waitFile(ctx, t, proof, "restored-ok\n")
	api.ok("POST", "/session/"+id+"/stop", nil, nil)
}

// startMCP runs `spotter mcp --http` with args in this process until the
// test ends, and returns a client session connected to it.
func startMCP(ctx context.Context, t *testing.T, args ...string) *sdk.ClientSession {
	t.Helper()
	return startMCPClient(ctx, t, nil, args...)
}

// startMCPClient is startMCP with a client of options opts.
func startMCPClient(ctx context.Context, t *testing.T, opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	t.Helper()
	endpoint := startMCPServer(ctx, t, args...)
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v", endpoint, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// startMCPServer runs `spotter mcp --http` with args in this process until
// the test ends, and returns its endpoint.
func startMCPServer(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	pr, pw := io.Pipe()
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := mcpCmd(sctx, append([]string{"--http", "127.0.0.1:0"}, args...), io.Discard, pw)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("spotter mcp: %v", err)
		}
	})
	return mcpEndpoint(ctx, t, pr)
}

// mcpEndpoint reads `spotter mcp --http`'s stderr for the endpoint it
// serves, and the rest of it to the end.
func mcpEndpoint(ctx context.Context, t *testing.T, stderr io.Reader) string {
	t.Helper()
	addr := make(chan string, 1)
	go func() {
		defer close(addr)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "spotter mcp: streamable HTTP on "); ok {
				addr <- u
			}
		}
	}()
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatal("spotter mcp exited before it listened")
		}
		return u
	case <-ctx.Done():
		t.Fatal("spotter mcp did not listen")
	}
	return ""
}

// spotter mcp's default display is a Chromium of each session's own, on
// the start page.
func TestMCPChromium(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs := startMCP(ctx, t, "--demo")
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}})
	if err != nil || res.IsError {
		t.Fatalf("screenshot = %v, %+v", err, res)
	}
	images := 0
	for _, c := range res.Content {
		if _, ok := c.(*sdk.ImageContent); ok {
			images++
		}
	}
	if images != 1 {
		t.Errorf("screenshot gave %d images, want 1", images)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "click", "at": map[string]any{"x": 10, "y": 10}}})
	if err != nil || res.IsError {
		t.Fatalf("click = %v, %+v", err, res)
	}
}

// spotter mcp --browsers 1: the sessions' displays are browser contexts of
// one Chromium the command launched; a bad value, or a display that is
// not Chromium, is refused before anything starts.
func TestMCPSharedBrowser(t *testing.T) {
	for _, args := range [][]string{{"--browsers", "-1"}, {"--browsers", "1", "--display", "desktop"}} {
		err := mcpCmd(t.Context(), append([]string{"--http", "127.0.0.1:0"}, args...), io.Discard, io.Discard)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--browsers") {
			t.Errorf("spotter mcp %v = %v, want exit 2 naming --browsers", args, err)
		}
	}
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	before := isolatetest.BrowserChildren(t)
	cs := startMCP(ctx, t, "--demo", "--browsers", "1")
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}})
	if err != nil || res.IsError {
		t.Fatalf("screenshot = %v, %+v", err, res)
	}
	if n := isolatetest.NewBrowsers(t, before); n != 1 {
		t.Errorf("spotter mcp --browsers 1 with a session open runs %d browsers, want 1", n)
	}
}
