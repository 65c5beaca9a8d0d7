package session

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/wiring"
	"github.com/spotter-harness/spotter/screen"
)

// Bounds of an executor session (docs/API.md, "The executor API").
const (
	// MaxQueuedCalls is how many calls an executor session holds while its
	// loop is busy (waiting for a human, say); one more is
	// ErrTooManyCalls.
	MaxQueuedCalls = 64
	// MaxRetainedCalls is how many answered calls an executor session
	// keeps the result of, for retries and GET /calls/:id; an older
	// call's id is ErrGone.
	MaxRetainedCalls = 16
	// maxGoneIDs is how many ids of answered calls whose results were let
	// go a session still recognizes (as hashes): posting one again is
	// ErrGone, not a new call. Older ones run again.
	maxGoneIDs = 1 << 14
	// maxCallID bounds a call's id, which every record of the call keys.
	maxCallID = 256
	// maxCallName bounds the tool or function name a call records.
	maxCallName = 128
)

// What of a posted call is stored (the trace, the session's state, its
// events, messages and tool calls): the decoded call (its canonical
// actions) and the call as posted, with the fields its provider's format
// does not define left out and long values shortened: a string over
// maxRawString bytes is replaced whole by a note of its length (typed text
// is never cut in two, so that masking it stays whole), an array or object
// keeps its first maxRawItems entries, nesting stops at maxRawDepth, and a
// call still over maxRawBytes keeps only its type, id and name.
const (
	maxRawBytes  = 16 << 10
	maxRawString = 1 << 10
	maxRawItems  = 64
	maxRawDepth  = 8
	maxNumber    = 64 // digits of a JSON number
)

// execModel is the Model of an executor session: each call a client posts
// becomes a one-call Turn, and the loop's Result for it goes back to the
// request that posted it. So the calls a client's own loop makes go
// through the same validation, mapping, approvals and trace as the
// server's own sessions.
//
// It holds the calls that are queued and running, and the results of the
// latest MaxRetainedCalls answered ones (their screenshots are read back
// from the trace when asked for); release lets go of everything when the
// session is stopped.
type execModel struct {
	calls     chan *execCall
	ready     chan struct{} // closed once the first screenshot is in
	readyOnce sync.Once

	mu        sync.Mutex
	first     screen.Shot
	cur       *execCall
	byID      map[string]*execCall // queued, running and retained calls
	answered  []string             // ids of the retained calls in byID, oldest first
	gone      map[uint64]struct{}  // hashes of the ids of answered calls no longer retained
	goneOrder []uint64             // gone's keys, oldest first
	latest    *execCall            // the latest answered call, whose screenshot is in memory
	released  bool
	ended     chan struct{}
	endWhy    string
	endOnce   sync.Once
}

type execCall struct {
	call harness.Call // as stored: see boundRaw
	hash [sha256.Size]byte
	// trace is the trace of the request that posted the call: the turn
	// that answers it continues it.
	trace oteltrace.SpanContext
	done  chan struct{} // closed when result is set
	// result answers the call. Once shot (its screenshot's file, relative
	// to the session's directory) is known, the screenshot's bytes stay
	// in memory only while this is the session's latest answered call;
	// then its Shot holds the frame only, and the bytes are read back
	// from the trace when asked for.
	result harness.Result
	shot   string
	// stored, once set, are closed when the writes of the call's result
	// are on disk (its records, its screenshot's file): the client is
	// answered after that.
	stored []<-chan struct{}
	// record is the call's savedExecCall encoded, once it is answered
	// (recordsJSON); nil until then, and again when shot changes.
	record []byte
}

// seed keys the hashes of gone call ids; ids are not secrets, but a
// per-process seed keeps collisions from being made on purpose.
var seed = maphash.MakeSeed()

func idHash(id string) uint64 { return maphash.String(seed, id) }

