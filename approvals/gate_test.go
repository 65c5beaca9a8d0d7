package approvals_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// frame is a 1280x800 viewport sent to the model at 640x400.
var frame = screen.Frame{ID: "f1", URL: "https://shop.example/cart", Viewport: screen.Size{W: 1280, H: 800}, DPR: 1,
	Clip: actions.Rect{Max: actions.Pt(1280, 800)}, Capture: screen.Size{W: 1280, H: 800}, Sent: screen.Size{W: 640, H: 400},
	Format: screen.PNG}

// page is a fake hit-tester: a buy button at the top left of the viewport
// (CSS px x, y < 200), plain text elsewhere. It records the points asked.
type page struct {
	mu     sync.Mutex
	asked  []actions.Point
	err    error
	focus  screen.Target
	dialog *screen.Dialog
}

func (p *page) HitTest(ctx context.Context, at actions.Point) (screen.Target, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = append(p.asked, at)
	if p.err != nil {
		return screen.Target{}, p.err
	}
	if at.X < 200 && at.Y < 200 {
		return screen.Target{Tag: "button", Role: "button", Name: "Buy now"}, nil
	}
	return screen.Target{Tag: "p", Text: "Welcome to the shop, where many fine things are on sale today."}, nil
}

func (p *page) Focused(ctx context.Context) (screen.Target, error) { return p.focus, nil }

func (p *page) Dialog() (screen.Dialog, bool) {
	if p.dialog == nil {
		return screen.Dialog{}, false
	}
	return *p.dialog, true
}

// request makes the loop's ApprovalRequest for a in frame's image space.
func request(t *testing.T, call string, a actions.Action) harness.ApprovalRequest {
	t.Helper()
	r := harness.ApprovalRequest{CallID: call, Action: a, Frame: frame, ModelText: "I will buy it."}
	if a.Kind.IsPointer() {
		m, err := frame.Map(a, screen.Image)
		if err != nil {
			t.Fatalf("Map(%v) = %v", a.LogValue(), err)
		}
		r.Mapped = &m
	}
	return r
}

func clickAt(x, y float64) actions.Action {
	return actions.Action{Kind: actions.Click, At: actions.Pt(x, y), HasAt: true}
}

func newGate(t *testing.T, cfg approvals.GateConfig) *approvals.Gate {
	t.Helper()
	g, err := approvals.NewGate(cfg)
	if err != nil {
		t.Fatalf("NewGate() = %v", err)
	}
	return g
}

// decideNext waits for the next request on q and decides it with v. It
// returns the request it saw, or an error, on the returned channel.
func decideNext(ctx context.Context, q *approvals.Queue, v approvals.Verdict) <-chan result {
	out := make(chan result, 1)
	events := q.Subscribe(ctx)
	go func() {
		for ev := range events {
			if ev.Type != approvals.EventRequest {
				continue
			}
			out <- result{ev.Request, q.Decide(ev.Request.ID, v)}
			return
		}
		out <- result{err: errors.New("no request before the subscription ended")}
	}()
	return out
}

type result struct {
	req approvals.Request
	err error
}

func TestGateLetsBenignActionsThrough(t *testing.T) {
	p := &page{}
	q := approvals.NewQueue(approvals.QueueConfig{OnRequest: func(r approvals.Request) error {
		t.Errorf("OnRequest(%+v) for a benign action", r)
		return nil
	}})
	g := newGate(t, approvals.GateConfig{Queue: q, HitTester: p})
	d, err := g.Approve(t.Context(), request(t, "c1", clickAt(400, 300)))
	if err != nil || d.Edit != nil {
		t.Errorf("Approve(click on text) = %+v, %v; want an approval", d, err)
	}
	want := []actions.Point{actions.Pt(801, 601)} // the centre of image pixel (400,300), CSS px
	if diff := cmp.Diff(want, p.asked); diff != "" {
		t.Errorf("hit-tested points (-want +got):\n%s", diff)
	}
}

