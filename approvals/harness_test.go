package approvals_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// shopper is a model that clicks twice in one call, first on plain text
// and then on the buy button, and then stops. It keeps what it was sent.
type shopper struct{ got []harness.Input }

func (m *shopper) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.got = append(m.got, in)
	if len(m.got) > 1 {
		return harness.Turn{Stop: harness.StopEndTurn, Text: "done"}, nil
	}
	return harness.Turn{Stop: harness.StopToolUse, Text: "I will buy the shoes.", Calls: []harness.Call{{
		ID: "call_1", Name: "computer", Space: screen.Image,
		Actions: []actions.Action{clickAt(600, 400), clickAt(50, 50)}}}}, nil
}

func TestLoopWithGate(t *testing.T) {
	tests := []struct {
		name    string
		verdict approvals.Verdict
		wantRan int
		wantErr string
	}{
		{"denied", approvals.Verdict{Kind: approvals.Deny, By: "ann", Reason: "not within budget"}, 1, "not within budget"},
		{"approved", approvals.Verdict{Kind: approvals.Approve, By: "ann"}, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := approvals.NewQueue(approvals.QueueConfig{})
			g := newGate(t, approvals.GateConfig{Queue: q, HitTester: &page{}, Session: "s1"})
			seen := decideNext(t.Context(), q, tt.verdict)
			m, d := &shopper{}, &screentest.Fake{}
			out, err := harness.Run(t.Context(), harness.Config{Model: m, Display: d, Approver: g,
				Policy: actions.Policy{Allow: actions.Kinds()}})
			if err != nil {
				t.Fatalf("Run() = %v", err)
			}
			if out.Stop != harness.StopEndTurn {
				t.Errorf("Run() stop = %s (%s), want end_turn", out.Stop, out.Err)
			}
			res := <-seen
			if res.err != nil {
				t.Fatalf("Decide() = %v", res.err)
			}
			if res.req.Index != 1 || res.req.ModelText != "I will buy the shoes." || res.req.Rule != approvals.RulePurchase {
				t.Errorf("request = index %d, model text %q, rule %q; want the second click, the model's words, purchase",
					res.req.Index, res.req.ModelText, res.req.Rule)
			}
			// The display saw only what was let through: the click on
			// text, and the buy click only when approved.
			performed := d.Performed()
			if len(performed) != tt.wantRan {
				t.Fatalf("performed %d actions, want %d", len(performed), tt.wantRan)
			}
			for _, p := range performed {
				if p.At.X < 200 && p.At.Y < 200 && tt.wantRan == 1 {
					t.Errorf("the denied click reached the display: %v", p.At)
				}
			}
			r := m.got[1].Results[0]
			if tt.wantErr == "" {
				if r.Err != nil || r.Ran != 2 {
					t.Errorf("result = ran %d, %v; want both actions run", r.Ran, r.Err)
				}
				return
			}
			if !errors.Is(r.Err, harness.ErrDenied) || !strings.Contains(r.Err.Error(), tt.wantErr) || r.Ran != 1 {
				t.Errorf("result the model got = ran %d, %v; want 1 run and a denial saying %q", r.Ran, r.Err, tt.wantErr)
			}
			if r.Shot == nil {
				t.Error("the denied call's result has no fresh screenshot")
			}
		})
	}
}
