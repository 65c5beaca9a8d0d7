package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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
	body   []byte        // the call as posted, canonical (see canonical)
	done   chan struct{} // closed when result is set
	result harness.Result
}

// maxQueuedCalls is how many calls an executor session holds while its
// loop is busy (waiting for a human, say).
const maxQueuedCalls = 64

func newExecModel() *execModel {
	return &execModel{calls: make(chan *execCall, maxQueuedCalls), ready: make(chan struct{}), byID: map[string]*execCall{},
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
	// Message is the provider-native text the result item cannot carry
	// (an OpenAI user message item with the error and notes), or nil.
	Message json.RawMessage
	Error   string       // why the call failed, as the model would read it
	Frame   screen.Frame // the fresh screenshot's geometry
}

// codec reads a provider's calls and writes its results: the adapters'
// executor functions. message, when set, is the text the result item has
// no place for (OpenAI's computer_call_output).
type codec struct {
	decode  func(raw json.RawMessage, display screen.Size) (harness.Call, error)
	encode  func(c harness.Call, r harness.Result) (json.RawMessage, error)
	message func(c harness.Call, r harness.Result) json.RawMessage
}

func codecFor(provider, model string) (codec, error) {
	switch provider {
	case "anthropic":
		return codec{decode: anthropic.DecodeCall, encode: anthropic.EncodeResult}, nil
	case "openai":
		// The model's name picks the image detail of a function_call's
		// screenshot, as the adapter sends it.
		encode := func(c harness.Call, r harness.Result) (json.RawMessage, error) {
			return openai.EncodeResultFor(model, c, r)
		}
		return codec{decode: openai.DecodeCall, encode: encode, message: openai.ResultMessage}, nil
	case "gemini":
		set := gemini.FunctionsAuto
		if model != "" {
			set = gemini.FunctionSetFor(model)
		}
		decode := func(raw json.RawMessage, _ screen.Size) (harness.Call, error) { return gemini.DecodePart(raw, set) }
		return codec{decode: decode, encode: gemini.EncodeResult}, nil
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
// waits up to wait for its result. A call without an id, or one the
// provider's format cannot answer, is ErrBadRequest. A call id seen
// before is not run again: posted with the same body (a retry), its result
// (or its wait) is returned; with another body, it is ErrConflict.
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
		// Nothing to pair a result with: the client must fix the call.
		if derr == nil {
			derr = errors.New("the call has no id")
		}
		return ExecResult{}, bad("the call cannot be answered: %v", derr)
	}
	if derr != nil && call.DecodeErr == nil {
		call.DecodeErr = derr
	}
	body := canonical(raw)
	m := s.exec
	m.mu.Lock()
	c, seen := m.byID[call.ID]
	if seen && !bytes.Equal(c.body, body) {
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: call id %q was posted before with a different call; give every call its own id "+
			"(posting the same call again returns its result)", ErrConflict, clip(call.ID, 64))
	}
	if !seen {
		c = &execCall{call: call, body: body, done: make(chan struct{})}
		m.byID[call.ID] = c
	}
	m.mu.Unlock()
	if !seen {
		select {
		case <-m.ended:
			s.forgetCall(call.ID)
			return ExecResult{}, fmt.Errorf("%w: %s", ErrConflict, m.endReason())
		default:
		}
		select {
		case m.calls <- c: // queued; the loop runs it when it is free
		default:
			s.forgetCall(call.ID)
			return ExecResult{}, fmt.Errorf("%w: %d calls are waiting already", ErrConflict, maxQueuedCalls)
		}
	}
	return s.awaitCall(ctx, c, cd, wait)
}

// canonical is a posted call without what JSON does not mean: spacing and
// the order of keys. So a client that retries a call it re-encoded posts
// the same call. Text that is not JSON is kept as it is.
func canonical(raw json.RawMessage) []byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return bytes.Clone(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return bytes.Clone(raw)
	}
	return b
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
		if p, ok := s.m.pendingFor(s.id, c.call.ID, anyIndex); ok {
			res.ApprovalID = p.ID
		}
		return res, nil
	}
	r := c.result
	native, err := cd.encode(c.call, r)
	if err != nil {
		if c.call.DecodeErr != nil {
			// Too broken to answer in the provider's shape (no function
			// name to pair with): the client's request was bad.
			return ExecResult{}, bad("the call could not be decoded: %v", c.call.DecodeErr)
		}
		return ExecResult{}, err
	}
	res := ExecResult{Done: true, CallID: c.call.ID, Native: native}
	if cd.message != nil {
		res.Message = cd.message(c.call, r)
	}
	if r.Err != nil {
		res.Error = r.Err.Error()
	}
	if r.Shot != nil {
		res.Frame = r.Shot.Frame
	}
	return res, nil
}

func (m *execModel) endReason() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.endWhy
}