func newExecModel() *execModel {
	return &execModel{calls: make(chan *execCall, MaxQueuedCalls), ready: make(chan struct{}),
		byID: map[string]*execCall{}, gone: map[uint64]struct{}{}, ended: make(chan struct{})}
}

func (m *execModel) markReady() { m.readyOnce.Do(func() { close(m.ready) }) }

func (m *execModel) Next(ctx context.Context, in harness.Input) (harness.Turn, error) {
	m.mu.Lock()
	if in.Shot != nil {
		m.first = *in.Shot
		m.markReady()
	}
	if c := m.cur; c != nil {
		for _, r := range in.Results {
			if r.CallID != c.call.ID {
				continue
			}
			c.result, c.record = r, nil
			close(c.done)
			m.retire(c)
			if p := m.latest; p != nil && p != c {
				p.dropShot()
			}
			m.latest = c
		}
		m.cur = nil
	}
	m.mu.Unlock()
	select {
	case c := <-m.calls:
		m.mu.Lock()
		m.cur = c
		m.mu.Unlock()
		return harness.Turn{Calls: []harness.Call{c.call}, Stop: harness.StopToolUse, Trace: c.trace}, nil
	case <-ctx.Done():
		return harness.Turn{}, context.Cause(ctx)
	}
}

// dropShot lets go of the bytes of c's screenshot once they are in the
// trace: they are read back from it when asked for. m.mu is held.
func (c *execCall) dropShot() {
	if c.shot != "" && c.result.Shot != nil && c.result.Shot.Data != nil {
		sh := *c.result.Shot
		sh.Data = nil
		c.result.Shot = &sh
	}
}

// retire keeps c's result among the latest MaxRetainedCalls and lets the
// oldest one go. m.mu is held.
func (m *execModel) retire(c *execCall) {
	if m.released {
		return
	}
	m.answered = append(m.answered, c.call.ID)
	for len(m.answered) > MaxRetainedCalls {
		id := m.answered[0]
		m.answered = slices.Delete(m.answered, 0, 1)
		delete(m.byID, id)
		m.forget(id)
	}
}

// forget remembers id as answered and no longer retained. m.mu is held.
func (m *execModel) forget(id string) {
	h := idHash(id)
	if _, ok := m.gone[h]; ok {
		return
	}
	m.gone[h] = struct{}{}
	m.goneOrder = append(m.goneOrder, h)
	if len(m.goneOrder) > maxGoneIDs {
		delete(m.gone, m.goneOrder[0])
		m.goneOrder = slices.Delete(m.goneOrder, 0, 1)
	}
}

// hashOf returns the hash of call id's posted body, in hex, or "".
func (m *execModel) hashOf(id string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.byID[id]; c != nil {
		return hex.EncodeToString(c.hash[:])
	}
	return ""
}

// noteShot records where the screenshot of call id's result is.
func (m *execModel) noteShot(id, shot string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.byID[id]; c != nil {
		c.shot, c.record = shot, nil
	}
}

// noteStored records the channels closed once call id's result is on
// disk.
func (m *execModel) noteStored(id string, stored ...<-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c := m.byID[id]; c != nil {
		c.stored = stored
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

// release lets go of every call and result: the session was stopped.
func (m *execModel) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.released = true
	m.first = screen.Shot{}
	m.cur, m.latest = nil, nil
	m.byID, m.answered, m.gone, m.goneOrder = map[string]*execCall{}, nil, map[uint64]struct{}{}, nil
	for {
		select {
		case <-m.calls:
			continue
		default:
		}
		return
	}
}

// recordsJSON returns the retained calls as the session's state keeps
// them for a restart, each encoded. An answered call does not change, so
// each is encoded once (execCall.record). m.mu must not be held.
func (m *execModel) recordsJSON() ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([][]byte, 0, len(m.answered))
	for _, id := range m.answered {
		c := m.byID[id]
		if c == nil || c.shot == "" && c.result.Shot != nil {
			continue // its screenshot is in memory only: it cannot be read back
		}
		if c.record == nil {
			b, err := json.Marshal(c.saved())
			if err != nil {
				return nil, err
			}
			c.record = b
		}
		out = append(out, c.record)
	}
	return out, nil
}

