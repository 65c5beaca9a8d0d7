package chat

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/screen"
)

// stateVersion is the version of the saved state's format.
const stateVersion = 1

// state is a Model's conversation as MarshalState saves it.
type state struct {
	Version int            `json:"version"`
	Model   string         `json:"model"`
	Dialect Dialect        `json:"dialect"`
	Msgs    []stateMessage `json:"messages"`
	Pending []pendingState `json:"pending,omitempty"`
	W       int            `json:"w,omitempty"` // the latest screenshot's size
	H       int            `json:"h,omitempty"`
	Calls   int            `json:"calls,omitempty"`
	Done    *doneState     `json:"done,omitempty"`
	Started bool           `json:"started,omitempty"`
	Warned  bool           `json:"warned,omitempty"`
	// Window is what Config.Context needs of the conversation; a state
	// saved without it is taken to have replaced no image.
	Window *ctxpolicy.Window `json:"window,omitempty"`
}

type stateMessage struct {
	Role   string      `json:"role"`
	Parts  []statePart `json:"parts,omitempty"`
	Text   string      `json:"text,omitempty"`
	Calls  []stateCall `json:"calls,omitempty"`
	CallID string      `json:"call_id,omitempty"`
}

type statePart struct {
	Text  string `json:"text,omitempty"`
	Image string `json:"image,omitempty"`
}

type stateCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Args string `json:"args"`
}

type pendingState struct {
	ID      string `json:"id"`
	Actions int    `json:"actions,omitempty"`
	Client  bool   `json:"client,omitempty"`
}

type doneState struct {
	Stop harness.StopReason `json:"stop"`
	Text string             `json:"text,omitempty"`
}

var _ harness.Stateful = (*Model)(nil)

// MarshalState saves the conversation: every message as the next request
// sends it (the screenshots still sent in full as data URLs, about 4/3 of
// their bytes; older ones already replaced as Config.Context says), the
// calls waiting for results, and what the next turn depends on (the latest
// screenshot's size, the call count, a UI-TARS end announced after a
// batch, the count of images and the last screenshot's hash that
// Config.Context goes by). It holds no API key or other Config field but the model name and
// dialect, which UnmarshalState checks.
func (m *Model) MarshalState() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := state{Version: stateVersion, Model: m.cfg.Model, Dialect: m.cfg.Dialect, W: m.size.W, H: m.size.H,
		Calls: m.calls, Started: m.started, Warned: m.warned, Window: &m.win}
	for _, msg := range m.msgs {
		sm := stateMessage{Role: msg.role, Text: msg.text, CallID: msg.callID}
		for _, p := range msg.parts {
			sm.Parts = append(sm.Parts, statePart{Text: p.text, Image: p.image})
		}
		for _, c := range msg.calls {
			sm.Calls = append(sm.Calls, stateCall{ID: c.id, Name: c.name, Args: c.args})
		}
		s.Msgs = append(s.Msgs, sm)
	}
	for _, p := range m.pending {
		s.Pending = append(s.Pending, pendingState{ID: p.id, Actions: p.actions, Client: p.client})
	}
	if m.done != nil {
		s.Done = &doneState{Stop: m.done.Stop, Text: m.done.Text}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("chat: save state: %w", err)
	}
	return b, nil
}

// UnmarshalState replaces m's conversation with one MarshalState saved, so
// that m continues it: the next Next sends what the saving Model's next
// Next would have. The state must come from a Model of the same model and
// dialect; m's Config supplies everything else (key, URL, tools, options).
func (m *Model) UnmarshalState(b []byte) error {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("chat: restore state: %w", err)
	}
	switch {
	case s.Version != stateVersion:
		return fmt.Errorf("chat: restore state: format version %d, want %d", s.Version, stateVersion)
	case s.Model != m.cfg.Model || s.Dialect != m.cfg.Dialect:
		return fmt.Errorf("chat: restore state: saved for model %s in the %s dialect, this Model is %q in %s",
			quoteClip(s.Model), quoteClip(string(s.Dialect)), m.cfg.Model, m.cfg.Dialect)
	case s.W < 0 || s.H < 0 || s.Calls < 0:
		return fmt.Errorf("chat: restore state: negative size or call count")
	}
	msgs := make([]message, len(s.Msgs))
	for i, sm := range s.Msgs {
		if !slices.Contains([]string{"user", "assistant", "tool"}, sm.Role) {
			return fmt.Errorf("chat: restore state: message %d has role %s", i, quoteClip(sm.Role))
		}
		msg := message{role: sm.Role, text: sm.Text, callID: sm.CallID}
		for _, p := range sm.Parts {
			msg.parts = append(msg.parts, part{text: p.Text, image: p.Image})
		}
		for _, c := range sm.Calls {
			msg.calls = append(msg.calls, toolCall{id: c.ID, name: c.Name, args: c.Args})
		}
		msgs[i] = msg
	}
	var calls []pending
	for i, p := range s.Pending {
		if p.ID == "" {
			return fmt.Errorf("chat: restore state: pending call %d has no id", i)
		}
		calls = append(calls, pending{id: p.ID, actions: p.Actions, client: p.Client})
	}
	var done *harness.Turn
	if s.Done != nil {
		done = &harness.Turn{Stop: s.Done.Stop, Text: s.Done.Text}
	}
	win := ctxpolicy.Window{Images: countImages(msgs)}
	if s.Window != nil {
		win = *s.Window
	}
	if n := countImages(msgs); win.Images < n {
		return fmt.Errorf("chat: restore state: the conversation holds %d images, the state counts %d", n, win.Images)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.msgs, m.pending, m.size, m.calls, m.win = msgs, calls, screen.Size{W: s.W, H: s.H}, s.Calls, win
	m.done, m.started, m.warned = done, s.Started, s.Warned
	return nil
}
