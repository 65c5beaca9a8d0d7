package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/ctxpolicy"
	"github.com/spotter-harness/spotter/screen"
)

// stateVersion is the version of the saved state's format. Version 1
// (blanked screenshots, before Config.Context) is still read.
const stateVersion = 2

// blankMark stands for the image URL in a version 1 item's blanked form.
const blankMark = "spotter:blank-screenshot"

// state is a Model's conversation as MarshalState saves it.
type state struct {
	Version int            `json:"version"`
	Model   string         `json:"model"`
	Tool    Tool           `json:"tool"`
	Items   []stateItem    `json:"items"`
	Pending []pendingState `json:"pending,omitempty"`
	Last    *lastPicture   `json:"last,omitempty"`
	// Window is what Config.Context needs of the conversation.
	Window *ctxpolicy.Window `json:"window,omitempty"`
}

// stateItem is one input item: Full as the next request sends it, and, for
// an item whose image is still sent in full, Omit, the item once
// Config.Context replaces that image. Version 1 had Blank, the item with
// blankMark for the image URL, and left Full out once it was blanked.
type stateItem struct {
	Full  json.RawMessage `json:"full,omitempty"`
	Omit  json.RawMessage `json:"omit,omitempty"`
	Blank json.RawMessage `json:"blank,omitempty"`
	W     int             `json:"w,omitempty"`
	H     int             `json:"h,omitempty"`
}

type pendingState struct {
	ID       string                `json:"id"`
	Function bool                  `json:"function,omitempty"`
	Client   bool                  `json:"client,omitempty"`
	Actions  int                   `json:"actions,omitempty"`
	Checks   []harness.SafetyCheck `json:"checks,omitempty"`
}

type lastPicture struct {
	URL string `json:"url"`
	W   int    `json:"w"`
	H   int    `json:"h"`
}

var _ harness.Stateful = (*Model)(nil)

// MarshalState saves the conversation: every item sent and received, as
// the next request sends it (the screenshots still sent in full as data
// URLs, about 4/3 of their bytes each; older ones already replaced as
// Config.Context says), the calls waiting for results, the last screenshot
// sent, and the count of images and the last screenshot's hash that
// Config.Context goes by. It holds no API key or other Config field but
// the model and tool names, which UnmarshalState checks.
func (m *Model) MarshalState() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := state{Version: stateVersion, Model: m.cfg.Model, Tool: m.cfg.Tool, Window: &m.win}
	for i, it := range m.items {
		var si stateItem
		var err error
		if si.Full, err = json.Marshal(it.p); err != nil {
			return nil, fmt.Errorf("openai: save state: item %d: %w", i, err)
		}
		if it.omit != nil {
			if si.Omit, err = json.Marshal(it.omit); err != nil {
				return nil, fmt.Errorf("openai: save state: item %d: %w", i, err)
			}
		}
		s.Items = append(s.Items, si)
	}
	for _, p := range m.pending {
		s.Pending = append(s.Pending, pendingState{ID: p.id, Function: p.function, Client: p.client, Actions: p.actions, Checks: p.checks})
	}
	if m.last.url != "" {
		s.Last = &lastPicture{URL: m.last.url, W: m.last.size.W, H: m.last.size.H}
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("openai: save state: %w", err)
	}
	return b, nil
}

// UnmarshalState replaces m's conversation with one MarshalState saved, so
// that m continues it: the next Next sends what the saving Model's next
// Next would have. The state must come from a Model of the same model and
// tool; m's Config supplies everything else (key, URL, tools, options).
// A version 1 state's blanked screenshots become Config.Context's
// placeholders.
func (m *Model) UnmarshalState(b []byte) error {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("openai: restore state: %w", err)
	}
	switch {
	case s.Version != stateVersion && s.Version != 1:
		return fmt.Errorf("openai: restore state: format version %d, want %d", s.Version, stateVersion)
	case s.Model != m.cfg.Model || s.Tool != m.cfg.Tool:
		return fmt.Errorf("openai: restore state: saved for model %s with the %s tool, this Model is %s with %s",
			strconv.Quote(clipText(s.Model)), strconv.Quote(clipText(string(s.Tool))), m.cfg.Model, m.cfg.Tool)
	}
	override := param.Override[responses.ResponseInputItemUnionParam]
	items := make([]item, len(s.Items))
	var win ctxpolicy.Window
	present := 0
	for i, si := range s.Items {
		for _, raw := range []json.RawMessage{si.Full, si.Omit, si.Blank} {
			if len(raw) > 0 && !json.Valid(raw) {
				return fmt.Errorf("openai: restore state: item %d is not JSON", i)
			}
		}
		omit := si.Omit
		if s.Version == 1 && len(si.Blank) > 0 {
			u, _ := json.Marshal(placeholderURL) // a string always marshals
			omit = bytes.ReplaceAll(si.Blank, []byte(strconv.Quote(blankMark)), u)
			win.Images++
		}
		full := si.Full
		if len(full) == 0 {
			// Version 1 left out the full form of a blanked item.
			full, omit = omit, nil
		}
		if len(full) == 0 {
			return fmt.Errorf("openai: restore state: item %d is empty", i)
		}
		items[i] = item{p: override(json.RawMessage(full))}
		if len(omit) > 0 {
			o := override(json.RawMessage(omit))
			items[i].omit = &o
			present++
		}
	}
	if s.Window != nil {
		win = *s.Window
	}
	if win.Images < present {
		return fmt.Errorf("openai: restore state: the conversation holds %d images, the state counts %d", present, win.Images)
	}
	var calls []pending
	for i, p := range s.Pending {
		if p.ID == "" {
			return fmt.Errorf("openai: restore state: pending call %d has no id", i)
		}
		calls = append(calls, pending{id: p.ID, function: p.Function, client: p.Client, actions: p.Actions, checks: p.Checks})
	}
	var last picture
	if s.Last != nil {
		last = picture{url: s.Last.URL, size: screen.Size{W: s.Last.W, H: s.Last.H}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.items, m.pending, m.last, m.win = items, calls, last, win
	return nil
}

// clipText shortens s for an error message.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