// saved returns answered call c as the session's state keeps it. m.mu is
// held.
func (c *execCall) saved() savedExecCall {
	r := c.result
	sr := savedResult{CallID: c.call.ID, Ran: r.Ran, Notes: r.Notes, Shot: c.shot, Cursor: r.Cursor,
		Acknowledged: r.Acknowledged}
	if r.Err != nil {
		sr.Err = r.Err.Error()
	}
	if r.Shot != nil {
		sr.Frame = r.Shot.Frame
	}
	return savedExecCall{
		Call: savedCall{ID: c.call.ID, Name: c.call.Name, Space: c.call.Space, SafetyChecks: c.call.SafetyChecks,
			Raw: minimalRaw(c.call.Raw), Hash: hex.EncodeToString(c.hash[:])},
		Actions: len(c.call.Actions), Result: sr}
}

// savedExecCall is an answered executor call as the session's state keeps
// it: enough to answer a retry in the provider's format.
type savedExecCall struct {
	Call    savedCall   `json:"call"`
	Actions int         `json:"actions,omitempty"` // how many the call had
	Result  savedResult `json:"result"`
}

// restoreAnswered makes a call answered before a restart known again.
func (m *execModel) restoreAnswered(sc savedExecCall) {
	c := &execCall{call: harness.Call{ID: sc.Call.ID, Name: sc.Call.Name, Space: sc.Call.Space,
		SafetyChecks: sc.Call.SafetyChecks, Raw: sc.Call.Raw, Actions: make([]actions.Action, sc.Actions)},
		done: make(chan struct{}), shot: sc.Result.Shot}
	if h, err := hex.DecodeString(sc.Call.Hash); err == nil && len(h) == sha256.Size {
		copy(c.hash[:], h)
	}
	r := harness.Result{CallID: sc.Call.ID, Ran: sc.Result.Ran, Notes: sc.Result.Notes, Cursor: sc.Result.Cursor,
		Acknowledged: sc.Result.Acknowledged}
	r.Err = harness.ResultErr(sc.Result.Err)
	if sc.Result.Shot != "" {
		r.Shot = &screen.Shot{Frame: sc.Result.Frame}
	}
	c.result = r
	close(c.done)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byID[c.call.ID] = c
	m.retire(c)
}

// restoreRunning makes the call a restart interrupted the current one:
// the resumed loop answers it, and a retry finds it.
func (m *execModel) restoreRunning(call harness.Call, hash string) {
	c := &execCall{call: call, done: make(chan struct{})}
	if h, err := hex.DecodeString(hash); err == nil && len(h) == sha256.Size {
		copy(c.hash[:], h)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.byID[call.ID] = c
	m.cur = c
}

// restoreGone marks the ids of calls answered before a restart whose
// results are not retained.
func (m *execModel) restoreGone(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if _, ok := m.byID[id]; !ok {
			m.forget(id)
		}
	}
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
	// needsShot says which results encode cannot write without a
	// screenshot; nil means none.
	needsShot func(c harness.Call) bool
}

// codecFor returns the codec of an executor session's provider
// (wiring.CodecFor).
func codecFor(provider, model string) (codec, error) {
	c, err := wiring.CodecFor(provider, model)
	if err != nil {
		return codec{}, fmt.Errorf("%w: unknown provider %q", ErrBadRequest, provider)
	}
	return codec{decode: c.Decode, encode: c.Encode, message: c.Message, needsShot: c.NeedsShot}, nil
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
		return screen.Shot{}, fmt.Errorf("%w: %s", ErrConflict, s.exec.endReason())
	case <-ctx.Done():
		return screen.Shot{}, context.Cause(ctx)
	}
}

