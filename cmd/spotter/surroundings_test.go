package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/batch"
	"github.com/spotter-harness/spotter/internal/qa"
	"github.com/spotter-harness/spotter/internal/qa/qatest"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/isolate"
)

// `spotter test` takes run's --isolate and --approvals: with containerd
// and the default approvals (the built-in rules, nobody to ask here), a
// test's browser runs in a sandbox that reaches the test's own host only
// (the other host's picture is refused, its server never asked), and the
// model's "Buy now" click is refused, which fails the scripted test with
// the rule's reason while both end-state checks pass. With --isolate none
// --approvals none the same file loads the picture and buys.
func TestTestCommandSurroundings(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	file, pictures := qatest.Shop(t, dir)
	test := func(out string, flags ...string) qa.TestResult {
		var stdout, stderr bytes.Buffer
		args := append([]string{"test", file, "--out", filepath.Join(dir, out)}, flags...)
		if err := run(ctx, args, &stdout, &stderr); exitCode(err) != 1 {
			t.Fatalf("spotter %s = %v, want exit code 1 (the test fails)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		var s qa.Suite
		readJSON(t, filepath.Join(dir, out, "summary.json"), &s)
		if len(s.Tests) != 1 {
			t.Fatalf("summary has %d tests, want 1", len(s.Tests))
		}
		return s.Tests[0]
	}

	r := test("sandboxed", "--isolate", "containerd")
	if !strings.Contains(r.Failure, qatest.Denied) {
		t.Errorf("--isolate containerd: failure %q, want the click denied by the purchase rule", r.Failure)
	}
	if len(r.Checks) != 2 || !r.Checks[0].OK || !r.Checks[1].OK {
		t.Errorf("--isolate containerd: checks %+v, want both passed (the picture refused, nothing bought)", r.Checks)
	}
	if sb := r.Sandbox; sb == nil || sb.Backend != isolate.Containerd || sb.Refused == 0 {
		t.Errorf("--isolate containerd: sandbox %+v, want containerd with the picture refused", sb)
	}
	if n := pictures.Load(); n != 0 {
		t.Errorf("the other host got %d requests from the sandboxed test, want 0", n)
	}

	r = test("open", "--isolate", "none", "--approvals", "none")
	if strings.Contains(r.Failure, "denied") || len(r.Checks) != 2 || r.Checks[0].OK || r.Checks[1].OK {
		t.Errorf("--isolate none --approvals none: failure %q, checks %+v; want the click made and both checks failed", r.Failure, r.Checks)
	}
	if pictures.Load() == 0 {
		t.Errorf("the other host got no request without a sandbox: the refusal above proves nothing")
	}
}

// `spotter batch` takes run's --approvals and --rules, and asks nobody: by
// default (the built-in rules) a job's click on "Buy now" is refused with
// the purchase rule's reason and the job fails, and under --isolate local
// the other host's picture is refused at the job's proxy. With --isolate
// none --approvals none the same job buys, fetches the picture, and
// passes.
func TestBatchSurroundings(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	site := qatest.ShopSite(t)
	pictures := site.Pictures
	u, _ := url.Parse(site.URL)
	file := filepath.Join(dir, "jobs.jsonl")
	job := fmt.Sprintf(`{"id":"shop","task":"Buy the item.","start_url":%q,"display":{"width":800,"height":600},`+
		`"policy":{"allow":["click"],"hosts":[%q]},"model":{"provider":"script","turns":[`+
		`{"actions":[{"type":"click","x":200,"y":320}]},{"say":"done"}]}}`, site.URL, u.Host)
	if err := os.WriteFile(file, []byte(job+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	batchRun := func(out string, wantCode int, flags ...string) (batch.JobResult, runner.Result) {
		var stdout, stderr bytes.Buffer
		args := append([]string{"batch", file, "--out", filepath.Join(dir, out), "--progress", "json"}, flags...)
		if err := run(ctx, args, &stdout, &stderr); exitCode(err) != wantCode {
			t.Fatalf("spotter %s = %v, want exit code %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, wantCode, stdout.String(), stderr.String())
		}
		var sum batch.Summary
		readJSON(t, filepath.Join(dir, out, "summary.json"), &sum)
		if len(sum.Jobs) != 1 {
			t.Fatalf("summary has %d jobs, want 1", len(sum.Jobs))
		}
		var res runner.Result
		readJSON(t, filepath.Join(dir, out, "shop", "result.json"), &res)
		return sum.Jobs[0], res
	}

	j, res := batchRun("guarded", 1, "--isolate", "local")
	if j.Status != batch.Failed || !strings.Contains(j.Error+res.Outcome.Err, `may spend money (rule purchase)`) {
		t.Errorf("default approvals: job %s, error %q, outcome %q; want it failed with the click denied by the purchase rule", j.Status, j.Error, res.Outcome.Err)
	}
	if sb := res.Sandbox; sb == nil || sb.Backend != isolate.Local || sb.Refused == 0 {
		t.Errorf("--isolate local: sandbox %+v, want local with the picture refused", sb)
	}
	if n := pictures.Load(); n != 0 {
		t.Errorf("the other host got %d requests from the guarded job, want 0", n)
	}

	j, _ = batchRun("open", 0, "--isolate", "none", "--approvals", "none")
	if j.Status != batch.Passed {
		t.Errorf("--approvals none: job %s (%s), want it passed: the click went through", j.Status, j.Error)
	}
	if pictures.Load() == 0 {
		t.Errorf("the other host got no request without a proxy: the refusal above proves nothing")
	}
}

// exitCode is the exit code run's error stands for: 0 for none, -1 for
// an error that is not an exitError.
func exitCode(err error) int {
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	}
	return -1
}

// readJSON decodes the JSON file at path into v, failing t if it cannot.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// `spotter mcp` opens its sessions' displays as run opens a task's (in a
// sandbox under --isolate, whose egress proxy refuses the shop's picture
// from another host), applies run's approval rules to them, and puts a
// flagged action to the client's user through MCP elicitation: a form
// that shows the rule, its reason, the action and the element it reaches.
// The user's "no" (with a reason) refuses the click, and the model's
// client gets the reason; their "yes" lets it through; a client that
// cannot ask (no elicitation) has it refused, saying so. The shop counts
// the purchases that reached it.
func TestMCPApprovalsAskTheClient(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	site := qatest.ShopSite(t)
	connect := func(opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
		t.Helper()
		cs := startMCPClient(ctx, t, opts, args...)
		// A click refers to the screenshot the client saw.
		if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}}); err != nil || res.IsError {
			t.Fatalf("screenshot = %v, %+v", err, res)
		}
		return cs
	}
	buy := func(cs *sdk.ClientSession) (bool, string) {
		t.Helper()
		return callText(ctx, t, cs, "computer", map[string]any{"kind": "click", "at": map[string]any{"x": 200, "y": 320}})
	}
	args := []string{"--start-url", site.URL, "--viewport", "800x600"}
	var asked []string
	answer := map[string]any{"approve": false, "reason": "not on this card"}
	elicit := &sdk.ClientOptions{ElicitationHandler: func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		asked = append(asked, r.Params.Message)
		return &sdk.ElicitResult{Action: "accept", Content: answer}, nil
	}}

	cs := connect(elicit, args...)
	failed, text := buy(cs)
	if !failed || !strings.Contains(text, "not on this card") {
		t.Errorf("click the user refused: error %v, %q; want it refused with the user's reason", failed, text)
	}
	t.Logf("refused: %s\nasked:%s", text, strings.Join(asked, "\n"))
	if n := site.Purchases.Load(); n != 0 {
		t.Errorf("%d purchases after the user said no, want 0", n)
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "rule purchase") || !strings.Contains(asked[0], `"Buy now"`) {
		t.Errorf("questions %q, want one naming the purchase rule and the button", asked)
	}
	answer = map[string]any{"approve": true}
	if failed, text := buy(cs); failed {
		t.Errorf("click the user approved failed: %s", text)
	}
	if n := site.Purchases.Load(); n != 1 {
		t.Errorf("%d purchases after the user said yes, want 1", n)
	}

	blind := connect(nil, args...)
	if failed, text := buy(blind); !failed || !strings.Contains(text, "cannot ask its user") || !strings.Contains(text, "--approvals none") ||
		!strings.Contains(text, "/mcp") {
		t.Errorf("click from a client without elicitation: error %v, %q; want it refused, saying the client cannot ask and what to do", failed, text)
	}
	// Every session so far ran under --isolate auto (local: a context of the
	// shared browser, behind an egress proxy of its own): its proxy refused
	// the picture from another host.
	if n := site.Pictures.Load(); n != 0 {
		t.Errorf("the other host got %d requests from the sandboxed sessions, want 0", n)
	}
	open := connect(nil, append(args, "--approvals", "none", "--isolate", "none")...)
	if failed, text := buy(open); failed {
		t.Errorf("click under --approvals none failed: %s", text)
	}
	if n := site.Purchases.Load(); n != 2 {
		t.Errorf("%d purchases, want 2 (the approved one and --approvals none's)", n)
	}
	if site.Pictures.Load() == 0 {
		t.Errorf("the other host got no request under --isolate none: the refusal above proves nothing")
	}
}

