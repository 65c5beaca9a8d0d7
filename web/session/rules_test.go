package session

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
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
