package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/store"
)

// A session without rules of its own gets the server's; one with rules
// keeps them; a rules document that names no timeout leaves it to the
// server, whichever rules apply; supervise and confirm come on top.
func TestRulesOfServerAndSession(t *testing.T) {
	server := &approvals.Rules{Timeout: 2 * time.Minute, Rules: []approvals.Rule{{Name: "server-clicks",
		Kinds: []actions.Kind{actions.Click}, Reason: "the server says so"}}}
	names := func(r approvals.Rules) []string {
		var out []string
		for _, x := range r.Rules {
			out = append(out, x.Name)
		}
		return out
	}
	has := func(r approvals.Rules, name string) bool {
		for _, x := range names(r) {
			if x == name {
				return true
			}
		}
		return false
	}

	r, err := rulesOf(Spec{Approvals: ApprovalSpec{Supervise: SuperviseAll}}, server)
	if err != nil {
		t.Fatal(err)
	}
	if !has(r, "server-clicks") || r.Timeout != 2*time.Minute || r.Supervise != approvals.SuperviseAll {
		t.Errorf("without rules of its own: %v timeout %v supervise %q, want the server's rules and timeout, supervise all", names(r), r.Timeout, r.Supervise)
	}
	r, err = rulesOf(Spec{Approvals: ApprovalSpec{Supervise: SuperviseFlagged, Confirm: []actions.Kind{actions.Type}}}, server)
	if err != nil {
		t.Fatal(err)
	}
	if !has(r, "server-clicks") || !has(r, "confirm") {
		t.Errorf("confirm on top of the server's rules: %v", names(r))
	}
	if len(server.Rules) != 1 {
		t.Errorf("rulesOf changed the server's rules: %v", names(*server))
	}

	own, _ := json.Marshal(map[string]any{"rules": []map[string]any{{"name": "mine", "kinds": []string{"navigate"}, "reason": "r"}}})
	r, err = rulesOf(Spec{Approvals: ApprovalSpec{Rules: own, Supervise: SuperviseFlagged}}, server)
	if err != nil {
		t.Fatal(err)
	}
	if has(r, "server-clicks") || !has(r, "mine") || r.Timeout != 0 {
		t.Errorf("rules of its own without a timeout: %v timeout %v, want only its own and no timeout (the server's)", names(r), r.Timeout)
	}
	timed, _ := json.Marshal(map[string]any{"timeout": "30s"})
	if r, err = rulesOf(Spec{Approvals: ApprovalSpec{Rules: timed, Supervise: SuperviseFlagged}}, nil); err != nil || r.Timeout != 30*time.Second {
		t.Errorf("rules naming a timeout: %v, %v; want 30s", r.Timeout, err)
	}
	// No rules anywhere: the zero Rules, which are the defaults.
	if r, err = rulesOf(Spec{Approvals: ApprovalSpec{Supervise: SuperviseFlagged}}, nil); err != nil || len(r.Rules) != 0 || r.Timeout != 0 {
		t.Errorf("no rules anywhere: %v timeout %v, %v; want the zero Rules", names(r), r.Timeout, err)
	}
}

// A call that gets its result while an approval of it is still pending
// (a resumed call that ended without asking again) closes that approval:
// nothing waits for it, and nobody must approve what cannot run.
func TestResultClosesOrphanedApprovals(t *testing.T) {
	m := newManager(t, t.TempDir())
	id, err := m.Attach(t.Context(), KindMCP, "test", "ann")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := m.Get(id)
	ap, err := m.Approver(id, clickRules, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	// The waiter goes away the way a shutdown takes it: the request stays.
	done := ask(t, ctx, ap, clickAt(t, "c1", 10, 20))
	waitEvent(t, s, EventPermissionRequest)
	cancel(errShutdown)
	<-done
	if len(m.q.Pending()) != 1 {
		t.Fatalf("pending = %d, want the request kept for a restart", len(m.q.Pending()))
	}
	other := clickAt(t, "c2", 10, 20)
	done2 := ask(t, t.Context(), ap, other)
	waitNth(t, s, EventPermissionRequest, 2)

	s.onEvent("t1", trace.Event{Type: trace.TypeResult, CallID: "c1", Error: "this text was secret and is not kept across a restart"})
	ps := m.q.Pending()
	if len(ps) != 1 || ps[0].CallID != "c2" {
		t.Fatalf("pending after c1's result = %+v, want only c2's", ps)
	}
	as, err := m.st.Approvals(t.Context(), store.ApprovalFilter{Session: id})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range as {
		if a.CallID == "c1" && a.Status == store.ApprovalPending {
			t.Errorf("c1's approval is still pending in the store: %+v", a)
		}
	}
	if err := m.Decide(t.Context(), ps[0].ID, Decision{Decision: "approve"}, "ann"); err != nil {
		t.Fatal(err)
	}
	if d := <-done2; d.err != nil {
		t.Errorf("c2 = %v, want approved", d.err)
	}
}