// `spotter mcp --out DIR` records each session in a directory of its own:
// every call of the client, refused ones too, answered by a result whose
// screenshot is in the trace; the egress proxy's refusal of the other
// host's picture; no trace of the PIN the client typed into a password
// field (events, report or anything else written); and, once the session
// closes, its report.
func TestMCPRecordsSessions(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	site := qatest.ShopSite(t)
	out := filepath.Join(t.TempDir(), "records")
	const pin = "pin-4417-mcp-secret"
	cs := startMCP(ctx, t, "--start-url", site.URL, "--viewport", "800x600", "--approvals", "none", "--out", out)
	call := func(name string, args map[string]any) (failed bool, text string) {
		t.Helper()
		return callText(ctx, t, cs, name, args)
	}
	at := func(x, y int) map[string]any { return map[string]any{"x": x, "y": y} }
	for _, step := range []struct {
		name string
		args map[string]any
		fail bool
	}{
		{"computer", map[string]any{"kind": "screenshot"}, false},
		{"computer", map[string]any{"kind": "click", "at": at(200, 215)}, false},
		{"computer", map[string]any{"kind": "type", "text": pin}, false},
		{"computer", map[string]any{"kind": "click", "at": at(200, 320)}, false},
		{"navigate", map[string]any{"url": "http://example.com/"}, true}, // off the policy's hosts
	} {
		if failed, text := call(step.name, step.args); failed != step.fail {
			t.Fatalf("%s %v: failed %v (%s), want %v", step.name, step.args, failed, text, step.fail)
		}
	}
	if n := site.Purchases.Load(); n != 1 {
		t.Errorf("%d purchases, want 1", n)
	}
	_, list := call("list_sessions", nil)
	var sessions struct{ Sessions []struct{ ID string } }
	if err := json.Unmarshal([]byte(list), &sessions); err != nil || len(sessions.Sessions) != 1 {
		t.Fatalf("list_sessions = %s (%v), want one session", list, err)
	}
	id := sessions.Sessions[0].ID
	if failed, text := call("close_session", map[string]any{"session": id}); failed {
		t.Fatalf("close_session: %s", text)
	}

	dirs, err := os.ReadDir(out)
	if err != nil || len(dirs) != 1 || !strings.HasPrefix(dirs[0].Name(), id+"-") {
		t.Fatalf("--out holds %v (%v), want one directory named %s-TIME", dirs, err, id)
	}
	dir := filepath.Join(out, dirs[0].Name())
	evs, err := trace.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	calls, results := map[string]string{}, map[string]trace.Event{}
	var refusedEgress, maskedPIN bool
	for _, e := range evs {
		switch e.Type {
		case trace.TypeCall:
			calls[e.CallID] = e.Name
		case trace.TypeResult:
			results[e.CallID] = e
			if e.Shot == "" {
				t.Errorf("result of %s has no screenshot", e.CallID)
			} else if _, err := os.Stat(filepath.Join(dir, e.Shot)); err != nil {
				t.Errorf("result of %s: %v", e.CallID, err)
			}
		case trace.TypeAction:
			maskedPIN = maskedPIN || e.Action.Kind == actions.Type && e.Secret
		case trace.TypeNote:
			refusedEgress = refusedEgress || strings.HasPrefix(e.Text, "egress refused:")
		}
	}
	var refused int
	for id, name := range calls {
		r, ok := results[id]
		switch {
		case !ok:
			t.Errorf("call %s (%s) has no result in the trace", id, name)
		case r.Error != "":
			refused++
		}
	}
	names := slices.Sorted(maps.Values(calls))
	if !slices.Equal(names, []string{"computer", "computer", "computer", "computer", "navigate"}) || refused != 1 {
		t.Errorf("the trace has calls %v, %d of them refused; want the client's 5 (the screenshot, two clicks, the typing, the navigation), the navigation refused",
			calls, refused)
	}
	if !maskedPIN {
		t.Error("the trace has no secret type action: the PIN's field was not seen as secret")
	}
	if !refusedEgress || site.Pictures.Load() != 0 {
		t.Errorf("egress refused noted %v, the other host got %d requests; want the picture refused and noted", refusedEgress, site.Pictures.Load())
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(report, []byte("spotter mcp session "+id)) {
		t.Errorf("report.html: %v; want the session's report", err)
	}
	err = filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if bytes.Contains(b, []byte(pin)) {
			t.Errorf("%s holds the PIN", path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A session whose record cannot be made is not opened, and the
	// client is not told the server's paths.
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	failed, text := call("open_session", nil)
	if !failed || !strings.Contains(text, "could not create the session's record") || strings.Contains(text, out) {
		t.Errorf("open_session with --out unusable: failed %v, %q; want it refused without the path", failed, text)
	}
	if _, list := call("list_sessions", nil); strings.Contains(list, `"id"`) {
		t.Errorf("list_sessions after the refused open = %s, want none", list)
	}
}

// Two servers' sessions of one id in the same second get a directory
// each.
func TestSessionTraceNames(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 26, 21, 50, 0, 0, time.UTC)
	var names []string
	for range 3 {
		name, tw, err := createSessionTrace(dir, "s1", now)
		if err != nil {
			t.Fatal(err)
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(name))
	}
	if want := []string{"s1-20261126-215000", "s1-20261126-215000-2", "s1-20261126-215000-3"}; !slices.Equal(names, want) {
		t.Errorf("names %v, want %v", names, want)
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := createSessionTrace(filepath.Join(dir, "file"), "s1", now); err == nil {
		t.Error("a trace under a file was created")
	}
	// spotter mcp refuses such an --out before it starts.
	err := mcpCmd(t.Context(), []string{"--http", "127.0.0.1:0", "--out", filepath.Join(dir, "file")}, io.Discard, io.Discard)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--out") {
		t.Errorf("spotter mcp --out FILE = %v, want exit 2 naming --out", err)
	}
}

// callText calls tool name on cs and returns whether the result is an
// error and its text content, joined by newlines.
func callText(ctx context.Context, t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (failed bool, text string) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v = %v", name, args, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res.IsError, strings.Join(texts, "\n")
}
