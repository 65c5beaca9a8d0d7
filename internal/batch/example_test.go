package batch_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/batch"
	"github.com/spotter-harness/spotter/internal/runner"
)

func ExampleParse() {
	const jobsFile = `{"id":"checkin","start_url":"demo:/","model":{"provider":"script","turns":[{"say":"done"}]}}
{"start_url":"about:blank","max_steps":5,"model":{"provider":"anthropic","cassette":"cassettes/demo-anthropic.json"}}
`
	// Relative paths are relative to the jobs file's directory; the
	// cassette must be there (Parse reads it).
	jobs, err := batch.Parse(strings.NewReader(jobsFile), "../../examples")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, j := range jobs {
		fmt.Printf("%s (line %d): %s, %s model", j.ID, j.Line, j.Task.StartURL, j.Task.Model.Provider)
		if c := j.Task.Model.Cassette; c != "" {
			fmt.Printf(" replaying %s", c)
		}
		fmt.Println()
	}
	for i := range 2 {
		s := batch.Shard{Index: i, Count: 2}
		fmt.Printf("shard %s runs %s\n", s, s.Select(jobs)[0].ID)
	}
	// Output:
	// checkin (line 1): demo:/, script model
	// line-2 (line 2): about:blank, anthropic model replaying ../../examples/cassettes/demo-anthropic.json
	// shard 0/2 runs checkin
	// shard 1/2 runs line-2
}

func ExampleRun() {
	dir, err := os.MkdirTemp("", "batch-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	jobs := []batch.Job{
		{ID: "a", Line: 1, Task: runner.Task{Name: "a", Task: "pass"}},
		{ID: "b", Line: 2, Task: runner.Task{Name: "b", Task: "fail"}},
	}
	// A stand-in for runner.Run (or a sandboxed runner): it writes
	// result.json where a real run would.
	runJob := func(ctx context.Context, t runner.Task, o runner.Options) (runner.Result, error) {
		res := runner.Result{Task: t.Name, Started: time.Now(), Outcome: harness.Outcome{Stop: harness.StopEndTurn}}
		if t.Task == "fail" {
			res.Outcome = harness.Outcome{Stop: harness.StopMaxSteps, Err: "step cap of 50 reached"}
		}
		res.OK = res.Outcome.OK()
		return res, writeResult(o.Out, res)
	}
	cfg := batch.Config{Out: dir, Parallel: 2, Runner: runJob}
	sum, err := batch.Run(context.Background(), jobs, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("passed %d, failed %d of %d\n", sum.Passed, sum.Failed, sum.Total)
	for _, j := range sum.Jobs {
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %s %s", j.ID, j.Status, j.Error)))
	}

	// Running the same batch again reuses the finished jobs.
	sum, _ = batch.Run(context.Background(), jobs, cfg)
	fmt.Printf("reused %d\n", sum.Reused)
	summary, junit := batch.Files(dir, batch.Shard{})
	fmt.Println(filepath.Base(summary), filepath.Base(junit))
	// Output:
	// passed 1, failed 1 of 2
	// a: passed
	// b: failed step cap of 50 reached
	// reused 2
	// summary.json junit.xml
}

func writeResult(dir string, res runner.Result) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b := fmt.Appendf(nil, `{"task":%q,"ok":%t,"started":%q,"outcome":{"stop":%q,"error":%q}}`,
		res.Task, res.OK, res.Started.Format(time.RFC3339Nano), res.Outcome.Stop, res.Outcome.Err)
	return os.WriteFile(filepath.Join(dir, batch.ResultFile), b, 0o644)
}
