package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

func TestLoadRules(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string // in the error; "" for none
	}{
		{"empty", "", ""},
		{"the example", "", ""}, // read from examples/rules below
		{"syntax", "supervise: flagged\nrules: [\n", "line 2"},
		{"unknown field", "supervise: flagged\n\nsupervize: all\n", "approval rules: supervize (line 3): unknown field"},
		{"bad supervise", "timeout: 1m\nsupervise: sometimes\n", ":2: approval rules: supervise \"sometimes\""},
		{"unknown rule in disable", "disable:\n  - send\n  - shout\n", ":3: approval rules: disable: unknown rule \"shout\""},
		{"bad regexp in the second rule", "rules:\n  - name: a\n    reason: r\n    kinds: [click]\n" +
			"  - name: b\n    reason: r\n    url: [\"(\"]\n", ":5: approval rules: rules[1]: b: url[0]"},
		{"unknown kind", "hosts: [example.com]\nrules:\n  - name: a\n    reason: r\n    kinds: [clack]\n",
			"approval rules: rules[0].kinds[0] (line 5): invalid action: unknown action kind \"clack\""},
		{"duplicate rule names", "rules:\n  - {name: a, reason: r, kinds: [click]}\n  - {name: a, reason: r, kinds: [type]}\n",
			":3: approval rules: rules[1]: name \"a\" is already used"},
		{"a rule named like a region", "regions:\n  - {name: top, x: 0, y: 0, w: 10, h: 10}\nrules:\n" +
			"  - {name: top, reason: r, kinds: [click]}\n", ":4: approval rules: rules[0]: name \"top\" is already used"},
		{"bad host", "keys: [\"ctrl+s\"]\nhosts:\n  - example.com\n  - \"http://x\"\n", ":4: approval rules: hosts: host pattern"},
		{"not a mapping", "- supervise\n", "approval rules: line 1: want a mapping of fields"},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if tt.name == "the example" {
				path = "../../examples/rules/approvals.yaml"
			} else if err := os.WriteFile(path, []byte(tt.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			r, err := LoadRules(path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("LoadRules(%s) = %v, want no error", path, err)
			case tt.want == "":
				if verr := r.Validate(); verr != nil {
					t.Errorf("LoadRules(%s) returned rules that do not validate: %v", path, verr)
				}
			case err == nil:
				t.Fatalf("LoadRules(%s) = no error, want one with %q", path, tt.want)
			case !strings.HasPrefix(err.Error(), path) || !strings.Contains(err.Error(), tt.want):
				t.Errorf("LoadRules(%s) = %q, want it to start with the file name and contain %q", path, err, tt.want)
			}
		})
	}
	if _, err := LoadRules(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("LoadRules(missing.yaml) = %v, want an error naming the file", err)
	}
}

// linkPage is a page with a link to another origin under every point, and
// a password field with the focus.
type linkPage struct{}

func (linkPage) HitTest(context.Context, actions.Point) (screen.Target, error) {
	return screen.Target{Tag: "a", Role: "link", Name: "Partner offer", Href: "http://other.test:8081/landing"}, nil
}

func (linkPage) Focused(context.Context) (screen.Target, error) {
	return screen.Target{Tag: "input", Role: "textbox", InputType: "password", Name: "Password", Editable: true}, nil
}

func (linkPage) Dialog() (screen.Dialog, bool) { return screen.Dialog{}, false }

var linkFrame = screen.Frame{ID: "f1", URL: "http://shop.test:8080/", Viewport: screen.Size{W: 800, H: 600}, DPR: 1,
	Clip: actions.Rect{Max: actions.Pt(800, 600)}, Capture: screen.Size{W: 800, H: 600}, Sent: screen.Size{W: 800, H: 600},
	Format: screen.PNG}

func approvalRequest(t *testing.T, call string, a actions.Action) harness.ApprovalRequest {
	t.Helper()
	r := harness.ApprovalRequest{CallID: call, Action: a, Frame: linkFrame, ModelText: "I will open the offer."}
	if a.Kind.IsPointer() {
		m, err := linkFrame.Map(a, screen.Image)
		if err != nil {
			t.Fatal(err)
		}
		r.Mapped = &m
	}
	return r
}

