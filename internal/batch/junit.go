package batch

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spotter-harness/spotter/internal/junit"
)

// writeJUnit writes s as one testsuite with a testcase per job. Paths in
// system-out are absolute: dir is the batch directory's absolute path. The
// suite's time and timestamp are those of the whole batch: every run it
// took to finish, from the first one's start.
func writeJUnit(w io.Writer, s Summary, dir, hostname string) error {
	started, elapsed := s.Started, cmp.Or(s.TotalElapsed, s.Elapsed)
	if len(s.Attempts) > 0 {
		started = s.Attempts[0].Started
	}
	suite := junit.Suite{
		Name:      s.Name,
		Time:      junit.Seconds(elapsed),
		Timestamp: junit.Timestamp(started),
		Hostname:  hostname,
		Package:   s.Name,
		Properties: []junit.Property{
			{Name: "isolation", Value: string(s.Isolation)},
			{Name: "parallel", Value: strconv.Itoa(s.Parallel)},
			{Name: "reused", Value: strconv.Itoa(s.Reused)},
			{Name: "runs", Value: strconv.Itoa(max(len(s.Attempts), 1))},
		},
	}
	if s.Shard != "" {
		suite.Name += " shard " + s.Shard
		suite.Properties = append(suite.Properties, junit.Property{Name: "shard", Value: s.Shard})
	}
	for _, j := range s.Jobs {
		c := junit.Case{Name: j.ID, Classname: s.Name, Time: junit.Seconds(j.Duration)}
		var out strings.Builder
		if j.Task != j.ID {
			fmt.Fprintf(&out, "task: %s\n", j.Task)
		}
		if j.Stop != "" {
			fmt.Fprintf(&out, "stop: %s after %d steps\n", j.Stop, j.Steps)
		}
		if j.Reused {
			out.WriteString("reused: finished by an earlier run of this batch\n")
		}
		if j.Report != "" {
			fmt.Fprintf(&out, "report: %s\n", filepath.Join(dir, j.Report))
		}
		if j.Result != "" {
			fmt.Fprintf(&out, "result: %s\n", filepath.Join(dir, j.Result))
		}
		fmt.Fprintf(&out, "trace: %s\n", filepath.Join(dir, j.Dir))
		c.SystemOut = out.String()
		problem := &junit.Problem{Message: j.Error, Type: cmp.Or(string(j.Stop), "failure"), Text: j.Error}
		switch j.Status {
		case Failed:
			c.Failure = problem
		case Error:
			problem.Type = "error"
			c.Error = problem
		case Skipped:
			c.Skipped = &junit.Problem{Message: j.Error}
		}
		suite.Cases = append(suite.Cases, c)
	}
	return junit.Write(w, junit.Suites{Name: s.Name, Time: suite.Time, Suites: []junit.Suite{suite}})
}
