package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// stateVersion is the version of the saved state's format.
const stateVersion = 1

// blankMark stands for the image URL in a saved item's blanked form.
const blankMark = "spotter:blank-screenshot"

// state is a Model's conversation as MarshalState saves it.
type state struct {
	Version int            `json:"version"`
	Model   string         `json:"model"`
	Tool    Tool           `json:"tool"`
	Items   []stateItem    `json:"items"`
	Pending []pendingState `json:"pending,omitempty"`
	Last    *lastPicture   `json:"last,omitempty"`
}

// stateItem is one input item: Full as sent, and for an item carrying a
// screenshot, Blank with blankMark where the blank image's URL goes. Full
// is left out for an item whose screenshot will only ever be sent blank
// again (Config.KeepScreenshots).
type stateItem struct {
	Full  json.RawMessage `json:"full,omitempty"`
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

// MarshalState saves the conversation: every item sent and received, with
// the screenshots as data URLs (about 4/3 of each screenshot's bytes; with
// Config.KeepScreenshots, only that many are saved in full), the calls
// waiting for results and the last screenshot sent. It holds no API key or
// other Config field but the model and tool names, which UnmarshalState
// checks.
func (m *Model) MarshalState() ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := state{Version: stateVersion, Model: m.cfg.Model, Tool: m.cfg.Tool}
	keep := m.keepFrom(m.items)
	for i, it := range m.items {
		var si stateItem
		if i >= keep || it.blank == nil {
			full, err := json.Marshal(it.p)
			if err != nil {
				return nil, fmt.Errorf("openai: save state: item %d: %w", i, err)
			}
			si.Full = full
		}
		if it.blank != nil {
			blank, err := json.Marshal(it.blank(blankMark))
			if err != nil {
				return nil, fmt.Errorf("openai: save state: item %d: %w", i, err)
			}
			si.Blank, si.W, si.H = blank, it.size.W, it.size.H
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
func (m *Model) UnmarshalState(b []byte) error {
	var s state
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("openai: restore state: %w", err)
	}
	switch {
	case s.Version != stateVersion:
		return fmt.Errorf("openai: restore state: format version %d, want %d", s.Version, stateVersion)
	case s.Model != m.cfg.Model || s.Tool != m.cfg.Tool:
		return fmt.Errorf("openai: restore state: saved for model %s with the %s tool, this Model is %s with %s",
			strconv.Quote(clipText(s.Model)), strconv.Quote(clipText(string(s.Tool))), m.cfg.Model, m.cfg.Tool)
	}
	items := make([]item, len(s.Items))
	for i, si := range s.Items {
		if len(si.Full) == 0 && len(si.Blank) == 0 {
			return fmt.Errorf("openai: restore state: item %d is empty", i)
		}
		for _, raw := range []json.RawMessage{si.Full, si.Blank} {
			if len(raw) > 0 && !json.Valid(raw) {
				return fmt.Errorf("openai: restore state: item %d is not JSON", i)
			}
		}
		var it item
		if len(si.Blank) > 0 {
			if si.W <= 0 || si.H <= 0 {
				return fmt.Errorf("openai: restore state: item %d has screenshot size %dx%d", i, si.W, si.H)
			}
			blank := si.Blank
			it.blank = func(url string) responses.ResponseInputItemUnionParam {
				u, _ := json.Marshal(url) // a string always marshals
				return param.Override[responses.ResponseInputItemUnionParam](
					json.RawMessage(bytes.ReplaceAll(blank, []byte(strconv.Quote(blankMark)), u)))
			}
			it.size = screen.Size{W: si.W, H: si.H}
		}
		if len(si.Full) > 0 {
			it.p = param.Override[responses.ResponseInputItemUnionParam](si.Full)
		} else {
			it.p = it.blank(m.blank(it.size))
		}
		items[i] = it
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
	m.items, m.pending, m.last = items, calls, last
	return nil
}

// clipText shortens s for an error message.
func clipText(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
