package batch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/internal/batch"
)

// TestKilledBatchResumes builds the real spotter binary, runs a batch of
// six short demo jobs two at a time, kills it with SIGKILL once two jobs
// have finished (and another is mid-run), and runs it again: the second run must skip exactly the
// jobs that had finished, leave their results as they were, and finish
// every other job. The browsers of the killed batch must not outlive it,
// and with containerd, the re-run's start-up cleanup removes the killed
// batch's containers, tasks, mounts, cgroups and state directories.
func TestKilledBatchResumes(t *testing.T) {
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("set SPOTTER_INTEGRATION=1 to run batches against a real Chromium")
	}
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Fatalf("no Chromium to run the batch on: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "spotter")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "github.com/spotter-harness/spotter/cmd/spotter").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, iso := range []string{"local", "containerd"} {
		t.Run(iso, func(t *testing.T) { testKilledBatch(t, bin, iso) })
	}
}

// testKilledBatch runs the batch of demo jobs with isolation iso, kills it
// mid-run, checks that nothing it started lives on, runs it again to the
// end and checks the re-run, its summary and, with containerd, that the
// killed batch's sandboxes are gone.
func testKilledBatch(t *testing.T, bin, iso string) {
	if iso == "containerd" {
		if fi, err := os.Stat(containerdSocket); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Fatalf("containerd socket %s: %v (run .ci/containerd)", containerdSocket, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	const jobsFile = "testdata/demo-jobs.jsonl"
	jobs, err := batch.Load(jobsFile)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kb := &killedBatch{bin: bin, iso: iso, jobs: jobs, dir: dir, sandboxes: map[string]bool{},
		args: []string{"batch", jobsFile, "--parallel", "2", "--out", dir, "--progress", "json", "--isolate", iso}}

	kb.runAndKill(ctx, t)
	kb.checkNothingLivesOn(ctx, t)
	skipped, started := kb.rerun(ctx, t)
	kb.checkRerun(t, skipped, started)
	kb.checkSummary(t)
	if iso == "containerd" {
		for id := range kb.sandboxes {
			for _, left := range leftovers(ctx, id) {
				t.Errorf("after the re-run, the killed batch's sandbox %s left %s", id, left)
			}
		}
	}
}

// killedBatch is a batch that testKilledBatch runs, kills and runs again,
// and what the killed run left.
type killedBatch struct {
	bin  string // the spotter binary
	iso  string // the batch's isolation: local or containerd
	jobs []batch.Job
	dir  string   // the batch's output directory
	args []string // the command line of both runs

	stderr    bytes.Buffer      // both runs' standard error
	browsers  []int             // processes the killed batch started
	sandboxes map[string]bool   // ids of the killed batch's containers
	finished  map[string][]byte // job ID -> result.json, of the jobs finished before the kill
	partial   []string          // jobs cut short after they had written something
}

// runAndKill starts the batch and kills it with SIGKILL once two results
// exist and a running job has written part of its trace (or 20s later),
// noting the processes and sandboxes it started on the way. Some jobs must
// be left unfinished.
func (kb *killedBatch) runAndKill(ctx context.Context, t *testing.T) {
	first := exec.CommandContext(ctx, kb.bin, kb.args...)
	first.Stderr = &kb.stderr
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }() // read below, before the test ends
	deadline := time.After(4 * time.Minute)
	// Once two results exist, wait a little for a running job to have
	// written part of its trace, so that the kill cuts one short mid-run.
	var twoAt time.Time
	for {
		n := len(results(t, kb.dir, kb.jobs))
		if n >= 2 && twoAt.IsZero() {
			twoAt = time.Now()
		}
		if n >= 2 && (hasPartial(kb.dir, kb.jobs) || time.Since(twoAt) > 20*time.Second) {
			break
		}
		kb.browsers = append(kb.browsers, descendants(first.Process.Pid)...)
		for _, id := range sandboxesOf(first.Process.Pid) {
			kb.sandboxes[id] = true
		}
		select {
		case err := <-exited:
			t.Fatalf("the batch ended (%v) before it could be killed; stderr:\n%s", err, kb.stderr.String())
		case <-deadline:
			first.Process.Kill()
			<-exited
			t.Fatalf("no two results after 4 minutes; stderr:\n%s", kb.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	kb.browsers = append(kb.browsers, descendants(first.Process.Pid)...)
	if err := first.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	kb.finished = results(t, kb.dir, kb.jobs)
	if len(kb.finished) >= len(kb.jobs) {
		t.Fatalf("all %d jobs finished before the kill; the test needs some to be cut short", len(kb.jobs))
	}
	for _, j := range kb.jobs {
		if _, ok := kb.finished[j.ID]; !ok {
			if _, err := os.Stat(filepath.Join(kb.dir, j.ID)); err == nil {
				kb.partial = append(kb.partial, j.ID)
			}
		}
	}
	t.Logf("killed with %d of %d jobs finished: %v; partial: %v", len(kb.finished), len(kb.jobs), slices.Sorted(maps.Keys(kb.finished)), kb.partial)
}

// checkNothingLivesOn checks that nothing the killed batch started lives
// on (chromedp asks the kernel to kill a browser whose parent dies), within
// 15s; with containerd, that the batch used sandboxes.
func (kb *killedBatch) checkNothingLivesOn(ctx context.Context, t *testing.T) {
	alive := func() []int {
		var out []int
		for _, pid := range slices.Compact(slices.Sorted(slices.Values(kb.browsers))) {
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
				out = append(out, pid)
			}
		}
		return out
	}
	if kb.iso == "containerd" {
		// Browsers run in the sandboxes, children of containerd's shims.
		if len(kb.sandboxes) == 0 {
			t.Errorf("saw no sandbox of the batch; did it use containerd?")
		}
		t.Logf("sandboxes of the killed batch: %v", slices.Sorted(maps.Keys(kb.sandboxes)))
		// Those of the jobs cut short are normally still there, for the
		// re-run to remove. Any Spotter runtime that starts on this
		// machine meanwhile removes them first (a test of another package
		// running beside this one, say): every runtime removes the
		// sandboxes of dead owners. The re-run's part of that is then not
		// seen here; the clean-up itself is TestCleanupAfterCrash's
		// (isolate/containerd), and nothing may be left after the re-run
		// either way (testKilledBatch).
		left := 0
		for id := range kb.sandboxes {
			if slices.Contains(leftovers(ctx, id), "a container") {
				left++
			}
		}
		if left == 0 {
			t.Logf("no container of the killed batch was left when looked at (another runtime removed them); the re-run's clean-up is not observed this time")
		}
	} else if len(kb.browsers) == 0 {
		t.Errorf("saw no child processes of the batch; was a browser started?")
	}
	for wait := time.Now().Add(15 * time.Second); len(alive()) > 0 && time.Now().Before(wait); {
		time.Sleep(100 * time.Millisecond)
	}
	if left := alive(); len(left) > 0 {
		t.Errorf("processes of the killed batch still run: %v", left)
	}
}

// rerun runs the same command again, to the end, and returns the jobs its
// progress says it skipped and started.
func (kb *killedBatch) rerun(ctx context.Context, t *testing.T) (skipped, started []string) {
	second := exec.CommandContext(ctx, kb.bin, kb.args...)
	second.Stderr = &kb.stderr
	out, err := second.Output()
	if err != nil {
		t.Fatalf("re-run: %v\nstdout:\n%s\nstderr:\n%s", err, out, kb.stderr.String())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var e batch.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("re-run progress line %q: %v", sc.Text(), err)
		}
		switch e.Event {
		case "skip":
			skipped = append(skipped, e.ID)
		case "start":
			started = append(started, e.ID)
		}
	}
	return skipped, started
}

// checkRerun checks that the re-run skipped exactly the jobs finished
// before the kill, leaving their results as they were, ran every other
// job, and moved the output of the jobs cut short aside.
func (kb *killedBatch) checkRerun(t *testing.T, skipped, started []string) {
	var unfinished []string
	for _, j := range kb.jobs {
		if _, ok := kb.finished[j.ID]; !ok {
			unfinished = append(unfinished, j.ID)
		}
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(kb.finished)), slices.Sorted(slices.Values(skipped))); diff != "" {
		t.Errorf("jobs the re-run skipped (-finished before the kill +skipped):\n%s", diff)
	}
	if diff := cmp.Diff(unfinished, slices.Sorted(slices.Values(started))); diff != "" {
		t.Errorf("jobs the re-run ran (-unfinished +ran):\n%s", diff)
	}
	after := results(t, kb.dir, kb.jobs)
	if len(after) != len(kb.jobs) {
		t.Errorf("after the re-run %d of %d jobs have a result.json", len(after), len(kb.jobs))
	}
	for id, before := range kb.finished {
		if !bytes.Equal(after[id], before) {
			t.Errorf("job %s's result.json changed on the re-run; a finished job must not run again", id)
		}
	}
	for _, id := range kb.partial {
		if _, err := os.Stat(filepath.Join(kb.dir, batch.PartialDir, id)); err != nil {
			t.Errorf("job %s's partial output was not moved aside: %v", id, err)
		}
	}
}

// checkSummary checks the summary and junit.xml after the re-run: every
// job passed, the finished ones reused, the batch's time both runs', and
// the isolation recorded.
func (kb *killedBatch) checkSummary(t *testing.T) {
	summaryPath, junitPath := batch.Files(kb.dir, batch.Shard{})
	var sum batch.Summary
	raw, err := os.ReadFile(summaryPath)
	if err == nil {
		err = json.Unmarshal(raw, &sum)
	}
	if err != nil || sum.Passed != len(kb.jobs) || sum.Reused != len(kb.finished) {
		t.Errorf("summary: passed %d, reused %d (%v), want %d passed, %d reused", sum.Passed, sum.Reused, err, len(kb.jobs), len(kb.finished))
	}
	if _, err := os.Stat(junitPath); err != nil {
		t.Errorf("junit.xml: %v", err)
	}
	// The batch's time is both runs': the killed one's up to the last job
	// it finished (it could not record its end), then the re-run's.
	if len(sum.Attempts) != 2 || !sum.Attempts[0].Estimated || sum.Attempts[0].Elapsed <= 0 || sum.Attempts[1].Estimated ||
		sum.TotalElapsed != sum.Attempts[0].Elapsed+sum.Attempts[1].Elapsed || sum.TotalElapsed <= sum.Elapsed {
		t.Errorf("summary runs %+v, total %v, this run %v; want the killed run (estimated) and the re-run, adding up",
			sum.Attempts, sum.TotalElapsed, sum.Elapsed)
	}
	if raw, err := os.ReadFile(junitPath); err == nil {
		want := fmt.Sprintf(`time="%.3f"`, sum.TotalElapsed.Seconds())
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("junit.xml does not give the whole batch's time, %s:\n%.400s", want, raw)
		}
	}
	if sum.Isolation != batch.Isolation(kb.iso) {
		t.Errorf("summary isolation = %q, want %q", sum.Isolation, kb.iso)
	}
}

