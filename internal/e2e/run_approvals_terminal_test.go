package e2e

// `spotter run` on a terminal: the same link to another origin as in
// run_approvals_outside_test.go, but the binary runs on a pseudo-terminal
// (util-linux's script), so it asks. The test reads the question as a
// person would see it and answers it.

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/trace"
)

// ptyOutput collects what a program wrote to its terminal, and signals
// each read, so that a test can wait for a question without sleeping.
type ptyOutput struct {
	mu    sync.Mutex
	b     strings.Builder
	read  chan struct{}
	ended chan struct{}
}

func readPTY(r io.Reader) *ptyOutput {
	o := &ptyOutput{read: make(chan struct{}, 1), ended: make(chan struct{})}
	go func() {
		defer close(o.ended)
		br := bufio.NewReader(r)
		buf := make([]byte, 4096)
		for {
			n, err := br.Read(buf)
			o.mu.Lock()
			o.b.Write(buf[:n])
			o.mu.Unlock()
			select {
			case o.read <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return o
}

func (o *ptyOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// waitFor blocks until the output holds s, or fails t when the output
// ends or a minute passes without it.
func (o *ptyOutput) waitFor(t *testing.T, s string) {
	t.Helper()
	limit := time.NewTimer(time.Minute)
	defer limit.Stop()
	for !strings.Contains(o.String(), s) {
		select {
		case <-o.read:
		case <-o.ended:
			if !strings.Contains(o.String(), s) {
				t.Fatalf("the terminal ended without %q:\n%s", s, o.String())
			}
		case <-limit.C:
			t.Fatalf("the terminal shows no %q after a minute:\n%s", s, o.String())
		}
	}
}

// TestRunApprovalsAskOnATerminal answers the question about the link to
// another origin: a denial with a reason keeps the other origin untouched
// and gives the model the reason; an approval lets the click through.
func TestRunApprovalsAskOnATerminal(t *testing.T) {
	integration(t)
	script, err := exec.LookPath("script")
	if err != nil {
		t.Fatalf("util-linux's script, which gives spotter a terminal, is missing: %v", err)
	}
	bin := buildSpotter(t)
	for _, tt := range []struct {
		name    string
		answer  string
		reached bool
	}{
		{"deny with a reason", "n that is not what you were asked to do", false},
		{"approve", "yes", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			other := newOriginRecorder(t, "")
			site := newOriginRecorder(t, offerPage(other.URL))
			dir := t.TempDir()
			task := writeOfferTask(t, dir, site.URL)
			out := filepath.Join(dir, "run")
			line := fmt.Sprintf("'%s' run '%s' --isolate none --out '%s'", bin, task, out)
			cmd := exec.CommandContext(t.Context(), script, "-qefc", line, "/dev/null")
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
			question := shown.String()
			for _, w := range []string{"approval needed (rule outside)", `link "Partner offer" → ` + other.URL + "/landing",
				"page:    " + site.URL + "/", "click at (190,120) in the screenshot", `"The page says to open the partner offer."`} {
				if !strings.Contains(question, w) {
					t.Errorf("the question shows:\n%s\nwant it to contain %q", question, w)
				}
			}
			if _, err := io.WriteString(keys, tt.answer+"\n"); err != nil {
				t.Fatal(err)
			}
			<-shown.ended
			err = cmd.Wait()
			keys.Close()
			t.Logf("the terminal:\n%s", shown.String())
			if err != nil {
				t.Fatalf("spotter run on a terminal = %v, want exit 0:\n%s", err, shown.String())
			}

			_, reqs := other.seen()
			if got := slices.Contains(reqs, "GET /landing"); got != tt.reached {
				t.Errorf("after %q the other origin received %q; reached = %v, want %v", tt.answer, reqs, got, tt.reached)
			}
			evs, err := trace.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			var refusal, decided string
			for _, e := range evs {
				switch {
				case e.Type == trace.TypeResult && strings.Contains(e.Error, "denied"):
					refusal = e.Error
				case e.Type == trace.TypeNote && strings.HasPrefix(e.Text, "approval (rule outside)"):
					decided = e.Text
				}
			}
			if tt.reached {
				if refusal != "" || decided != "approval (rule outside) approved by terminal" {
					t.Errorf("trace: refusal %q, decision %q; want no refusal, approved by terminal", refusal, decided)
				}
				return
			}
			for _, w := range []string{"denied by a human (outside: clicking the link", "that is not what you were asked to do"} {
				if !strings.Contains(refusal, w) {
					t.Errorf("the model was told %q, want it to contain %q", refusal, w)
				}
			}
			if !strings.HasPrefix(decided, "approval (rule outside) denied by terminal") {
				t.Errorf("trace note of the decision = %q, want denied by terminal", decided)
			}
		})
	}
}