// TestRunApprover drives a run's approver as the loop does: a click on a
// link to another origin, and typing into a password field, decided by
// nobody (no terminal), by an Asker that approves, and by one that
// denies.
func TestRunApprover(t *testing.T) {
	click := actions.Action{Kind: actions.Click, At: actions.Pt(100, 100), HasAt: true}
	typing := actions.Action{Kind: actions.Type, Text: "hunter2"}
	approve := AskerFunc(func(context.Context, approvals.Request) (approvals.Verdict, error) {
		return approvals.Verdict{Kind: approvals.Approve, By: "terminal"}, nil
	})
	deny := AskerFunc(func(context.Context, approvals.Request) (approvals.Verdict, error) {
		return approvals.Verdict{Kind: approvals.Deny, By: "terminal", Reason: "not that shop"}, nil
	})
	broken := AskerFunc(func(context.Context, approvals.Request) (approvals.Verdict, error) {
		return approvals.Verdict{}, errors.New("the terminal went away")
	})
	tests := []struct {
		name      string
		asker     Asker
		supervise approvals.Supervise
		action    actions.Action
		wantErr   []string // in the error, which wraps harness.ErrDenied; nil: approved
		wantNotes []string // in the trace's notes
	}{
		{"no terminal refuses the link", nil, "", click,
			[]string{"clicking the link \"Partner offer\" leads to other.test:8081, outside the allowed hosts (rule outside)", "nobody can approve it here"},
			[]string{"approval needed (rule outside)", "denied by spotter run"}},
		{"no terminal refuses the password", nil, "", typing, []string{"a password field (rule password)"}, nil},
		{"a human approves", approve, "", click, nil, []string{"approval (rule outside) approved by terminal"}},
		{"a human denies", deny, "", click, []string{"outside", "not that shop"}, []string{"denied by terminal: not that shop"}},
		{"asking fails", broken, "", click, []string{"nobody could be asked: the terminal went away"}, nil},
		{"supervise all flags a plain scroll", nil, approvals.SuperviseAll,
			actions.Action{Kind: actions.Scroll, At: actions.Pt(5, 5), HasAt: true, DeltaY: 100}, []string{"rule supervise-all"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var notes []string
			note := func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() }
			rules := approvals.Default()
			if tt.supervise != "" {
				rules.Supervise = tt.supervise
			}
			ap, err := newRunApprover(ApprovalConfig{Rules: rules, Asker: tt.asker}, []string{"shop.test:8080"}, linkPage{}, note,
				slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			_, err = ap.Approve(t.Context(), approvalRequest(t, "c1", tt.action))
			ap.close()
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("Approve(%s) = %v, want approved", tt.action.Kind, err)
			case tt.wantErr != nil && !errors.Is(err, harness.ErrDenied):
				t.Errorf("Approve(%s) = %v, want an error wrapping harness.ErrDenied", tt.action.Kind, err)
			}
			for _, w := range tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Approve(%s) = %v, want it to say %q", tt.action.Kind, err, w)
				}
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Approve(%s) = %v: the error shows the typed password", tt.action.Kind, err)
			}
			mu.Lock()
			all := strings.Join(notes, "\n")
			mu.Unlock()
			for _, w := range tt.wantNotes {
				if !strings.Contains(all, w) {
					t.Errorf("notes = %q, want one with %q", all, w)
				}
			}
		})
	}
}

