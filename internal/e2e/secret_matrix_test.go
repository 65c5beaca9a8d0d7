package e2e

// The `spotter run` row of the secret matrix (issue 14; the serve rows and
// the panel are in web/secret_matrix_test.go): a scripted model types a
// password into a real password field, in one batch with the click on the
// field or alone into the field a turn before focused, and its approval
// ends every way it can. Two forms of the row: the real binary (built with
// go build), asked on a pseudo-terminal or with no terminal at all, and
// the runner's API with an Asker, which is the only way to edit an action
// (a terminal answers yes or no): to another secret, or keeping the text. Every output is searched for the
// password: every file of the run's directory (events.jsonl, report.html,
// result.json), stdout and stderr (or the terminal), the debug logs, what
// the model was sent and what the human was asked. The page's own server
// tells whether the typing happened.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness/script"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/fieldsite"
	"github.com/spotter-harness/spotter/internal/runner"
	"github.com/spotter-harness/spotter/internal/syncbuf"
)

// runLoginPage has a password field at CSS (40..340, 220..256) of an
// 800x600 viewport, which reports its value to its server on every input
// event.
const runLoginPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>Sign in</title>
<style>
body { margin: 0; font: 16px sans-serif; }
.at { position: absolute; margin: 0; }
input { font: 16px sans-serif; box-sizing: border-box; }
</style></head>
<body>
<h1 class="at" style="left:40px; top:20px">Sign in</h1>
<label class="at" style="left:40px; top:190px" for="pass">Password</label>
<input id="pass" name="pass" type="password" autocomplete="current-password" class="at" style="left:40px; top:220px; width:300px; height:36px">
<script>
const pass = document.getElementById('pass');
pass.addEventListener('input', () => fetch('/typed', {method: 'POST', body: pass.value}));
</script>
</body></html>`

// Outcomes of the row's approvals.
const (
	runApproved = "approved"
	runEdited   = "edited"      // runner API only: to the cell's second secret
	runSameEdit = "edited-same" // runner API only: an edit that keeps the model's text
	runDenied   = "denied"
	runRefused  = "refused" // binary only: no terminal, so nobody can approve
	runExpired  = "expired"
	runStopped  = "stopped" // the run is interrupted while the approval is pending
	runNone     = "none"    // --approvals none
)

// runTurns is the script: a click on the password field and the typing,
// in one batch or in two turns, then the end.
func runTurns(secret, pattern string) []script.Turn {
	typed, _ := json.Marshal(secret)
	click := `{"type":"click","x":190,"y":238}`
	typing := `{"type":"type","text":` + string(typed) + `}`
	if pattern == "batch" {
		return []script.Turn{
			{Say: "I will enter the password.", Actions: script.Batch("[" + click + "," + typing + "]")},
			{Say: "Done."},
		}
	}
	return []script.Turn{
		{Say: "I will click the password field.", Actions: script.Batch("[" + click + "]")},
		{Say: "Now the password.", Actions: script.Batch("[" + typing + "]")},
		{Say: "Done."},
	}
}

// runTask is the task file of a cell: the login page, a policy that
// allows it, and the script.
func runTask(t *testing.T, c *runCell) []byte {
	turns, err := json.Marshal(runTurns(c.secret, c.pattern))
	if err != nil {
		t.Fatal(err)
	}
	// JSON is YAML: the turns go in as they are.
	return fmt.Appendf(nil, `name: secret
task: Sign in.
start_url: %s/
display: {width: 800, height: 600, dpr: 1}
policy:
  allow: [click, type]
  hosts: ["%s"]
max_steps: 10
timeout: 2m
model:
  provider: script
  strict: false
  turns: %s