func TestGateDecisions(t *testing.T) {
	edit := clickAt(500, 300)
	tests := []struct {
		name    string
		verdict approvals.Verdict
		wantErr string // "" for an approval
		want    harness.Decision
	}{
		{"approve", approvals.Verdict{Kind: approvals.Approve, By: "ann"}, "",
			harness.Decision{Notes: []string{"A human approved this action (purchase)."}}},
		{"deny", approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "we do not buy on Sundays"},
			`denied by a human (purchase: clicking the button "Buy now" may spend money): we do not buy on Sundays`, harness.Decision{}},
		{"edit", approvals.Verdict{Kind: approvals.Edit, By: "ann", Edit: &edit, Reason: "click the text instead"}, "",
			harness.Decision{Edit: &edit, Notes: []string{"The human who edited it said: click the text instead"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var audit []approvals.Verdict
			q := approvals.NewQueue(approvals.QueueConfig{OnDecision: func(r approvals.Request, v approvals.Verdict) error {
				audit = append(audit, v)
				return nil
			}})
			g := newGate(t, approvals.GateConfig{Queue: q, HitTester: &page{}, Session: "s1"})
			seen := decideNext(t.Context(), q, tt.verdict)
			d, err := g.Approve(t.Context(), request(t, "c1", clickAt(20, 10)))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Approve() = %v, want an approval", err)
			case tt.wantErr != "" && (!errors.Is(err, harness.ErrDenied) || err.Error() != tt.wantErr):
				t.Fatalf("Approve() = %v, want ErrDenied %q", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, d); diff != "" {
				t.Errorf("Approve() decision (-want +got):\n%s", diff)
			}
			res := <-seen
			if res.err != nil {
				t.Fatalf("Decide() = %v", res.err)
			}
			r := res.req
			wantReq := approvals.Request{ID: r.ID, Session: "s1", CallID: "c1", Rule: "purchase",
				Reason: `clicking the button "Buy now" may spend money`, Findings: r.Findings, Action: clickAt(20, 10),
				Point: &actions.Point{X: 41, Y: 21}, Marker: &actions.Point{X: 20, Y: 10},
				Target: &screen.Target{Tag: "button", Role: "button", Name: "Buy now"}, Frame: frame,
				ModelText: "I will buy it.", Created: r.Created, Deadline: r.Created.Add(5 * time.Minute)}
			if diff := cmp.Diff(wantReq, r); diff != "" {
				t.Errorf("the request the panel saw (-want +got):\n%s", diff)
			}
			if len(audit) != 1 || audit[0].By != "ann" || audit[0].At.IsZero() {
				t.Errorf("audited verdicts = %+v, want one by ann with a time", audit)
			}
			if n := len(q.Pending()); n != 0 {
				t.Errorf("Pending() has %d requests after the decision, want 0", n)
			}
		})
	}
}

func TestGateTimeoutIsADenial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var audit []approvals.Verdict
		q := approvals.NewQueue(approvals.QueueConfig{OnDecision: func(r approvals.Request, v approvals.Verdict) error {
			audit = append(audit, v)
			return nil
		}})
		g := newGate(t, approvals.GateConfig{Queue: q, HitTester: &page{}})
		start := time.Now()
		_, err := g.Approve(t.Context(), request(t, "c1", clickAt(20, 10)))
		if !errors.Is(err, harness.ErrDenied) || !errors.Is(err, approvals.ErrExpired) || !strings.Contains(err.Error(), "no decision within 5m0s") {
			t.Errorf("Approve() with nobody deciding = %v, want a denial: no decision within 5m0s", err)
		}
		if waited := time.Since(start); waited != 5*time.Minute {
			t.Errorf("Approve() waited %v, want 5m", waited)
		}
		if len(audit) != 1 || audit[0].By != "timeout" || audit[0].Kind != approvals.Deny {
			t.Errorf("audited verdicts = %+v, want one denial by timeout", audit)
		}
	})
}

func TestGateContextCancelKeepsTheRequest(t *testing.T) {
	q := approvals.NewQueue(approvals.QueueConfig{})
	g := newGate(t, approvals.GateConfig{Queue: q, HitTester: &page{}, Session: "s1"})
	ctx, cancel := context.WithCancel(t.Context())
	events := q.Subscribe(t.Context())
	go func() {
		<-events // the request is waiting: the session stops
		cancel()
	}()
	_, err := g.Approve(ctx, request(t, "c1", clickAt(20, 10)))
	if !errors.Is(err, context.Canceled) || errors.Is(err, harness.ErrDenied) {
		t.Fatalf("Approve() with a canceled context = %v, want context.Canceled", err)
	}
	pending := q.Pending()
	if len(pending) != 1 {
		t.Fatalf("Pending() = %d requests after the asker left, want 1", len(pending))
	}
	// A human decides while nobody waits; the asker comes back (the
	// session resumed) and gets the verdict at once, without a new request.
	if err := q.Decide(pending[0].ID, approvals.Verdict{Kind: approvals.Approve, By: "ann"}); err != nil {
		t.Fatalf("Decide() = %v", err)
	}
	if _, err := g.Approve(t.Context(), request(t, "c1", clickAt(20, 10))); err != nil {
		t.Errorf("Approve() again after the decision = %v, want the approval", err)
	}
}

func TestGateFailsClosedWhenTheHitTestFails(t *testing.T) {
	q := approvals.NewQueue(approvals.QueueConfig{})
	g := newGate(t, approvals.GateConfig{Queue: q, HitTester: &page{err: errors.New("page hung")}})
	seen := decideNext(t.Context(), q, approvals.Verdict{Kind: approvals.Deny, By: "ann"})
	_, err := g.Approve(t.Context(), request(t, "c1", clickAt(400, 300)))
	if !errors.Is(err, harness.ErrDenied) || !strings.Contains(err.Error(), "no reason given") {
		t.Errorf("Approve() = %v, want a denial with no reason given", err)
	}
	if res := <-seen; res.req.Rule != approvals.RuleNoTarget || !strings.Contains(res.req.Reason, "page hung") {
		t.Errorf("request rule %q reason %q, want %s naming the error", res.req.Rule, res.req.Reason, approvals.RuleNoTarget)
	}
}

