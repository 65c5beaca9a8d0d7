package gemini

import (
	"encoding/json"
	"fmt"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
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
	// Window is what Config.Context needs of the conversation; a state
	// saved without it is taken to have replaced no image.
	Window *ctxpolicy.Window `json:"window,omitempty"`
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
// the next request sends it (the screenshots still sent in full base64 in
// the JSON, about 4/3 of their bytes; older ones already replaced as
// Config.Context says), the calls waiting for results, the count of calls
// for ids, and the count of images and the last screenshot's hash that
// Config.Context goes by. It holds no API key
// or other Config field but the model name and function set, which
// UnmarshalState checks.
func (m *Model) MarshalState() ([]byte, error) {
	s := state{Version: stateVersion, Model: m.model, Set: m.set, History: m.history, Calls: m.calls, Window: &m.win}
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
	win := ctxpolicy.Window{Images: countImages(s.History)}
	if s.Window != nil {
		win = *s.Window
	}
	if n := countImages(s.History); win.Images < n {
		return fmt.Errorf("gemini: restore state: the conversation holds %d images, the state counts %d", n, win.Images)
	}
	m.history, m.pending, m.calls, m.win = s.History, calls, s.Calls, win
	return nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
