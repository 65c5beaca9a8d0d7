package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
)

// stateVersion is the version of the saved state's format.
const stateVersion = 1

// state is a Model's conversation as MarshalState saves it.
type state struct {
	Version int                          `json:"version"`
	Model   string                       `json:"model"`
	Tool    ToolVersion                  `json:"tool"`
	History []anthropic.BetaMessageParam `json:"history"`
	Pending []pendingState               `json:"pending,omitempty"`
	Paused  bool                         `json:"paused,omitempty"`
	// PausedContent is the paused turn's content blocks, as the API sent
	// them.
	PausedContent []json.RawMessage `json:"paused_content,omitempty"`
	Cursor        *actions.Point    `json:"cursor,omitempty"`
	// Window is what Config.Context needs of the conversation; a state
	// saved without it is taken to have replaced no image.
	Window *ctxpolicy.Window `json:"window,omitempty"`
}

type pendingState struct {
	ID     string         `json:"id"`
	N      int            `json:"n,omitempty"`
	End    *actions.Point `json:"end,omitempty"`
	Client bool           `json:"client,omitempty"`
}

var _ harness.Stateful = (*Model)(nil)

// MarshalState saves the conversation: every message sent and received, as
// the next request sends it (the screenshots still sent in full as base64
// PNG or JPEG, about 4/3 of their bytes; older ones already replaced by
// Config.Context's placeholder), the calls waiting for results, a paused
// turn, the pointer position, and the count of images and the last
// screenshot's hash that Config.Context goes by. It holds no API key or other
// Config field but the model and tool names, which UnmarshalState checks.
func (m *Model) MarshalState() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := state{Version: stateVersion, Model: m.cfg.Model, Tool: m.version, History: m.history,
		Paused: m.isPaused, Cursor: m.cursor, Window: &m.win}
	for _, p := range m.pending {
		s.Pending = append(s.Pending, pendingState{ID: p.id, N: p.n, End: p.end, Client: p.client})
	}
	for _, c := range m.paused {
		s.PausedContent = append(s.PausedContent, json.RawMessage(c.RawJSON()))
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("anthropic: save state: %w", err)
	}
	return b, nil
}

// UnmarshalState replaces m's conversation with one MarshalState saved, so
// that m continues it: the next Next sends what the saving Model's next
// Next would have. The state must come from a Model of the same model and
// tool version; m's Config supplies everything else (key, URL, tools).
func (m *Model) UnmarshalState(b []byte) error {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("anthropic: restore state: %w", err)
	}
	switch {
	case s.Version != stateVersion:
		return fmt.Errorf("anthropic: restore state: format version %d, want %d", s.Version, stateVersion)
	case s.Model != m.cfg.Model || s.Tool != m.version:
		return fmt.Errorf("anthropic: restore state: saved for model %q with %s, this Model is %q with %s",
			clip(s.Model), clip(string(s.Tool)), m.cfg.Model, m.version)
	case s.Paused && len(s.Pending) > 0:
		return errors.New("anthropic: restore state: a paused turn cannot have pending calls")
	}
	for i, msg := range s.History {
		if msg.Role != anthropic.BetaMessageParamRoleUser && msg.Role != anthropic.BetaMessageParamRoleAssistant {
			return fmt.Errorf("anthropic: restore state: message %d has role %q", i, clip(string(msg.Role)))
		}
	}
	var pending []pendingCall
	for i, p := range s.Pending {
		if p.ID == "" {
			return fmt.Errorf("anthropic: restore state: pending call %d has no id", i)
		}
		pending = append(pending, pendingCall{id: p.ID, n: p.N, end: p.End, client: p.Client})
	}
	var paused []anthropic.BetaContentBlockUnion
	for i, raw := range s.PausedContent {
		var c anthropic.BetaContentBlockUnion
		if err := json.Unmarshal(raw, &c); err != nil {
			return fmt.Errorf("anthropic: restore state: paused block %d: %w", i, err)
		}
		paused = append(paused, c)
	}
	win := ctxpolicy.Window{Images: countImages(s.History)}
	if s.Window != nil {
		win = *s.Window
	}
	if n := countImages(s.History); win.Images < n {
		return fmt.Errorf("anthropic: restore state: the conversation holds %d images, the state counts %d", n, win.Images)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.history, m.pending, m.cursor, m.win = s.History, pending, s.Cursor, win
	m.isPaused, m.paused = s.Paused, paused
	return nil
}
