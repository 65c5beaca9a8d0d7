package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	shop, pictures := qatest.ShopSite(t)
	u, _ := url.Parse(shop)
	file := filepath.Join(dir, "jobs.jsonl")
	job := fmt.Sprintf(`{"id":"shop","task":"Buy the item.","start_url":%q,"display":{"width":800,"height":600},`+
		`"policy":{"allow":["click"],"hosts":[%q]},"model":{"provider":"script","turns":[`+
		`{"actions":[{"type":"click","x":200,"y":320}]},{"say":"done"}]}}`, shop+"/", u.Host)
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