// Call runs a provider-native call on an executor session's display and
// waits up to wait for its result. A call without an id, or one the
// provider's format cannot answer, is ErrBadRequest. A call id seen
// before is not run again: posted with the same body (a retry), its result
// (or its wait) is returned; with another body, it is ErrConflict; a call
// whose result is no longer kept (older than the latest MaxRetainedCalls)
// is ErrGone. A call past MaxQueuedCalls waiting ones is ErrTooManyCalls.
// Only what the call means is kept of it (see maxRawBytes).
func (s *Session) Call(ctx context.Context, raw json.RawMessage, wait time.Duration) (ExecResult, error) {
	if s.exec == nil {
		return ExecResult{}, fmt.Errorf("%w: not an executor session", ErrConflict)
	}
	cd, err := codecFor(s.spec.Provider, s.spec.Model.Name)
	if err != nil {
		return ExecResult{}, err
	}
	call, derr := cd.decode(raw, s.spec.image())
	switch {
	case call.ID == "":
		// Nothing to pair a result with: the client must fix the call.
		if derr == nil {
			derr = errors.New("the call has no id")
		}
		return ExecResult{}, bad("the call cannot be answered: %v", derr)
	case len(call.ID) > maxCallID:
		return ExecResult{}, bad("the call's id is %d bytes long; the limit is %d", len(call.ID), maxCallID)
	}
	if derr != nil && call.DecodeErr == nil {
		call.DecodeErr = derr
	}
	call = meaning(s.spec.Provider, call)
	c := &execCall{call: call, hash: sha256.Sum256(canonical(raw)), done: make(chan struct{}), trace: oteltrace.SpanContextFromContext(ctx)}
	m := s.exec
	m.mu.Lock()
	old, seen := m.byID[call.ID]
	_, gone := m.gone[idHash(call.ID)]
	switch {
	case m.released:
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: %s", ErrConflict, m.endWhy)
	case seen && old.hash != c.hash:
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: call id %q was posted before with a different call; give every call its own id "+
			"(posting the same call again returns its result)", ErrConflict, clip(call.ID, 64))
	case seen:
		m.mu.Unlock()
		return s.awaitCall(ctx, old, cd, wait)
	case gone:
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: call %q was answered before, and its result is no longer kept: an executor "+
			"session keeps the results of its last %d calls", ErrGone, clip(call.ID, 64), MaxRetainedCalls)
	}
	select {
	case <-m.ended:
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: %s", ErrConflict, m.endWhy)
	default:
	}
	select {
	case m.calls <- c: // queued; the loop runs it when it is free
		m.byID[call.ID] = c
	default:
		m.mu.Unlock()
		return ExecResult{}, fmt.Errorf("%w: %d calls of this session are waiting already; post the next one when one "+
			"is answered", ErrTooManyCalls, MaxQueuedCalls)
	}
	m.mu.Unlock()
	return s.awaitCall(ctx, c, cd, wait)
}

// meaning is what is kept of a decoded call: its id and actions, its name
// shortened, and its raw form bounded (boundRaw). A batch over the action
// limits (a 10 MB text, say) is the call's error, with no actions kept,
// as the loop would answer it; so are provider safety checks past any
// sensible size.
func meaning(provider string, c harness.Call) harness.Call {
	c.Raw = boundRaw(provider, c.Raw)
	c.Input = nil // executor calls have no application-side tools
	if len(c.Name) > maxCallName {
		c.Name = clip(c.Name, maxCallName/4)
	}
	if c.DecodeErr == nil {
		if err := actions.ValidateBatch(c.Actions, actions.Limits{}); err != nil {
			c.DecodeErr, c.Actions = err, nil
		}
	}
	if len(c.SafetyChecks) > 0 {
		b, _ := json.Marshal(c.SafetyChecks)
		if len(c.SafetyChecks) > 32 || len(b) > maxRawBytes {
			c.SafetyChecks = nil
			if c.DecodeErr == nil {
				c.DecodeErr, c.Actions = fmt.Errorf("%w: the call's safety checks are %d bytes; the limit is %d",
					actions.ErrInvalid, len(b), maxRawBytes), nil
			}
		}
	}
	return c
}

