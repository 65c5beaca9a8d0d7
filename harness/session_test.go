package harness_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// turnsModel replies with its turns in order, then ends, and keeps what it
// was sent.
type turnsModel struct {
	turns []harness.Turn
	got   []harness.Input
}

func (m *turnsModel) Next(_ context.Context, in harness.Input) (harness.Turn, error) {
	m.got = append(m.got, in)
	if len(m.turns) == 0 {
		return harness.Turn{Stop: harness.StopEndTurn, Text: "done"}, nil
	}
	t := m.turns[0]
	m.turns = m.turns[1:]
	return t, nil
}

func click(x, y float64) actions.Action {
	return actions.Action{Kind: actions.Click, HasAt: true, At: actions.Pt(x, y)}
}

func typing(s string) actions.Action { return actions.Action{Kind: actions.Type, Text: s} }

// clientTools answers client calls when the test releases them.
type clientTools struct {
	mu      sync.Mutex
	started []string
	release chan struct{}
}

func (c *clientTools) Has(name string) bool { return strings.HasPrefix(name, "client_") }

func (c *clientTools) Run(ctx context.Context, call harness.Call) (string, error) {
	c.mu.Lock()
	c.started = append(c.started, call.ID)
	c.mu.Unlock()
	select {
	case <-c.release:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if call.Name == "client_fail" {
		return "", errors.New("the client tool failed")
	}
	return "answer to " + string(call.Input), nil
}

func TestClientToolsRunBesideDisplayCallsAndPairInOrder(t *testing.T) {
	m := &turnsModel{turns: []harness.Turn{{Stop: harness.StopToolUse, Calls: []harness.Call{
		{ID: "call_001", Name: "client_one", Input: json.RawMessage(`{"q":1}`)},
		{ID: "call_002", Name: "client_fail", Input: json.RawMessage(`{}`)},
		{ID: "call_003", Name: "computer", Actions: []actions.Action{click(10, 10)}},
		{ID: "call_004", Name: "computer", Actions: []actions.Action{click(20, 20)}},
	}}}}
	ct := &clientTools{release: make(chan struct{})}
	d := &screentest.Fake{}
	var mu sync.Mutex
	var order []string
	cfg := harness.Config{Model: m, Display: d, Policy: permissive, Client: ct,
		OnEvent: func(e trace.Event) {
			if e.Type == trace.TypeResult {
				mu.Lock()
				order = append(order, e.CallID)
				mu.Unlock()
				if e.CallID == "call_004" {
					close(ct.release) // the client answers only after the display calls ran
				}
			}
		}}
	out, err := harness.Run(t.Context(), cfg)
	if err != nil || out.Stop != harness.StopEndTurn {
		t.Fatalf("Run() = %+v, %v", out, err)
	}
	if got := strings.Join(order[:2], ","); got != "call_003,call_004" {
		t.Errorf("display calls answered %s first; they must not wait for the client", got)
	}
	rs := m.got[1].Results
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.CallID)
	}
	if got := strings.Join(ids, ","); got != "call_001,call_002,call_003,call_004" {
		t.Fatalf("results in order %s, want the calls' order", got)
	}
	if rs[0].Output != `answer to {"q":1}` || rs[0].Err != nil || rs[0].Shot != nil {
		t.Errorf("client result = %+v", rs[0])
	}
	if rs[1].Err == nil || !strings.Contains(rs[1].Err.Error(), "client tool failed") {
		t.Errorf("failed client result err = %v", rs[1].Err)
	}
	if rs[2].Shot == nil || rs[3].Shot == nil {
		t.Errorf("display results need screenshots")
	}
	if len(d.Performed()) != 2 || out.Calls != 4 || out.Failed != 1 {
		t.Errorf("performed %d, outcome %+v", len(d.Performed()), out)
	}
}

func TestRepeatStopDoesNotWaitForeverOnTheClient(t *testing.T) {
	var turns []harness.Turn
	for range 6 {
		turns = append(turns, harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{
			{ID: "c", Name: "computer", Actions: []actions.Action{click(1, 1)}},
			{ID: "k", Name: "client_never"},
		}})
	}
	ct := &clientTools{release: make(chan struct{})}
	m := &turnsModel{turns: turns}
	// The client answers the first four turns, then never again.
	go func() {
		for range 4 {
			ct.release <- struct{}{}
		}
	}()
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: &screentest.Fake{}, Policy: permissive, Client: ct})
	if err != nil || out.Stop != harness.StopRepeat {
		t.Fatalf("Run() = %+v, %v; want a repeat stop", out, err)
	}
}