`, c.site.URL, strings.TrimPrefix(c.site.URL, "http://"), turns)
}

// runCell is one cell: its secrets, the page, and its outputs.
type runCell struct {
	outcome, pattern string
	secret, edited   string
	site             *fieldsite.Site
	out              string // the run's directory
	outputs          map[string][]byte
}

func newRunCell(t *testing.T, form, outcome, pattern string) *runCell {
	tag := strings.NewReplacer("runner", "Rn", "binary", "Bi", "approved", "Ap", "edited-same", "Es", "edited", "Ed", "denied", "De",
		"refused", "Rf", "expired", "Xp", "stopped", "St", "none", "No", "batch", "B", "focused", "F").Replace(form + outcome + pattern)
	return &runCell{outcome: outcome, pattern: pattern, secret: "Hunter2-" + tag + "-q7Zx", edited: "Swapped-" + tag + "-k3Wv",
		site: fieldsite.New(t, "/{$}", runLoginPage), out: filepath.Join(t.TempDir(), "run"), outputs: map[string][]byte{}}
}

// TestSecretMatrixRun walks the `spotter run` row.
func TestSecretMatrixRun(t *testing.T) {
	integration(t)
	t.Run("runner", func(t *testing.T) {
		for _, outcome := range []string{runApproved, runEdited, runSameEdit, runDenied, runExpired, runStopped, runNone} {
			for _, pattern := range []string{"batch", "focused"} {
				t.Run(outcome+"/"+pattern, func(t *testing.T) {
					t.Parallel()
					secretRunnerCell(t, newRunCell(t, "runner", outcome, pattern))
				})
			}
		}
	})
	t.Run("binary", func(t *testing.T) {
		bin := buildSpotter(t)
		if _, err := exec.LookPath("script"); err != nil {
			t.Fatalf("util-linux's script, which gives spotter a terminal, is missing: %v", err)
		}
		for _, outcome := range []string{runApproved, runDenied, runRefused, runExpired, runStopped, runNone} {
			for _, pattern := range []string{"batch", "focused"} {
				t.Run(outcome+"/"+pattern, func(t *testing.T) {
					t.Parallel()
					secretBinaryCell(t, bin, newRunCell(t, "binary", outcome, pattern))
				})
			}
		}
	})
}

// secretRunnerCell runs the cell through runner.Run, its Asker deciding.
func secretRunnerCell(t *testing.T, c *runCell) {
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, stop := context.WithCancel(t.Context())
	defer stop()
	var (
		mu    sync.Mutex
		asked [][]byte
	)
	asker := runner.AskerFunc(func(ctx context.Context, r approvals.Request) (approvals.Verdict, error) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Errorf("encode the request: %v", err)
		}
		mu.Lock()
		asked = append(asked, b)
		mu.Unlock()
		switch c.outcome {
		case runApproved:
			return approvals.Verdict{Kind: approvals.Approve, By: "tester"}, nil
		case runEdited, runSameEdit:
			a := r.Action
			a.Text = c.edited
			if c.outcome == runSameEdit {
				a.Text = c.secret
			}
			return approvals.Verdict{Kind: approvals.Edit, Edit: &a, By: "tester"}, nil
		case runDenied:
			return approvals.Verdict{Kind: approvals.Deny, Reason: "not now", By: "tester"}, nil
		case runStopped:
			stop() // the run is interrupted while this waits
		}
		<-ctx.Done()
		return approvals.Verdict{}, context.Cause(ctx)
	})
	task, err := runner.Parse(runTask(t, c))
	if err != nil {
		t.Fatalf("runner.Parse() = %v", err)
	}
	// The task's own script, as a model whose inputs the test can read.
	m := script.New(task.Model.Turns, false)
	o := runner.Options{Out: c.out, Logger: log, Model: m}
	if c.outcome != runNone {
		rules := approvals.Default()
		if c.outcome == runExpired {
			rules.Timeout = 2 * time.Second
		}
		o.Approvals = &runner.ApprovalConfig{Rules: rules, Asker: asker}
	}
	res, err := runner.Run(ctx, task, o)
	if err != nil {
		t.Fatalf("runner.Run() = %v", err)
	}
	want := "end_turn"
	if c.outcome == runStopped {
		want = "error"
	}
	if string(res.Outcome.Stop) != want {
		t.Errorf("runner.Run() stop = %s (%s), want %s", res.Outcome.Stop, res.Outcome.Err, want)
	}
	b, _ := json.Marshal(res)
	c.outputs["runner.Result"] = b
	c.outputs["logs"] = []byte(logs.String())
	c.outputs["model inputs"] = []byte(modelInputs(m.Received))
	mu.Lock()
	for i, b := range asked {
		c.outputs[fmt.Sprintf("request %d as the Asker got it", i+1)] = b
	}
	if (len(asked) > 0) != (c.outcome != runNone) {
		t.Errorf("the Asker was asked %d times, want %v", len(asked), c.outcome != runNone)
	}
	mu.Unlock()
	if c.outcome != runNone && !strings.Contains(logs.String(), "approval needed") {
		t.Errorf("the logs lack the gate's debug line: debug logging was not captured")
	}
	c.check(t)
}

// secretBinaryCell runs the built binary: on a pseudo-terminal, where it
// asks and the test answers (or not, or presses Ctrl-C), or with no
// terminal, where it refuses.
func secretBinaryCell(t *testing.T, bin string, c *runCell) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yaml")
	writeRunFile(t, task, string(runTask(t, c)))
	args := []string{"run", task, "--isolate", "none", "--out", c.out, "-v"}
	switch c.outcome {
	case runNone:
		args = append(args, "--approvals", "none")
	case runExpired:
		rules := filepath.Join(dir, "rules.yaml")
		writeRunFile(t, rules, "timeout: 2s\n")
		args = append(args, "--rules", rules)
	}

	if c.outcome == runRefused || c.outcome == runNone {
		cmd := exec.CommandContext(t.Context(), bin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr // standard input is /dev/null: no terminal
		err := cmd.Run()
		c.outputs["stdout"], c.outputs["stderr"] = []byte(stdout.String()), []byte(stderr.String())
		if err != nil {
			t.Fatalf("spotter %v = %v, want exit 0\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
		}
		c.check(t)
		return
	}

	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + a + "'"
	}
	cmd := exec.CommandContext(t.Context(), "script", "-qefc", "'"+bin+"' "+strings.Join(quoted, " "), "/dev/null")
	keys, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pty, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	shown := readPTY(pty)
	shown.waitFor(t, "Approve? y(es) or n(o)")
	if q := shown.String(); !strings.Contains(q, actions.SecretMask) {
		t.Errorf("the question shows no %q for the typing:\n%s", actions.SecretMask, q)
	}
	switch c.outcome {
	case runApproved:
		io.WriteString(keys, "y\n")
	case runDenied:
		io.WriteString(keys, "n not now\n")
	case runExpired:
		shown.waitFor(t, "no longer waiting for an answer")
	case runStopped:
		io.WriteString(keys, "\x03") // Ctrl-C: the terminal interrupts spotter
	}
	<-shown.ended
	err = cmd.Wait()
	keys.Close()
	c.outputs["the terminal"] = []byte(shown.String())
	if wantErr := c.outcome == runStopped; (err != nil) != wantErr {
		t.Fatalf("spotter on a terminal = %v, want an error %v:\n%s", err, wantErr, shown.String())
	}
	c.check(t)
}

// check checks that the typing reached the page exactly when it should
// have, that the run recorded it masked, and that no output holds the
// password or the human's replacement.
func (c *runCell) check(t *testing.T) {
	t.Helper()
	got := c.site.Received()
	switch c.outcome {
	case runApproved, runSameEdit, runNone:
		if !slices.Contains(got, c.secret) {
			t.Errorf("the page's password field reported %q, want %q: the typing did not happen", got, c.secret)
		}
	case runEdited:
		if !slices.Contains(got, c.edited) || slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.secret) }) {
			t.Errorf("the page's password field reported %q, want %q (the human's edit) and never the model's text", got, c.edited)
		}
	default:
		if len(got) > 0 {
			t.Errorf("the page's password field reported %q, want nothing (%s)", got, c.outcome)
		}
	}

	err := filepath.WalkDir(c.out, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if isImage(b) {
			return nil
		}
		rel, _ := filepath.Rel(c.out, p)
		c.outputs["file "+rel] = b
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", c.out, err)
	}
	for _, f := range []string{trace.EventsFile, trace.ReportFile, "result.json"} {
		if _, ok := c.outputs["file "+f]; !ok {
			t.Errorf("the run wrote no %s", f)
		}
	}
	evs, err := trace.Read(c.out)
	if err != nil {
		t.Fatalf("trace.Read() = %v", err)
	}
	var secretTyped, asked int
	for _, e := range evs {
		switch {
		case e.Type == trace.TypeAction && e.Action.Kind == actions.Type && e.Secret && e.Action.Text == actions.SecretMask:
			secretTyped++
		case e.Type == trace.TypeNote && strings.HasPrefix(e.Text, "approval needed (rule password)"):
			asked++
		}
	}
	if secretTyped == 0 {
		t.Errorf("the trace holds no typing action marked secret and masked")
	}
	if wantAsk := c.outcome != runNone; (asked > 0) != wantAsk {
		t.Errorf("the trace has %d approval notes of the password rule, want some: %v", asked, wantAsk)
	}

	secrets := []string{c.secret}
	if c.outcome == runEdited {
		secrets = append(secrets, c.edited)
	}
	names := make([]string, 0, len(c.outputs))
	for n := range c.outputs {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		b := string(c.outputs[name])
		for _, s := range secrets {
			for _, form := range []string{s, url.QueryEscape(s)} {
				if i := strings.Index(b, form); i >= 0 {
					t.Errorf("%s holds %q: …%s…", name, s, strings.ToValidUTF8(b[max(i-160, 0):min(i+len(form)+60, len(b))], "?"))
					break
				}
			}
		}
	}
	t.Logf("searched %d outputs for the password", len(names))
}