// knownFields are the top-level fields of each provider's call format;
// boundRaw leaves the others out.
var knownFields = map[string][]string{
	"anthropic": {"type", "id", "name", "input"},
	"openai":    {"type", "id", "call_id", "name", "arguments", "status", "action", "actions", "pending_safety_checks"},
	"gemini":    {"functionCall"},
}

// boundRaw is the raw form of a call as it is stored: valid JSON, the
// provider's own fields only, bounded as maxRawBytes says. Re-encoding it
// also makes its strings read as Go writes them, so that typed text is
// found and masked in it whatever escapes the client used.
func boundRaw(provider string, raw json.RawMessage) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		if len(raw) > maxRawString {
			return mustJSON(fmt.Sprintf("[a call that is not JSON, %d bytes]", len(raw)))
		}
		return mustJSON(string(raw))
	}
	if obj, ok := v.(map[string]any); ok {
		if keep, ok := knownFields[provider]; ok {
			for k := range obj {
				if !slices.Contains(keep, k) {
					delete(obj, k)
				}
			}
		}
		if fc, ok := obj["functionCall"].(map[string]any); ok {
			for k := range fc {
				if k != "id" && k != "name" && k != "args" {
					delete(fc, k)
				}
			}
		}
	}
	b, err := json.Marshal(bound(v, 0))
	if err != nil || len(b) > maxRawBytes {
		return minimalRaw(b)
	}
	return b
}

// bound shortens v as maxRawBytes says.
func bound(v any, depth int) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxRawString {
			return fmt.Sprintf("[%d bytes left out]", len(x))
		}
		return x
	case json.Number:
		if len(x) > maxNumber {
			return fmt.Sprintf("[a number of %d digits left out]", len(x))
		}
		return x
	case []any:
		if depth >= maxRawDepth {
			return "[nested too deep: left out]"
		}
		out := make([]any, 0, min(len(x), maxRawItems)+1)
		for _, e := range x[:min(len(x), maxRawItems)] {
			out = append(out, bound(e, depth+1))
		}
		if n := len(x) - maxRawItems; n > 0 {
			out = append(out, fmt.Sprintf("[%d more items left out]", n))
		}
		return out
	case map[string]any:
		if depth >= maxRawDepth {
			return "[nested too deep: left out]"
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make(map[string]any, min(len(keys), maxRawItems))
		left := 0
		for _, k := range keys {
			if len(out) >= maxRawItems || len(k) > maxRawString {
				left++
				continue
			}
			out[k] = bound(x[k], depth+1)
		}
		if left > 0 {
			out["spotter_left_out"] = fmt.Sprintf("%d more fields", left)
		}
		return out
	}
	return v // a bool or null
}

// minimalRaw is what pairs a result with its call: the raw call's type,
// id, call_id and name (and a Gemini functionCall's id and name).
func minimalRaw(raw json.RawMessage) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) != nil {
		return mustJSON("[the call was left out]")
	}
	short := func(b json.RawMessage) (string, bool) {
		var s string
		return s, json.Unmarshal(b, &s) == nil && len(s) <= maxCallID
	}
	out := map[string]any{}
	for _, k := range []string{"type", "id", "call_id", "name"} {
		if s, ok := short(v[k]); ok {
			out[k] = s
		}
	}
	var fc map[string]json.RawMessage
	if json.Unmarshal(v["functionCall"], &fc) == nil {
		f := map[string]string{}
		for _, k := range []string{"id", "name"} {
			if s, ok := short(fc[k]); ok {
				f[k] = s
			}
		}
		out["functionCall"] = f
	}
	return mustJSON(out)
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v) // strings and maps of strings always marshal
	return b
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

