package gemini

import (
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/harness"
)

// stateVersion is the version of the saved state's format.
const stateVersion = 1

// state is a Model's conversation as MarshalState saves it.
type state struct {
	Version int              `json:"version"`
	Model   string           `json:"model"`
	Set     FunctionSet      `json:"set"`
	History []*genai.Content `json:"history"`
	Pending []pendingState   `json:"pending,omitempty"`
	Calls   int              `json:"calls,omitempty"`
}

type pendingState struct {
	ID     string                `json:"id"`
	WireID string                `json:"wire_id,omitempty"`
	Name   string                `json:"name"`
	Safety []harness.SafetyCheck `json:"safety,omitempty"`
	Client bool                  `json:"client,omitempty"`
}

var _ harness.Stateful = (*Model)(nil)

// MarshalState saves the conversation: every content sent and received, as
// the history holds it (the first screenshot and the function responses of
// the newest Config.KeepShots turns carry their images, base64 in the JSON,
// about 4/3 of their bytes; older ones were already dropped), the calls
// waiting for results and the count of calls for ids. It holds no API key
// or other Config field but the model name and function set, which
// UnmarshalState checks.
func (m *Model) MarshalState() ([]byte, error) {
	s := state{Version: stateVersion, Model: m.model, Set: m.set, History: m.history, Calls: m.calls}
	for _, p := range m.pending {
		s.Pending = append(s.Pending, pendingState{ID: p.id, WireID: p.wireID, Name: p.name, Safety: p.safety, Client: p.client})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("gemini: save state: %w", err)
	}
	return b, nil
}

// UnmarshalState replaces m's conversation with one MarshalState saved, so
// that m continues it: the next Next sends what the saving Model's next
// Next would have. The state must come from a Model of the same model and
// function set; m's Config supplies everything else (key, URL, tools).
func (m *Model) UnmarshalState(b []byte) error {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("gemini: restore state: %w", err)
	}
	switch {
	case s.Version != stateVersion:
		return fmt.Errorf("gemini: restore state: format version %d, want %d", s.Version, stateVersion)
	case s.Model != m.model || s.Set != m.set:
		return fmt.Errorf("gemini: restore state: saved for model %q with the %s functions, this Model is %q with %s",
			clip(s.Model), s.Set, m.model, m.set)
	case s.Calls < 0:
		return fmt.Errorf("gemini: restore state: call count %d", s.Calls)
	}
	for i, c := range s.History {
		if c == nil || (c.Role != genai.RoleUser && c.Role != genai.RoleModel) {
			return fmt.Errorf("gemini: restore state: content %d has no user or model role", i)
		}
	}
	var calls []pending
	for i, p := range s.Pending {
		if p.ID == "" || p.Name == "" {
			return fmt.Errorf("gemini: restore state: pending call %d has no id or name", i)
		}
		calls = append(calls, pending{id: p.ID, wireID: p.WireID, name: p.Name, safety: p.Safety, client: p.Client})
	}
	m.history, m.pending, m.calls = s.History, calls, s.Calls
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
