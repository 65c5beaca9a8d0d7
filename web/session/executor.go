package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/screen"
)

// execModel is the Model of an executor session: each call a client posts
// becomes a one-call Turn, and the loop's Result for it goes back to the
// request that posted it. So the calls a client's own loop makes go
// through the same validation, mapping, approvals and trace as the
// server's own sessions.
type execModel struct {
	calls chan *execCall
	ready chan struct{} // closed once the first screenshot is in

	mu      sync.Mutex
	first   screen.Shot
	cur     *execCall
	byID    map[string]*execCall
	ended   chan struct{}
	endWhy  string
	endOnce sync.Once
}

type execCall struct {
	call   harness.Call
	done   chan struct{} // closed when result is set
	result harness.Result
}

func newExecModel() *execModel {
	return &execModel{calls: make(chan *execCall), ready: make(chan struct{}), byID: map[string]*execCall{},
		ended: make(chan struct{})}
}

func (m *execModel) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.mu.Lock()
	if in.Shot != nil {
		m.first = *in.Shot
		close(m.ready)
	}
	if m.cur != nil {
		for _, r := range in.Results {
			if r.CallID == m.cur.call.ID {
				m.cur.result = r
				close(m.cur.done)
			}
		}
		m.cur = nil
	}
	m.mu.Unlock()
	select {
	case c := <-m.calls:
		m.mu.Lock()
		m.cur = c
		m.mu.Unlock()
		return harness.Turn{Calls: []harness.Call{c.call}, Stop: harness.StopToolUse}, nil
	case <-ctx.Done():
		return harness.Turn{}, context.Cause(ctx)
	}
}

// end marks the executor's loop as finished.
func (m *execModel) end(why string) {
	m.endOnce.Do(func() {
		m.mu.Lock()
		m.endWhy = why
		m.mu.Unlock()
		close(m.ended)
	})
}

// ExecResult answers an executor call.
type ExecResult struct {
	Done       bool            // false: still waiting (for a human, or still running)
	ApprovalID string          // the pending approval, when waiting for one
	CallID     string          //
	Native     json.RawMessage // the provider-native result
	Error      string          // why the call failed, as the model would read it
	Frame      screen.Frame    // the fresh screenshot's geometry
}

// codec reads a provider's calls and writes its results.
type codec struct {
	decode func(raw json.RawMessage, display screen.Size) (harness.Call, error)
	encode func(c harness.Call, r harness.Result) (json.RawMessage, error)
}

func codecFor(provider, model string) (codec, error) {
	switch provider {
	case "anthropic":
		return codec{anthropic.DecodeCall, anthropic.EncodeResult}, nil
	case "openai":
		return codec{decodeOpenAI, encodeOpenAI}, nil
	case "gemini":
		set := gemini.FunctionsLegacy
		if model != "" {
			set = gemini.FunctionSetFor(model)
		}
		return codec{func(raw json.RawMessage, _ screen.Size) (harness.Call, error) { return decodeGemini(set, raw) },
			encodeGemini}, nil
	}
	return codec{}, fmt.Errorf("%w: unknown provider %q", ErrBadRequest, provider)
}

// First returns the screenshot an executor session starts with, waiting
// for it.
func (s *Session) First(ctx context.Context) (screen.Shot, error) {
	if s.exec == nil {
		return screen.Shot{}, fmt.Errorf("%w: not an executor session", ErrConflict)
	}
	select {
	case <-s.exec.ready:
		s.exec.mu.Lock()
		defer s.exec.mu.Unlock()
		return s.exec.first, nil
	case <-s.exec.ended:
		return screen.Shot{}, fmt.Errorf("%w: %s", ErrConflict, s.exec.endWhy)
	case <-ctx.Done():
		return screen.Shot{}, context.Cause(ctx)
	}
}

// Call runs a provider-native call on an executor session's display and
// waits up to wait for its result. A call id seen before is not run
// again: its result (or its wait) is returned.
func (s *Session) Call(ctx context.Context, raw json.RawMessage, wait time.Duration) (ExecResult, error) {
	if s.exec == nil {
		return ExecResult{}, fmt.Errorf("%w: not an executor session", ErrConflict)
	}
	cd, err := codecFor(s.spec.Provider, s.spec.Model.Name)
	if err != nil {
		return ExecResult{}, err
	}
	call, derr := cd.decode(raw, s.spec.image())
	if call.ID == "" {
		return ExecResult{}, bad("the call has no id: %v", derr)
	}
	if derr != nil && call.DecodeErr == nil {
		call.DecodeErr = derr
	}
	m := s.exec
	m.mu.Lock()
	c, seen := m.byID[call.ID]
	if !seen {
		c = &execCall{call: call, done: make(chan struct{})}
		m.byID[call.ID] = c
	}
	m.mu.Unlock()
	if !seen {
		select {
		case m.calls <- c:
		case <-m.ended:
			s.forgetCall(call.ID)
			return ExecResult{}, fmt.Errorf("%w: %s", ErrConflict, m.endWhy)
		case <-ctx.Done():
			s.forgetCall(call.ID)
			return ExecResult{}, context.Cause(ctx)
		}
	}
	return s.awaitCall(ctx, c, cd, wait)
}

func (s *Session) forgetCall(id string) {
	s.exec.mu.Lock()
	defer s.exec.mu.Unlock()
	delete(s.exec.byID, id)
}

// CallResult waits up to wait for the result of an executor call posted
// before.
func (s *Session) CallResult(ctx context.Context, callID string, wait time.Duration) (ExecResult, error) {
	if s.exec == nil {
		return ExecResult{}, fmt.Errorf("%w: not an executor session", ErrConflict)
	}
	s.exec.mu.Lock()
	c, ok := s.exec.byID[callID]
	s.exec.mu.Unlock()
	if !ok {
		return ExecResult{}, fmt.Errorf("call %q: %w", callID, ErrNotFound)
	}
	cd, err := codecFor(s.spec.Provider, s.spec.Model.Name)
	if err != nil {
		return ExecResult{}, err
	}
	return s.awaitCall(ctx, c, cd, wait)
}