func TestApproverEditReplacesTheAction(t *testing.T) {
	m := &turnsModel{turns: []harness.Turn{{Stop: harness.StopToolUse, Calls: []harness.Call{
		{ID: "c1", Name: "computer", Space: screen.Grid1000, Actions: []actions.Action{click(500, 500), typing("hello")}},
	}}}}
	d := &screentest.Fake{}
	edit := harness.ApproverFunc(func(_ context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		switch r.Action.Kind {
		case actions.Click: // image pixels of a 640x400 image
			e := click(100.5, 50.5)
			return harness.Decision{Edit: &e}, nil
		case actions.Type:
			e := typing("edited")
			return harness.Decision{Edit: &e, Notes: []string{"typed text changed"}}, nil
		}
		return harness.Decision{}, nil
	})
	cfg := harness.Config{Model: m, Display: d, Policy: permissive, Approver: edit,
		Capture: screen.CaptureOptions{Size: screen.Size{W: 640, H: 400}}}
	if _, err := harness.Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	p := d.Performed()
	if len(p) != 2 {
		t.Fatalf("performed %d actions", len(p))
	}
	if p[0].At != actions.Pt(201, 101) { // 640 → 1280: the centre of image pixel (100,50)
		t.Errorf("edited click at %v, want (201,101)", p[0].At)
	}
	if p[1].Text != "edited" {
		t.Errorf("typed %q, want the edit", p[1].Text)
	}
	notes := strings.Join(m.got[1].Results[0].Notes, "\n")
	if !strings.Contains(notes, "A human edited") || !strings.Contains(notes, "typed text changed") {
		t.Errorf("the model was not told about the edit: %q", notes)
	}

	// An edit outside the policy or the image is refused, not run.
	m = &turnsModel{turns: []harness.Turn{{Stop: harness.StopToolUse, Calls: []harness.Call{
		{ID: "c1", Name: "computer", Actions: []actions.Action{click(5, 5)}}}}}}
	d = &screentest.Fake{}
	far := harness.ApproverFunc(func(context.Context, harness.ApprovalRequest) (harness.Decision, error) {
		e := click(99999, 5)
		return harness.Decision{Edit: &e}, nil
	})
	if _, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive, Approver: far}); err != nil {
		t.Fatal(err)
	}
	if len(d.Performed()) != 0 || m.got[1].Results[0].Err == nil {
		t.Errorf("an out-of-image edit ran: %v", d.Performed())
	}
}

func TestSecretsAreTypedButNeverRecorded(t *testing.T) {
	const pw, typed = "hunter2-very-secret", "p4ssw0rd-typed"
	m := &turnsModel{turns: []harness.Turn{
		{Stop: harness.StopToolUse, Text: "I will log in", Calls: []harness.Call{
			{ID: "c1", Name: "computer", Raw: json.RawMessage(`{"action":"type","text":"user {{PW}}"}`),
				Actions: []actions.Action{typing("user {{PW}}")}}}},
		{Stop: harness.StopToolUse, Calls: []harness.Call{
			{ID: "c2", Name: "computer", Raw: json.RawMessage(`{"action":"type","text":"` + typed + `"}`),
				Actions: []actions.Action{typing(typed)}}}},
		{Stop: harness.StopToolUse, Text: "The password was " + typed + " and " + pw, Calls: []harness.Call{
			{ID: "c3", Name: "computer", Actions: []actions.Action{{Kind: actions.Screenshot}}}}},
	}}
	d := &screentest.Fake{}
	secretField := harness.ApproverFunc(func(_ context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
		return harness.Decision{Secret: r.CallID == "c2"}, nil // c2 types into a password field
	})
	dir := t.TempDir()
	tw, err := trace.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	cfg := harness.Config{Model: m, Display: d, Policy: permissive, Approver: secretField, Trace: tw,
		Task: "log in", Secrets: map[string]string{"PW": pw},
		OnEvent: func(e trace.Event) { b, _ := json.Marshal(e); seen = append(seen, string(b)) }}
	if _, err := harness.Run(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := d.Performed()
	if len(p) != 2 || p[0].Text != "user "+pw || p[1].Text != typed {
		t.Fatalf("the display did not get the real text: %+v", p)
	}
	if _, err := trace.WriteReport(dir); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{pw, typed} {
		for _, e := range seen {
			if strings.Contains(e, s) {
				t.Errorf("event leaks %q: %s", s, e)
			}
		}
		err := filepath.WalkDir(dir, func(path string, de os.DirEntry, err error) error {
			if err != nil || de.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), s) {
				t.Errorf("%s leaks %q", filepath.Base(path), s)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(strings.Join(seen, "\n"), "{{PW}}") {
		t.Errorf("the placeholder should stay visible in the events")
	}
}

func TestResumeAnswersOnlyTheOpenCalls(t *testing.T) {
	d := &screentest.Fake{}
	first, err := d.Capture(t.Context(), screen.CaptureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	turn := harness.Turn{Stop: harness.StopToolUse, Calls: []harness.Call{
		{ID: "done1", Name: "computer", FrameID: first.Frame.ID, Actions: []actions.Action{click(1, 1)}},
		{ID: "open2", Name: "computer", FrameID: first.Frame.ID, Actions: []actions.Action{click(2, 2)}},
	}}
	doneShot := first
	m := &turnsModel{}
	out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Policy: permissive,
		Resume: &harness.Resume{Step: 3, Turn: turn, Frames: []screen.Frame{first.Frame},
			Done: []harness.Result{{CallID: "done1", Ran: 1, Shot: &doneShot}}}})
	if err != nil || out.Stop != harness.StopEndTurn {
		t.Fatalf("Run() = %+v, %v", out, err)
	}
	if p := d.Performed(); len(p) != 1 || p[0].At != actions.Pt(2.5, 2.5) {
		t.Errorf("performed %+v, want only the open call", p)
	}
	if len(m.got) != 1 || m.got[0].Task != "" || len(m.got[0].Results) != 2 || m.got[0].Results[0].CallID != "done1" {
		t.Fatalf("the model got %+v", m.got)
	}
	if out.Steps != 4 {
		t.Errorf("steps = %d, want to continue from 3", out.Steps)
	}
}

func ExampleConfig_secrets() {
	m := &turnsModel{turns: []harness.Turn{{Stop: harness.StopToolUse, Calls: []harness.Call{
		{ID: "c1", Name: "computer", Actions: []actions.Action{typing("{{PASSWORD}}")}}}}}}
	d := &screentest.Fake{}
	_, err := harness.Run(context.Background(), harness.Config{Model: m, Display: d, Policy: permissive,
		Secrets: map[string]string{"PASSWORD": "correct horse"}})
	fmt.Println(err, d.Performed()[0].Text)
	// Output: <nil> correct horse
}
