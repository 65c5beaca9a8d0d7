package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/internal/wiring"
)

// TestDemoTasks runs the example tasks on a real Chromium: the scripted
// one, and the one that replays a cassette of Claude's answers through the
// real Anthropic adapter. The demo app itself must report every stage done,
// and the run must leave a trace, a report and result.json.
func TestDemoTasks(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run tests against a real Chromium")
	}
	for _, file := range []string{"demo.yaml", "demo-anthropic.yaml"} {
		t.Run(file, func(t *testing.T) { testDemoTask(t, "../../examples/"+file, "") })
	}
	// The same scripted task on Chromium driven through playwright-go.
	t.Run("demo.yaml on playwright", func(t *testing.T) { testDemoTask(t, "../../examples/demo.yaml", wiring.Playwright) })
}

func testDemoTask(t *testing.T, file, backend string) {
	task, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if backend != "" {
		task.Display.Backend = backend
	}
	out := filepath.Join(t.TempDir(), "run")
	// As `spotter run` runs it: default approvals, nobody to ask. Nothing
	// in the demo may need a human.
	res, err := Run(t.Context(), task, Options{Out: out, Approvals: &ApprovalConfig{}})
	if err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if !res.OK || res.Outcome.Failed != 0 {
		t.Errorf("outcome = %+v, want end_turn with no failed calls", res.Outcome)
	}
	if res.Demo == nil || len(res.Demo.Missing) != 0 {
		t.Errorf("demo state = %+v, want every stage completed", res.Demo)
	}
	if got := res.Demo.Completed["checkin"]; got != "Ada Lovelace" {
		t.Errorf("checked-in name = %q, want %q (typed text must arrive exactly)", got, "Ada Lovelace")
	}
	var saved Result
	b, err := os.ReadFile(filepath.Join(out, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &saved); err != nil || saved.Outcome.Stop != res.Outcome.Stop {
		t.Errorf("result.json = %s (err %v), want the run's outcome", b, err)
	}
	evs, err := trace.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	shots, _ := filepath.Glob(filepath.Join(out, trace.ShotsDir, "*"))
	if len(evs) < 10 || len(shots) != res.Outcome.Calls+1 {
		t.Errorf("trace has %d events and %d screenshots, want many events and one screenshot per call plus the first", len(evs), len(shots))
	}
	if fi, err := os.Stat(res.Report); err != nil || fi.Size() < 10000 {
		t.Errorf("report %s: %v, want a real report", res.Report, err)
	}
}