// CallResult waits up to wait for the result of an executor call posted
// before. A call whose result is no longer kept is ErrGone.
func (s *Session) CallResult(ctx context.Context, callID string, wait time.Duration) (ExecResult, error) {
	if s.exec == nil {
		return ExecResult{}, fmt.Errorf("%w: not an executor session", ErrConflict)
	}
	m := s.exec
	m.mu.Lock()
	c, ok := m.byID[callID]
	_, gone := m.gone[idHash(callID)]
	released, why := m.released, m.endWhy
	m.mu.Unlock()
	switch {
	case ok:
	case released:
		return ExecResult{}, fmt.Errorf("%w: the session's results were let go when it ended (%s); its history has "+
			"its calls: GET /session/%s", ErrGone, why, s.id)
	case gone:
		return ExecResult{}, fmt.Errorf("%w: the result of call %q is no longer kept: an executor session keeps the "+
			"results of its last %d calls", ErrGone, clip(callID, 64), MaxRetainedCalls)
	default:
		return ExecResult{}, fmt.Errorf("call %q: %w", clip(callID, 64), ErrNotFound)
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
			return ExecResult{}, fmt.Errorf("%w: %s", ErrConflict, s.exec.endReason())
		default:
		}
		res := ExecResult{CallID: c.call.ID}
		if p, ok := s.m.pendingFor(s.id, c.call.ID, anyIndex); ok {
			res.ApprovalID = p.ID
		}
		return res, nil
	}
	s.exec.mu.Lock()
	r, shot, stored := c.result, c.shot, c.stored
	s.exec.mu.Unlock()
	if r.Shot != nil && r.Shot.Data == nil && shot != "" {
		b, err := os.ReadFile(filepath.Join(s.dir, filepath.FromSlash(shot)))
		if errors.Is(err, fs.ErrNotExist) {
			return ExecResult{}, fmt.Errorf("%w: the screenshot of call %q is no longer on disk", ErrGone, clip(c.call.ID, 64))
		} else if err != nil {
			return ExecResult{}, fmt.Errorf("read the screenshot of %s: %w", c.call.ID, err)
		}
		sh := *r.Shot
		sh.Data = b
		r.Shot = &sh
	}
	if r.Err != nil {
		r.Err = harness.ResultErr(s.m.scrubDir(r.Err.Error()))
	}
	if r.Shot == nil && cd.needsShot != nil && cd.needsShot(c.call) {
		r = s.withEarlierShot(r)
	}
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
	// Stored before sent: the client sees nothing a crash could still
	// lose.
	for _, ch := range stored {
		select {
		case <-ch:
		case <-ctx.Done():
			return ExecResult{}, context.Cause(ctx)
		}
	}
	if r.Err != nil {
		res.Error = r.Err.Error()
	}
	if r.Shot != nil {
		res.Frame = r.Shot.Frame
	}
	return res, nil
}

// withEarlierShot gives r, which has no screenshot (none could be taken
// after its call), the latest one taken before it, or a blank one if there
// is none, and says so in its notes: for a format whose result must hold an
// image (OpenAI's), so that the client still learns what ran and why no
// screenshot came.
func (s *Session) withEarlierShot(r harness.Result) harness.Result {
	shot, ok := s.disp.latest()
	note := "No new screenshot could be taken after this call; this is the latest one taken before it."
	if !ok {
		size := s.spec.Display.Size()
		data, err := screen.BlankImage(size, screen.PNG, 0)
		if err != nil {
			return r // the encoder says what is missing
		}
		shot = screen.Shot{Frame: screen.Frame{Viewport: size, Sent: size, Format: screen.PNG}, Data: data}
		note = "No screenshot could be taken after this call, nor one before it; this image is blank."
	}
	shot.Events = nil
	r.Shot = &shot
	r.Notes = append(append([]string(nil), r.Notes...), note)
	return r
}

func (m *execModel) endReason() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.endWhy
}
