package session

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/store"
)

// Event types of a session's stream (docs/API.md, "SSE streams").
const (
	EventSession           = "session"
	EventTextDelta         = "text_delta"
	EventToolCall          = "tool_call"
	EventPermissionRequest = "permission_request"
	EventToolResult        = "tool_result"
	EventApprovalDecided   = "approval_decided"
	EventTakeover          = "takeover"
	EventOperatorInput     = "operator_input"
	EventTurnStop          = "turn_stop"
)

// Stop reasons of turn_stop.
const (
	StopToolUse  = "tool_use"
	StopEndTurn  = "end_turn"
	StopMaxSteps = "max_steps"
	StopError    = "error"
)

// ToolCallEvent is the data of tool_call.
type ToolCallEvent struct {
	ToolCallID string           `json:"toolCallId"`
	Name       string           `json:"name"`
	Input      json.RawMessage  `json:"input"`
	Actions    []actions.Action `json:"actions,omitempty"`
	Error      string           `json:"error,omitempty"` // the call did not decode
}

// Content is one part of a tool result.
type Content struct {
	Type     string `json:"type"` // text or image
	Text     string `json:"text,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
	URL      string `json:"url,omitempty"`
}

// ToolResultEvent is the data of tool_result, and the content of a tool
// message in the history.
type ToolResultEvent struct {
	ToolCallID string    `json:"toolCallId"`
	IsError    bool      `json:"isError"`
	Content    []Content `json:"content"`
}

// PermissionRequest is the data of permission_request and what an
// approval's Request holds: what the human is shown. It is the queue's
// approvals.Request (rule, action, target, marker in the pixels of Shot,
// the frame, the model's words, the deadline) with the protocol's names
// for its ids and the URL of the screenshot the model saw.
type PermissionRequest struct {
	approvals.Request
	ToolCallID string `json:"toolCallId"`
	ApprovalID string `json:"approvalId"`
	Shot       string `json:"shot,omitempty"` // URL of the screenshot the model saw
}

// OperatorEvent is the data of operator_input, and the content of an
// operator message in the history: an action an operator performed (or
// tried) during a takeover, typed text masked when secret.
type OperatorEvent struct {
	Action actions.Action `json:"action"`
	Error  string         `json:"error,omitempty"`
}

// DecidedEvent is the data of approval_decided.
type DecidedEvent struct {
	ApprovalID string `json:"approvalId"`
	ToolCallID string `json:"toolCallId"`
	Status     string `json:"status"`
	By         string `json:"by"`
	Reason     string `json:"reason,omitempty"`
}

// TurnStopEvent is the data of turn_stop.
type TurnStopEvent struct {
	StopReason string `json:"stopReason"`
	Error      string `json:"error,omitempty"`
	// Report is the path of the report of the run that ended
	// (GET /session/:id/report/:run), when the run wrote a trace.
	Report string `json:"report,omitempty"`
}

// maxCachedEvents is how many of a session's latest events are kept in
// memory, for the streams that follow it; older ones are read from the
// store.
const maxCachedEvents = 256

// emit stores an event and then hands it to the session's subscribers,
// and returns once they have it. Events are stored before anyone sees
// them, so a stream can always be replayed from the store.
func (s *Session) emit(typ string, data any) {
	var b batch
	s.emitTo(&b, typ, data)
	s.commit(&b, true)
}

// A batch is the writes of one change of a session (a turn, a call's
// result), stored together in one transaction (store.Batch), with the
// events that reach the session's subscribers once it is stored.
type batch struct {
	store.Batch
	events []*store.Event
}

// emitTo adds an event to b: it is handed to the subscribers once b is
// stored (commit).
func (s *Session) emitTo(b *batch, typ string, data any) {
	d, err := json.Marshal(data)
	if err != nil {
		s.log.Error("encode event", "type", typ, "err", err)
		return
	}
	// The store keeps microseconds: a stream replayed from it says the
	// same time as the live one.
	e := &store.Event{Session: s.id, Type: typ, Data: d, Time: time.Now().UTC().Truncate(time.Microsecond)}
	b.AppendEvent(e)
	b.events = append(b.events, e)
}

// commit stores b and then hands its events to the subscribers. With
// wait, it returns once that is done; without, at once, and b is stored
// while the caller goes on: its events reach no one before then. Either
// way the session's writes are stored, and its events handed on, in the
// order they were committed (the store's queue is one order), so a
// later commit's events never overtake an earlier one's. The channel it
// returns is closed once b is stored (or failed) and its events handed on.
func (s *Session) commit(b *batch, wait bool) <-chan struct{} {
	done := make(chan struct{})
	if b.Len() == 0 && len(b.events) == 0 {
		close(done)
		return done
	}
	s.m.st.WriteAsync(&b.Batch, func(err error) {
		// On the store's goroutine: quick, and no store calls.
		defer close(done)
		if err != nil {
			s.log.Error("store session writes", "err", err)
			return
		}
		s.publish(b.events)
	})
	if wait {
		<-done
	}
	return done
}

// barrier returns once every write the session committed before is
// stored (or failed).
func (s *Session) barrier() {
	done := make(chan struct{})
	s.m.st.WriteAsync(&store.Batch{}, func(error) { close(done) })
	<-done
}

// publish hands stored events to the session's subscribers.
func (s *Session) publish(evs []*store.Event) {
	if len(evs) == 0 {
		return
	}
	s.evMu.Lock()
	defer s.evMu.Unlock()
	for _, e := range evs {
		s.events = append(s.events, *e)
		s.lastSeq = e.Seq
	}
	if len(s.events) > 2*maxCachedEvents {
		s.events = slices.Clone(s.events[len(s.events)-maxCachedEvents:])
	}
	close(s.changed)
	s.changed = make(chan struct{})
}

// Events returns the session's events after seq after, and a channel that
// is closed when more arrive.
func (s *Session) Events(after int64) ([]store.Event, <-chan struct{}) {
	s.evMu.Lock()
	changed, last := s.changed, s.lastSeq
	if after >= last || (len(s.events) > 0 && after >= s.events[0].Seq-1) {
		defer s.evMu.Unlock()
		i := len(s.events)
		for i > 0 && s.events[i-1].Seq > after {
			i--
		}
		return append([]store.Event(nil), s.events[i:]...), changed
	}
	s.evMu.Unlock()
	// Older than what memory holds: the store has every event.
	evs, err := s.m.st.Events(context.WithoutCancel(s.m.base), s.id, after)
	if err != nil {
		s.log.Error("read events", "after", after, "err", err)
		s.evMu.Lock()
		defer s.evMu.Unlock()
		return append([]store.Event(nil), s.events...), changed
	}
	return evs, changed
}

// LastSeq returns the seq of the session's latest event.
func (s *Session) LastSeq() int64 {
	s.evMu.Lock()
	defer s.evMu.Unlock()
	return s.lastSeq
}

// loadEvents reads the session's latest events from the store, for a
// session read back (a restart, a stopped session).
func (s *Session) loadEvents(ctx context.Context) error {
	evs, err := s.m.st.Events(ctx, s.id, 0)
	if err != nil {
		return err
	}
	s.evMu.Lock()
	defer s.evMu.Unlock()
	if n := len(evs); n > 0 {
		s.lastSeq = evs[n-1].Seq
		s.events = slices.Clone(evs[max(0, n-maxCachedEvents):])
	}
	return nil
}