// containerd's socket and Spotter's namespace and state directory there.
const (
	containerdSocket = "/run/containerd/containerd.sock"
	sandboxNamespace = "spotter"
	sandboxStateDir  = "/run/spotter/isolate"
)

// sandboxesOf lists the sandboxes process pid made, from the owner files
// of their state directories.
func sandboxesOf(pid int) []string {
	dirs, _ := filepath.Glob(filepath.Join(sandboxStateDir, "spotter-*"))
	var out []string
	for _, d := range dirs {
		owner, err := os.ReadFile(filepath.Join(d, "owner"))
		if err == nil && strings.HasPrefix(string(owner), strconv.Itoa(pid)+":") {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}

// leftovers lists what sandbox id left behind: a container, a task or a
// snapshot in containerd, a mount, a cgroup or a state directory.
func leftovers(ctx context.Context, id string) []string {
	var out []string
	ctr := func(args ...string) string {
		b, err := exec.CommandContext(ctx, "ctr", append([]string{"--address", containerdSocket, "-n", sandboxNamespace}, args...)...).CombinedOutput()
		if err != nil {
			out = append(out, fmt.Sprintf("ctr %v failed: %v %s", args, err, b))
		}
		return string(b)
	}
	if strings.Contains(ctr("containers", "ls", "-q"), id) {
		out = append(out, "a container")
	}
	if strings.Contains(ctr("tasks", "ls"), id) {
		out = append(out, "a task")
	}
	if strings.Contains(ctr("snapshots", "ls"), id) {
		out = append(out, "a snapshot")
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), id) {
		out = append(out, "a mount")
	}
	if cg, _ := filepath.Glob("/sys/fs/cgroup/*/" + sandboxNamespace + "/" + id); len(cg) > 0 {
		out = append(out, fmt.Sprintf("cgroups %v", cg))
	}
	if cg, _ := filepath.Glob("/sys/fs/cgroup/" + sandboxNamespace + "/" + id); len(cg) > 0 {
		out = append(out, fmt.Sprintf("cgroups %v", cg))
	}
	if _, err := os.Stat(filepath.Join(sandboxStateDir, id)); err == nil {
		out = append(out, "its state directory")
	}
	return out
}

// results reads the result.json of every job that has one.
func results(t *testing.T, dir string, jobs []batch.Job) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, j := range jobs {
		b, err := os.ReadFile(filepath.Join(dir, j.ID, batch.ResultFile))
		if err == nil {
			out[j.ID] = b
		}
	}
	return out
}

// hasPartial reports whether a job has begun its trace but has no result.
func hasPartial(dir string, jobs []batch.Job) bool {
	for _, j := range jobs {
		_, errTrace := os.Stat(filepath.Join(dir, j.ID, "events.jsonl"))
		_, errResult := os.Stat(filepath.Join(dir, j.ID, batch.ResultFile))
		if errTrace == nil && errResult != nil {
			return true
		}
	}
	return false
}

// descendants lists the processes below pid, from /proc.
func descendants(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 {
			continue
		}
		if pp, err := strconv.Atoi(fields[1]); err == nil {
			parent[p] = pp
		}
	}
	var out []int
	for p := range parent {
		for q := parent[p]; q > 1; q = parent[q] {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}
