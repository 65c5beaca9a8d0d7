package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/spotter-harness/spotter/harness/cassette"
	"github.com/spotter-harness/spotter/internal/runner"
)

// ErrJobs marks a jobs file that cannot be run as written.
var ErrJobs = errors.New("invalid jobs file")

// maxLine bounds one line of a jobs file: a task with a long script.
const maxLine = 16 << 20

// Job is one line of a jobs file: a task and the name of its directory.
type Job struct {
	// ID names the job's directory in the batch directory. It is the
	// line's "id" field, or "line-N" for line N when the line has none.
	ID   string
	Line int // 1-based line number in the jobs file
	Task runner.Task
}

// idPattern is what a job id may look like: a safe, portable directory name.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Load reads a jobs file with Parse. Relative files the tasks name
// (policy_file, model.cassette) are relative to the jobs file.
func Load(path string) ([]Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	jobs, err := Parse(f, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// Parse reads a jobs file: one task per line, each a JSON object in the
// format of a `spotter run` task file, plus an optional string "id". Blank
// lines are ignored. A policy_file or model.cassette given as a relative
// path is read relative to dir. A task without a name is named after its
// job.
//
// Parse checks every line before returning, so a batch never starts on a
// file with a bad line in it. That includes the cassettes tasks replay: each
// is read and checked once, so a missing or broken one stops the batch
// before its first job, not when the job that needs it comes up. Errors
// wrap ErrJobs (or runner.ErrTask) and name the line.
func Parse(r io.Reader, dir string) ([]Job, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var jobs []Job
	seen := map[string]int{}
	cassettes := map[string]error{} // path -> what loading it said
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		j, err := parseLine(line, n, dir)
		if err == nil {
			err = checkCassette(j, cassettes)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if prev, ok := seen[j.ID]; ok {
			return nil, fmt.Errorf("line %d: %w: id %q is already used on line %d", n, ErrJobs, j.ID, prev)
		}
		seen[j.ID] = n
		jobs = append(jobs, j)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: %w: longer than %d bytes", n+1, ErrJobs, maxLine)
		}
		return nil, err
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("%w: no jobs", ErrJobs)
	}
	return jobs, nil
}

func parseLine(line []byte, n int, dir string) (Job, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil || fields == nil {
		if err == nil {
			err = errors.New("null")
		}
		return Job{}, fmt.Errorf("%w: want a JSON object: %v", ErrJobs, err)
	}
	j := Job{ID: "line-" + strconv.Itoa(n), Line: n}
	if raw, ok := fields["id"]; ok {
		if err := json.Unmarshal(raw, &j.ID); err != nil {
			return Job{}, fmt.Errorf("%w: id must be a string, got %s", ErrJobs, raw)
		}
		delete(fields, "id")
	}
	if err := checkID(j.ID); err != nil {
		return Job{}, err
	}
	// The rest is a task, which runner.ParseIn checks strictly (JSON is
	// YAML) and resolves relative to the jobs file.
	rest, err := json.Marshal(fields)
	if err != nil {
		return Job{}, fmt.Errorf("%w: %v", ErrJobs, err)
	}
	if j.Task, err = runner.ParseIn(rest, dir); err != nil {
		return Job{}, fmt.Errorf("job %s: %w", j.ID, err)
	}
	if j.Task.Name == "" {
		j.Task.Name = j.ID
	}
	return j, nil
}

// checkCassette loads the cassette j's model replays, if any, once per
// path: a job that would fail at its start for want of it fails the
// whole jobs file instead.
func checkCassette(j Job, loaded map[string]error) error {
	path := j.Task.Model.Cassette
	if path == "" {
		return nil
	}
	err, ok := loaded[path]
	if !ok {
		_, err = cassette.Load(path)
		loaded[path] = err
	}
	if err != nil {
		return fmt.Errorf("%w: job %s: model.cassette: %v", ErrJobs, j.ID, err)
	}
	return nil
}

// checkID rejects ids that are not safe directory names or that would
// collide with the batch's own files.
func checkID(id string) error {
	if !idPattern.MatchString(id) {
		return fmt.Errorf("%w: id %q: want 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", ErrJobs, id)
	}
	lower := strings.ToLower(id)
	if strings.HasPrefix(lower, "summary") || strings.HasPrefix(lower, "junit") {
		return fmt.Errorf("%w: id %q is reserved for the batch's own files", ErrJobs, id)
	}
	return nil
}

// Shard is the part of a batch one process runs: of the jobs in file
// order, those whose position modulo Count is Index. Every shard must read
// the same jobs file. The zero Shard is the whole batch.
type Shard struct {
	Index, Count int
}

// ParseShard reads "I/N" (0 <= I < N), as `--shard` takes it. An
// empty string is the whole batch.
func ParseShard(s string) (Shard, error) {
	if s == "" {
		return Shard{}, nil
	}
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case !ok || ierr != nil || nerr != nil:
		return Shard{}, fmt.Errorf("shard %q: want I/N, e.g. 0/4", s)
	case n < 1 || n > 100000:
		return Shard{}, fmt.Errorf("shard %q: N must be 1..100000", s)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("shard %q: I must be 0..%d", s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// Whole reports whether s is the whole batch.
func (s Shard) Whole() bool { return s.Count <= 1 }

// String is "I/N", or "" for the whole batch.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Select returns the jobs of s, in order.
func (s Shard) Select(jobs []Job) []Job {
	if s.Whole() {
		return jobs
	}
	var out []Job
	for i, j := range jobs {
		if i%s.Count == s.Index {
			out = append(out, j)
		}
	}
	return out
}

// suffix tells one shard's files apart from another's in a shared batch
// directory: "" for the whole batch, ".I-of-N" otherwise.
func (s Shard) suffix() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf(".%d-of-%d", s.Index, s.Count)
}
