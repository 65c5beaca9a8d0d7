package harness_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen/screentest"
)

// convModel is a Stateful model that keeps its own calls in its
// conversation, as the provider adapters do, and records the
// conversation each request would carry.
type convModel struct {
	turns []harness.Turn
	conv  []string // the conversation: the model's raw calls, in order
	sent  []string // per request: the conversation as sent
}

func (m *convModel) Next(_ context.Context, in harness.Input) (harness.Turn, error) {
	m.sent = append(m.sent, strings.Join(m.conv, "\n"))
	if len(m.turns) == 0 {
		return harness.Turn{Stop: harness.StopEndTurn, Text: "done"}, nil
	}
	t := m.turns[0]
	m.turns = m.turns[1:]
	for _, c := range t.Calls {
		m.conv = append(m.conv, string(c.Raw))
	}
	return t, nil
}

func (m *convModel) MarshalState() ([]byte, error) { return json.Marshal(m.conv) }

func (m *convModel) UnmarshalState(b []byte) error { return json.Unmarshal(b, &m.conv) }

// TestSecretsLeaveTheModelsConversation: text typed into a password field
// is redacted from what the loop hands OnTurn for the saved conversation
// and from the model's own conversation before its next request, however
// the approval ended: approved, denied, or never decided.
func TestSecretsLeaveTheModelsConversation(t *testing.T) {
	for _, tt := range []struct {
		name     string
		decision error
	}{
		{"approved", nil},
		{"denied", fmt.Errorf("%w: not now", harness.ErrDenied)},
		{"abandoned", context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pw := "Hunter2-Conv-" + tt.name
			raw, _ := json.Marshal(map[string]any{"action": "type", "text": pw})
			m := &convModel{turns: []harness.Turn{{Stop: harness.StopToolUse, Calls: []harness.Call{
				{ID: "c1", Name: "computer", Raw: raw, Actions: []actions.Action{click(50, 50), typing(pw)}}}}}}
			approver := harness.ApproverFunc(func(_ context.Context, r harness.ApprovalRequest) (harness.Decision, error) {
				if r.Action.Kind == actions.Type {
					return harness.Decision{}, tt.decision
				}
				return harness.Decision{}, nil
			})
			var saved []string
			cfg := harness.Config{Model: m, Display: &screentest.Fake{}, Policy: permissive, Approver: approver,
				Inspector: page{focused: searchBox},
				OnTurn: func(_ harness.Turn, r harness.Redactor) {
					b, _ := m.MarshalState()
					saved = append(saved, string(r.JSON(b)))
				}}
			if _, err := harness.Run(t.Context(), cfg); err != nil {
				t.Fatal(err)
			}
			if len(saved) != 2 || len(m.sent) != 2 {
				t.Fatalf("%d turns saved, %d requests; want 2 and 2", len(saved), len(m.sent))
			}
			for i, s := range saved {
				if strings.Contains(s, pw) {
					t.Errorf("the conversation saved at turn %d holds the password: %s", i+1, s)
				}
			}
			if strings.Contains(m.sent[1], pw) || !strings.Contains(m.sent[1], `"action":"type"`) {
				t.Errorf("the model's second request carries %q, want its call with the password redacted", m.sent[1])
			}
		})
	}
}
