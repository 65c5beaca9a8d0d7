package qa

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/qa/qatest"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/vnc/desktop"
)

// TestSuiteSurroundings: a suite opens each test's display and approver as
// `spotter run` opens a task's (runner.Open). Under local sandboxes the
// test's browser context reaches its own host only (the picture from
// another host is refused at the proxy, and its server never hears of
// it), and under the built-in approval rules with nobody to ask, the
// model's "Buy now" click is refused before it reaches the page, which
// fails the scripted test with the rule's reason. Both are in the test's
// trace and result. The same file without them loads the
// picture and buys, so its checks fail: the suite's surroundings, not the
// page, made the difference.
func TestSuiteSurroundings(t *testing.T) {
	integration(t)
	dir := t.TempDir()
	file, pictures := qatest.Shop(t, dir)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sbx, err := wiring.NewSandboxes(ctx, wiring.SandboxConfig{Backend: isolate.Local})
	if err != nil {
		t.Fatalf("NewSandboxes(local) = %v", err)
	}
	t.Cleanup(func() { sbx.Close(context.Background()) })

	run := func(out string, o Options) TestResult {
		var progress strings.Builder
		o.Out, o.Progress = filepath.Join(dir, out), &progress
		s, err := Run(ctx, []string{file}, o)
		if err != nil {
			t.Fatalf("Run(%s) error = %v", out, err)
		}
		t.Logf("%s:\n%s", out, progress.String())
		if len(s.Tests) != 1 {
			t.Fatalf("Run(%s) ran %d tests, want 1", out, len(s.Tests))
		}
		return s.Tests[0]
	}

	// The refused click fails the scripted test (its call failed), and
	// both checks pass: the purchase was not made, the picture not
	// fetched.
	guarded := run("guarded", Options{Sandboxes: sbx, Approvals: &runner.ApprovalConfig{Rules: approvals.Default()}})
	if guarded.OK || !strings.Contains(guarded.Failure, qatest.Denied) {
		t.Errorf("with sandboxes and approvals: ok %v, failure %q; want the click denied by the purchase rule", guarded.OK, guarded.Failure)
	}
	if len(guarded.Checks) != 2 || !guarded.Checks[0].OK || !guarded.Checks[1].OK {
		t.Errorf("with sandboxes and approvals: checks %+v, want both passed (the picture refused, nothing bought)", guarded.Checks)
	}
	if n := pictures.Load(); n != 0 {
		t.Errorf("the other host got %d requests through the test's proxy, want 0", n)
	}
	switch sb := guarded.Sandbox; {
	case sb == nil:
		t.Errorf("result has no sandbox, want the local sandbox's record")
	case sb.Backend != isolate.Local || sb.Refused == 0 || sb.Allowed == 0:
		t.Errorf("sandbox = %+v, want local with the page allowed and the picture refused", *sb)
	}
	notes := traceNotes(t, filepath.Join(dir, "guarded", guarded.Dir))
	for _, want := range []string{"egress refused: GET 127.0.0.1:", "approval needed (rule purchase)"} {
		if !strings.Contains(notes, want) {
			t.Errorf("trace notes lack %q:\n%s", want, notes)
		}
	}

	open := run("open", Options{})
	if open.OK || !strings.Contains(open.Failure, "picture blocked") || !strings.Contains(open.Failure, "Not bought") {
		t.Errorf("without them: ok %v, failure %q; want both checks failed (the picture loaded, the item bought)", open.OK, open.Failure)
	}
	if pictures.Load() == 0 {
		t.Errorf("the other host got no request without a proxy: the page did not ask for the picture, so the refusal above proves nothing")
	}
	if open.Sandbox != nil {
		t.Errorf("result without sandboxes has sandbox %+v, want none", *open.Sandbox)
	}
}

// traceNotes returns the text of a trace's notes, a line each.
func traceNotes(t *testing.T, dir string) string {
	t.Helper()
	evs, err := trace.Read(dir)
	if err != nil {
		t.Fatalf("read the trace in %s: %v", dir, err)
	}
	var b strings.Builder
	for _, e := range evs {
		if e.Type == trace.TypeNote {
			b.WriteString(e.Text + "\n")
		}
	}
	return b.String()
}

// TestVNCTest: a test on a desktop over VNC opens it as `spotter run`
// opens a vnc display. A file that gives no display size runs at the
// desktop's own (1024x768 here, not the 1280x800 default), and one whose
// size is not the desktop's fails with the sizes to set.
func TestVNCTest(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	desk, err := desktop.Start(ctx, desktop.Config{Size: screen.Size{W: 1024, H: 768}, NoWindowManager: true})
	if err != nil {
		t.Fatalf("start a desktop: %v", err)
	}
	t.Cleanup(func() { desk.Close() })
	dir := t.TempDir()
	write := func(name, display string) string {
		file := filepath.Join(dir, name+".yaml")
		body := fmt.Sprintf(`name: %s
task: Look at the desktop.
start_url: "about:blank"
vnc: {network: unix, addr: %q}
%s
policy: {allow: [click]}
model:
  turns:
    - actions: [{type: click, x: 1000, y: 700}]
    - say: PASS
checks:
  - verdict: "^PASS"
`, name, desk.Socket, display)
		if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return file
	}
	own := write("own-size", "")
	wrong := write("wrong-size", "display: {width: 1280, height: 800}")
	s, err := Run(ctx, []string{own, wrong}, Options{Out: filepath.Join(dir, "out")})
	if err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if r := s.Tests[0]; !r.OK || r.Outcome.Calls != 1 {
		t.Errorf("%s: ok %v, %d calls, failure %q; want a pass with its click (1000,700) inside the 1024x768 desktop", r.Name, r.OK, r.Outcome.Calls, r.Failure)
	}
	want := "the VNC server's screen is 1024x768, but the display is 1280x800: set display.width and display.height to 1024 and 768"
	if r := s.Tests[1]; r.OK || !strings.Contains(r.Failure, want) {
		t.Errorf("%s: ok %v, failure %q; want %q", r.Name, r.OK, r.Failure, want)
	}
}