func TestGateKeyboardUsesFocus(t *testing.T) {
	p := &page{focus: screen.Target{Tag: "input", InputType: "password", Name: "Password", Editable: true}}
	q := approvals.NewQueue(approvals.QueueConfig{})
	g := newGate(t, approvals.GateConfig{Queue: q, HitTester: p})
	seen := decideNext(t.Context(), q, approvals.Verdict{Kind: approvals.Approve, By: "ann"})
	if _, err := g.Approve(t.Context(), request(t, "c1", actions.Action{Kind: actions.Type, Text: "hunter2"})); err != nil {
		t.Fatalf("Approve(type) = %v", err)
	}
	res := <-seen
	if res.req.Rule != approvals.RulePassword || res.req.Target == nil || res.req.Target.InputType != "password" || res.req.Point != nil {
		t.Errorf("request = rule %q target %+v point %v; want password, the focused field, no point", res.req.Rule, res.req.Target, res.req.Point)
	}
}

func TestGateDialog(t *testing.T) {
	p := &page{dialog: &screen.Dialog{Type: "beforeunload", Message: "Leave site?"}}
	q := approvals.NewQueue(approvals.QueueConfig{})
	g := newGate(t, approvals.GateConfig{Queue: q, HitTester: p, Dialogs: p})
	seen := decideNext(t.Context(), q, approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "stay"})
	_, err := g.Approve(t.Context(), request(t, "c1", actions.Action{Kind: actions.Dialog, Accept: true}))
	if !errors.Is(err, harness.ErrDenied) {
		t.Errorf("Approve(accept beforeunload) = %v, want a denial", err)
	}
	if res := <-seen; res.req.Rule != approvals.RuleLeavePage || res.req.Dialog == nil || res.req.Dialog.Message != "Leave site?" {
		t.Errorf("request = rule %q dialog %+v, want leave-page with the dialog", res.req.Rule, res.req.Dialog)
	}
}

func TestGateWithoutDOM(t *testing.T) {
	r, err := approvals.Parse([]byte("regions: [{name: corner, reason: the corner, x: 0, y: 0, w: 50, h: 50}]"))
	if err != nil {
		t.Fatal(err)
	}
	q := approvals.NewQueue(approvals.QueueConfig{})
	g := newGate(t, approvals.GateConfig{Queue: q, Rules: r})
	// Outside the region: approved, and the model is told once that the
	// rules could not see elements.
	for i, want := range []int{1, 0} {
		d, err := g.Approve(t.Context(), request(t, "c1", clickAt(400, 300)))
		if err != nil || len(d.Notes) != want {
			t.Errorf("Approve(click) #%d = %+v, %v; want %d note(s)", i, d, err, want)
		}
	}
	seen := decideNext(t.Context(), q, approvals.Verdict{Kind: approvals.Approve, By: "ann"})
	if _, err := g.Approve(t.Context(), request(t, "c2", clickAt(20, 10))); err != nil {
		t.Fatalf("Approve(click in region) = %v", err)
	}
	res := <-seen
	if !res.req.NoDOM || res.req.Note != approvals.NoDOMNote || res.req.Rule != "corner" || res.req.Target != nil {
		t.Errorf("request = %+v, want rule corner with the no-DOM note", res.req)
	}
}

func TestGateSafetyChecks(t *testing.T) {
	q := approvals.NewQueue(approvals.QueueConfig{})
	g := newGate(t, approvals.GateConfig{Queue: q, Rules: approvals.Rules{Supervise: approvals.SuperviseNone}})
	seen := decideNext(t.Context(), q, approvals.Verdict{Kind: approvals.Approve, By: "ann"})
	r := harness.ApprovalRequest{CallID: "c1", Index: -1, Frame: frame,
		SafetyChecks: []harness.SafetyCheck{{ID: "sc1", Code: "malicious_instructions"}}}
	if _, err := g.Approve(t.Context(), r); err != nil {
		t.Fatalf("Approve(safety checks) = %v", err)
	}
	res := <-seen
	if res.req.Rule != approvals.RuleSafetyCheck || len(res.req.SafetyChecks) != 1 || res.req.Index != -1 || res.req.NoDOM {
		t.Errorf("request = %+v, want the safety checks", res.req)
	}
}

func TestNewGateErrors(t *testing.T) {
	if _, err := approvals.NewGate(approvals.GateConfig{}); err == nil {
		t.Error("NewGate() without a queue = nil error")
	}
	if _, err := approvals.NewGate(approvals.GateConfig{Queue: approvals.NewQueue(approvals.QueueConfig{}),
		Rules: approvals.Rules{Supervise: "x"}}); err == nil {
		t.Error("NewGate() with bad rules = nil error")
	}
}