func (s *Session) awaitCall(ctx context.Context, c *execCall, cd codec, wait time.Duration) (ExecResult, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
	case <-s.exec.ended:
	case <-ctx.Done():
		return ExecResult{}, context.Cause(ctx)
	}
	select {
	case <-c.done:
	default:
		select {
		case <-s.exec.ended:
			return ExecResult{}, fmt.Errorf("%w: %s", ErrConflict, s.exec.endWhy)
		default:
		}
		res := ExecResult{CallID: c.call.ID}
		s.mu.Lock()
		if p := s.pendingFor(c.call.ID); p != nil {
			res.ApprovalID = p.id
		}
		s.mu.Unlock()
		return res, nil
	}
	r := c.result
	native, err := cd.encode(c.call, r)
	if err != nil {
		return ExecResult{}, err
	}
	res := ExecResult{Done: true, CallID: c.call.ID, Native: native}
	if r.Err != nil {
		res.Error = r.Err.Error()
	}
	if r.Shot != nil {
		res.Frame = r.Shot.Frame
	}
	return res, nil
}

// decodeOpenAI reads a Responses API computer_call item: GA calls carry
// "actions", preview ones a single "action".
func decodeOpenAI(raw json.RawMessage, _ screen.Size) (harness.Call, error) {
	call := harness.Call{Space: screen.Image, Raw: raw, Name: "computer"}
	var b struct {
		Type   string                `json:"type"`
		CallID string                `json:"call_id"`
		Action json.RawMessage       `json:"action"`
		Acts   json.RawMessage       `json:"actions"`
		Checks []harness.SafetyCheck `json:"pending_safety_checks"`
	}
	if err := json.Unmarshal(raw, &b); err != nil {
		call.DecodeErr = fmt.Errorf("%w: a computer_call item must be a JSON object: %v", actions.ErrInvalid, err)
		return call, call.DecodeErr
	}
	call.ID, call.SafetyChecks = b.CallID, b.Checks
	var err error
	switch {
	case b.Type != "computer_call":
		err = fmt.Errorf(`%w: item type %q, want "computer_call"`, actions.ErrInvalid, b.Type)
	case len(b.Acts) > 0:
		call.Actions, err = openai.DecodeActions(b.Acts)
	case len(b.Action) > 0:
		var a actions.Action
		if a, err = openai.DecodeAction(b.Action); err == nil {
			call.Actions = []actions.Action{a}
		}
	default:
		err = fmt.Errorf("%w: the computer_call has no action", actions.ErrInvalid)
	}
	call.DecodeErr = err
	return call, err
}

// encodeOpenAI answers a computer_call with a computer_call_output item.
func encodeOpenAI(c harness.Call, r harness.Result) (json.RawMessage, error) {
	out := map[string]any{"type": "computer_call_output", "call_id": c.ID}
	if shot := r.Shot; shot != nil {
		out["output"] = map[string]string{"type": "computer_screenshot", "image_url": dataURL(*shot)}
	}
	if len(r.Acknowledged) > 0 {
		out["acknowledged_safety_checks"] = r.Acknowledged
	}
	return json.Marshal(out)
}

// decodeGemini reads a part holding a functionCall of Gemini's predefined
// computer-use functions; coordinates are on the 0..999 grid.
func decodeGemini(set gemini.FunctionSet, raw json.RawMessage) (harness.Call, error) {
	call := harness.Call{Space: screen.Grid1000, Raw: raw}
	var b struct {
		FunctionCall *struct {
			ID   string         `json:"id"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"functionCall"`
	}
	if err := json.Unmarshal(raw, &b); err != nil || b.FunctionCall == nil {
		call.DecodeErr = fmt.Errorf("%w: want a part with a functionCall", actions.ErrInvalid)
		return call, call.DecodeErr
	}
	fc := b.FunctionCall
	call.ID, call.Name = fc.ID, fc.Name
	if sd, ok := fc.Args["safety_decision"].(map[string]any); ok && sd["decision"] == "require_confirmation" {
		msg, _ := sd["explanation"].(string)
		call.SafetyChecks = []harness.SafetyCheck{{ID: fc.ID, Code: "require_confirmation", Message: msg}}
		delete(fc.Args, "safety_decision")
	}
	var err error
	call.Actions, err = gemini.DecodeCall(set, fc.Name, fc.Args)
	call.DecodeErr = err
	return call, err
}

// encodeGemini answers a functionCall with a functionResponse part.
func encodeGemini(c harness.Call, r harness.Result) (json.RawMessage, error) {
	resp := map[string]any{}
	if r.Shot != nil && r.Shot.Frame.URL != "" {
		resp["url"] = r.Shot.Frame.URL
	}
	if r.Err != nil {
		resp["error"] = r.Err.Error()
	}
	if len(r.Acknowledged) > 0 {
		resp["safety_acknowledgement"] = "true"
	}
	fr := map[string]any{"id": c.ID, "name": c.Name, "response": resp}
	if r.Shot != nil {
		fr["parts"] = []any{map[string]any{"inlineData": map[string]string{
			"mimeType": "image/" + string(r.Shot.Frame.Format), "data": base64.StdEncoding.EncodeToString(r.Shot.Data)}}}
	}
	return json.Marshal(map[string]any{"functionResponse": fr})
}

func dataURL(s screen.Shot) string {
	return "data:image/" + string(s.Frame.Format) + ";base64," + base64.StdEncoding.EncodeToString(s.Data)
}