// TestRunApproverLetsThroughWhatNoRuleFlags checks that the approver
// stays out of the way: a link to an allowed host asks nobody.
func TestRunApproverLetsThroughWhatNoRuleFlags(t *testing.T) {
	asked := 0
	count := AskerFunc(func(context.Context, approvals.Request) (approvals.Verdict, error) {
		asked++
		return approvals.Verdict{Kind: approvals.Deny, By: "terminal"}, nil
	})
	ap, err := newRunApprover(ApprovalConfig{Asker: count}, []string{"other.test:8081"}, linkPage{}, func(string) {},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer ap.close()
	click := actions.Action{Kind: actions.Click, At: actions.Pt(100, 100), HasAt: true}
	if _, err := ap.Approve(t.Context(), approvalRequest(t, "c1", click)); err != nil || asked != 0 {
		t.Errorf("Approve(click on an allowed link) = %v after %d questions, want approved without asking", err, asked)
	}
}

// chanWriter collects what is written and signals each write, so that a
// test can wait for a prompt without sleeping.
type chanWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func newChanWriter() *chanWriter { return &chanWriter{wrote: make(chan struct{}, 1)} }

func (w *chanWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.b.Write(p)
	w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (w *chanWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor blocks until the output holds n occurrences of s.
func (w *chanWriter) waitFor(t *testing.T, s string, n int) {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for strings.Count(w.String(), s) < n {
		select {
		case <-w.wrote:
		case <-timeout.C:
			t.Fatalf("output = %q, want %d of %q", w.String(), n, s)
		}
	}
}

const prompt = "Approve? y(es) or n(o)"

func TestTerminal(t *testing.T) {
	req := approvals.Request{ID: "ap_1", CallID: "c1", Rule: "password", Reason: "typing into the textbox \"Password\", a password field",
		Action: actions.Action{Kind: actions.Type, Text: "[secret]"},
		Target: &screen.Target{Tag: "input", Role: "textbox", InputType: "password", Name: "Password"},
		Frame:  screen.Frame{URL: "http://shop.test/login"}, ModelText: "I will log in.\x1b[2J",
		Created: time.Now(), Deadline: time.Now().Add(time.Minute)}
	tests := []struct {
		name    string
		answers []string // each written after the prompt appears once more
		want    approvals.Verdict
	}{
		{"yes", []string{"y"}, approvals.Verdict{Kind: approvals.Approve, By: "terminal"}},
		{"yes with a reason", []string{"Yes, I know this shop"}, approvals.Verdict{Kind: approvals.Approve, By: "terminal", Reason: "I know this shop"}},
		{"no with a reason", []string{"n: wrong account"}, approvals.Verdict{Kind: approvals.Deny, By: "terminal", Reason: "wrong account"}},
		{"deny", []string{"deny"}, approvals.Verdict{Kind: approvals.Deny, By: "terminal"}},
		{"nonsense, then no", []string{"maybe", "", "no"}, approvals.Verdict{Kind: approvals.Deny, By: "terminal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, typist := io.Pipe()
			defer typist.Close()
			out := newChanWriter()
			term := NewTerminal(in, out)
			type answer struct {
				v   approvals.Verdict
				err error
			}
			got := make(chan answer, 1)
			go func() {
				v, err := term.Ask(t.Context(), req)
				got <- answer{v, err}
			}()
			for i, a := range tt.answers {
				out.waitFor(t, prompt, i+1)
				if _, err := io.WriteString(typist, a+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			a := <-got
			if a.err != nil {
				t.Fatalf("Ask() error = %v", a.err)
			}
			if diff := cmp.Diff(tt.want, a.v); diff != "" {
				t.Errorf("Ask() verdict (-want +got):\n%s", diff)
			}
			shown := out.String()
			for _, w := range []string{"rule password", "a password field", `type "[secret]"`, `textbox (password) "Password"`,
				"http://shop.test/login", `I will log in.\x1b[2J`} {
				if !strings.Contains(shown, w) {
					t.Errorf("the terminal shows %q, want it to contain %q", shown, w)
				}
			}
			if strings.Contains(shown, "\x1b") {
				t.Errorf("the terminal shows %q: a raw escape character from the model's text", shown)
			}
		})
	}
}

// TestTerminalIgnoresTypedAhead checks that a line typed before a
// question appeared does not answer it.
func TestTerminalIgnoresTypedAhead(t *testing.T) {
	in, typist := io.Pipe()
	defer typist.Close()
	out := newChanWriter()
	term := NewTerminal(in, out)
	// The second write returns only once the reader has taken the first
	// line and come back for more: "y" is then typed ahead for sure.
	for _, l := range []string{"y\n", "x\n"} {
		if _, err := io.WriteString(typist, l); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan approvals.Verdict, 1)
	go func() {
		v, _ := term.Ask(t.Context(), approvals.Request{Rule: "outside", Reason: "r", Deadline: time.Now().Add(time.Minute)})
		got <- v
	}()
	out.waitFor(t, prompt, 1)
	if _, err := io.WriteString(typist, "n\n"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v.Kind != approvals.Deny {
		t.Errorf("Ask() after a typed-ahead \"y\" = %+v, want the denial typed after the question", v)
	}
}

func TestTerminalGivesUp(t *testing.T) {
	req := approvals.Request{Rule: "outside", Reason: "r", Created: time.Now(), Deadline: time.Now().Add(time.Minute)}
	t.Run("input closed", func(t *testing.T) {
		in, typist := io.Pipe()
		term := NewTerminal(in, newChanWriter())
		typist.Close()
		if _, err := term.Ask(t.Context(), req); !errors.Is(err, errInputClosed) {
			t.Errorf("Ask() on a closed input = %v, want errInputClosed", err)
		}
	})
	t.Run("withdrawn", func(t *testing.T) {
		in, typist := io.Pipe()
		defer typist.Close()
		out := newChanWriter()
		term := NewTerminal(in, out)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			_, err := term.Ask(ctx, req)
			done <- err
		}()
		out.waitFor(t, prompt, 1)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Ask() after cancel = %v, want context.Canceled", err)
		}
		out.waitFor(t, "no longer waiting", 1)
	})
}
