package session

import (
	"context"

	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// inspectTimeout bounds one hit-test of the display.
const inspectTimeout = 3 * time.Second

// rulesOf reads a spec's approval rules: the rules document (the YAML
// schema of package approvals, as JSON), with Supervise and Confirm on top.
func rulesOf(spec Spec) (approvals.Rules, error) {
	var r approvals.Rules // the zero Rules are the defaults; Timeout 0 leaves it to the server
	if len(spec.Approvals.Rules) > 0 {
		var err error
		if r, err = approvals.Parse(spec.Approvals.Rules); err != nil {
			return r, bad("approvals.rules: %v", err)
		}
	}
	r.Supervise = approvals.Supervise(spec.Approvals.Supervise)
	if len(spec.Approvals.Confirm) > 0 {
		r.Rules = append(r.Rules, approvals.Rule{Name: "confirm", Kinds: spec.Approvals.Confirm,
			Reason: "this session confirms these kinds of actions"})
	}
	if err := r.Validate(); err != nil {
		return r, bad("approvals: %v", err)
	}
	return r, nil
}

// check asks the session's rules whether r needs a human, looking at what
// lies under the action on the display when it can be inspected.
func (s *Session) check(ctx context.Context, r harness.ApprovalRequest) (rule, reason string, target *screen.Target) {
	subj := approvals.Subject{Index: r.Index, Action: r.Action, Mapped: r.Mapped, Frame: r.Frame,
		PolicyHosts: s.spec.Policy.Hosts}
	if r.Mapped != nil {
		if r.Mapped.HasAt {
			subj.Points = append(subj.Points, r.Frame.FromCSS(r.Mapped.At))
		}
		for _, p := range r.Mapped.Path {
			subj.Points = append(subj.Points, r.Frame.FromCSS(p))
		}
	}
	s.mu.Lock()
	var d Display
	if s.disp != nil {
		d = s.disp.inner
	}
	s.mu.Unlock()
	if ht, ok := d.(approvals.HitTester); ok && r.Index >= 0 {
		subj.DOM = true
		ictx, cancel := context.WithTimeout(ctx, inspectTimeout)
		var t screen.Target
		var err error
		switch {
		case r.Mapped != nil && r.Mapped.HasAt:
			t, err = ht.HitTest(ictx, r.Mapped.At)
		case r.Action.Kind == actions.Type || r.Action.Kind == actions.Keypress:
			if fr, ok := d.(approvals.FocusReporter); ok {
				t, err = fr.Focused(ictx)
			}
		}
		cancel()
		if err != nil {
			subj.TargetErr = err
		} else if t != (screen.Target{}) {
			subj.Target = &t
		}
	}
	if dr, ok := d.(approvals.DialogReporter); ok {
		if dl, open := dr.Dialog(); open {
			subj.Dialog = &dl
		}
		subj.DialogKnown = true
	}
	fs := s.rules.Evaluate(subj)
	if len(fs) == 0 {
		if r.Index < 0 {
			return "safety-check", "the model's provider asks a human to confirm this step", subj.Target
		}
		return "", "", nil
	}
	return fs[0].Rule, fs[0].Reason, subj.Target
}
