package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/internal/qa"
	"github.com/spotter-harness/spotter/internal/qa/qatest"
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
		err := run(ctx, args, &stdout, &stderr)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 1 {
			t.Fatalf("spotter %s = %v, want exit code 1 (the test fails)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		b, err := os.ReadFile(filepath.Join(dir, out, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s qa.Suite
		if err := json.Unmarshal(b, &s); err != nil || len(s.Tests) != 1 {
			t.Fatalf("summary.json = %s (%v), want one test", b, err)
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
