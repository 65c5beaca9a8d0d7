package batch

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The JUnit XML that CI systems read (Jenkins, GitLab, GitHub actions that
// publish test reports): the Ant format, with every attribute the common
// schemas require.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	ID         int             `xml:"id,attr"`
	Package    string          `xml:"package,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitProblem `xml:"skipped"`
	Error     *junitProblem `xml:"error"`
	Failure   *junitProblem `xml:"failure"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// maxMessage bounds a failure's message attribute; the element's text
// holds the whole error.
const maxMessage = 1000

// writeJUnit writes s as one testsuite with a testcase per job. Paths in
// system-out are absolute: dir is the batch directory's absolute path. The
// suite's time and timestamp are those of the whole batch: every run it
// took to finish, from the first one's start.
func writeJUnit(w io.Writer, s Summary, dir, hostname string) error {
	started, elapsed := s.Started, cmp.Or(s.TotalElapsed, s.Elapsed)
	if len(s.Attempts) > 0 {
		started = s.Attempts[0].Started
	}
	suite := junitSuite{
		Name: s.Name, Tests: s.Total, Failures: s.Failed, Errors: s.Errors, Skipped: s.Skipped,
		Time:      seconds(elapsed),
		Timestamp: started.UTC().Format("2006-01-02T15:04:05"),
		Hostname:  hostname,
		Package:   s.Name,
		Properties: []junitProperty{
			{"isolation", string(s.Isolation)},
			{"parallel", strconv.Itoa(s.Parallel)},
			{"reused", strconv.Itoa(s.Reused)},
			{"runs", strconv.Itoa(max(len(s.Attempts), 1))},
		},
	}
	if s.Shard != "" {
		suite.Name += " shard " + s.Shard
		suite.Properties = append(suite.Properties, junitProperty{"shard", s.Shard})
	}
	for _, j := range s.Jobs {
		c := junitCase{Name: j.ID, Classname: s.Name, Time: seconds(j.Duration)}
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
		problem := &junitProblem{Message: clip(j.Error, maxMessage), Type: cmp.Or(string(j.Stop), "failure"), Text: j.Error}
		switch j.Status {
		case Failed:
			c.Failure = problem
		case Error:
			problem.Type = "error"
			c.Error = problem
		case Skipped:
			c.Skipped = &junitProblem{Message: clip(j.Error, maxMessage)}
		}
		suite.Cases = append(suite.Cases, c)
	}
	doc := junitSuites{Name: s.Name, Tests: s.Total, Failures: s.Failed, Errors: s.Errors, Skipped: s.Skipped,
		Time: suite.Time, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	e := xml.NewEncoder(w)
	e.Indent("", "  ")
	if err := e.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// seconds formats d as JUnit's time: decimal seconds.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}
