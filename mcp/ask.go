package mcp

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Questions to the client's user (Ask) take MCP's multi round-trip form
// (SEP-2322): a call whose approver asks is parked, running on in a
// goroutine of the server, and the tool answers with the question as an
// input request (an elicitation form) and a token in its request state;
// the client asks its user and calls the tool again with the answer and
// the token, which resumes the parked call: its result, or its next
// question, answers the retry. The SDK plays the client's part itself for
// a client of an older protocol version (it elicits, then calls again),
// so both meet the same code.

// ErrCannotAsk is why Ask has no answer: the call is not in progress, or
// its client cannot put a question to its user (it does not support MCP
// elicitation).
var ErrCannotAsk = errors.New("the MCP client cannot ask its user")

// approvalInput names the one input request of a question.
const approvalInput = "approval"

// approvalSchema is the form of a question: approve or not, and an
// optional reason, which the model is told.
var approvalSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"approve": map[string]any{"type": "boolean", "title": "Approve",
			"description": "Let the action run (unchecked: refuse it)"},
		"reason": map[string]any{"type": "string", "title": "Reason",
			"description": "Why, for the model (optional)"},
	},
	"required": []string{"approve"},
}

// A parked call is a tool call in progress, which may wait for its
// client's answer between two of the client's requests.
type parked struct {
	session   string // the session it runs in
	conn      *sdk.ServerSession
	token     string                   // the request state that resumes it
	questions chan question            // from Ask
	done      chan *sdk.CallToolResult // its final result (capacity 1)
	ctx       context.Context          // the call's: done once it ended
	cancel    context.CancelCauseFunc  // ends the call
	pending   *question                // the question the client has, under Server.mu
}

// A question waits for the client's answer.
type question struct {
	message string
	answer  chan answer // capacity 1
}

type answer struct {
	approve bool
	reason  string
}

// park runs a call of conn in session as a parked call: run does the
// call's work on a context that outlives the client's request (until the
// call ends, the request is cancelled while nothing is asked, the session
// closes or the server does) and returns the call's tool result. The
// result of park answers the request: the call's result, or its first
// question.
func (s *Server) park(ctx context.Context, id, session string, conn *sdk.ServerSession, run func(ctx context.Context) *sdk.CallToolResult) *sdk.CallToolResult {
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	p := &parked{session: session, conn: conn, token: rand.Text(), questions: make(chan question), done: make(chan *sdk.CallToolResult, 1),
		ctx: cctx, cancel: cancel}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel(nil)
		return errorResult(errors.New("the server is closed"))
	}
	s.parked[id] = p
	if se := s.sessions[session]; se != nil {
		se.busy++ // a call in progress, or waiting for its answer, is not idle
	}
	stop := context.AfterFunc(s.ctx, func() { cancel(errors.New("the server closed")) })
	s.wg.Go(func() {
		defer stop()
		defer cancel(nil)
		res := run(cctx)
		s.mu.Lock()
		delete(s.parked, id)
		if se := s.sessions[session]; se != nil {
			se.busy--
			se.used = time.Now()
		}
		s.mu.Unlock()
		p.done <- res
	})
	s.mu.Unlock()
	return s.await(ctx, p)
}

// await answers a request of p's client: p's result, or its next
// question. A request that ends while nothing is asked ends the call.
func (s *Server) await(ctx context.Context, p *parked) *sdk.CallToolResult {
	select {
	case res := <-p.done:
		return res
	case q := <-p.questions:
		s.mu.Lock()
		p.pending = &q
		s.mu.Unlock()
		return &sdk.CallToolResult{RequestState: p.token, InputRequests: sdk.InputRequestMap{
			approvalInput: &sdk.ElicitParams{Message: q.message, RequestedSchema: approvalSchema}}}
	case <-ctx.Done():
		p.cancel(context.Cause(ctx))
		return <-p.done
	}
}

// resume answers a client's retry of a call that asked: it gives the
// parked call the answer and awaits its result or next question.
func (s *Server) resume(ctx context.Context, req *sdk.CallToolRequest) *sdk.CallToolResult {
	state := req.Params.RequestState
	s.mu.Lock()
	var p *parked
	for _, c := range s.parked {
		if c.token == state && c.conn == req.Session {
			p = c
			break
		}
	}
	var q *question
	if p != nil {
		q, p.pending = p.pending, nil
	}
	s.mu.Unlock()
	if p == nil || q == nil {
		return errorResult(errors.New("no question of this client waits for that answer (it was answered, or it expired)"))
	}
	var a answer
	if r, ok := req.Params.InputResponses[approvalInput].(*sdk.ElicitResult); ok {
		switch r.Action {
		case "accept":
			a.approve, _ = r.Content["approve"].(bool)
			a.reason, _ = r.Content["reason"].(string)
		default:
			a.reason = "the user chose " + r.Action
		}
	} else {
		a.reason = "the client sent no answer"
	}
	q.answer <- a
	return s.await(ctx, p)
}

// Ask puts message to the user of the client that made call (an id of
// this server's calls, as approvals.Request.CallID has it) while the call
// is in progress, as an elicitation form (approve, and an optional
// reason), and returns the answer. A user who declines or dismisses the
// question does not approve. It fails with ErrCannotAsk when the call is
// not in progress or its client cannot ask, and with ctx's cause when ctx
// ends first (the question expired, or was withdrawn).
func (s *Server) Ask(ctx context.Context, call, message string) (approve bool, reason string, err error) {
	s.mu.Lock()
	p := s.parked[call]
	s.mu.Unlock()
	if p == nil {
		return false, "", fmt.Errorf("%w: call %s is not in progress", ErrCannotAsk, call)
	}
	if ip := p.conn.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil {
		return false, "", fmt.Errorf("%w: it does not support elicitation", ErrCannotAsk)
	}
	q := question{message: message, answer: make(chan answer, 1)}
	select {
	case p.questions <- q:
	case <-p.ctx.Done():
		return false, "", fmt.Errorf("%w: call %s ended", ErrCannotAsk, call)
	case <-ctx.Done():
		return false, "", context.Cause(ctx)
	}
	select {
	case a := <-q.answer:
		return a.approve, a.reason, nil
	case <-p.ctx.Done():
		return false, "", fmt.Errorf("%w: call %s ended", ErrCannotAsk, call)
	case <-ctx.Done():
		s.mu.Lock()
		if p.pending != nil && p.pending.answer == q.answer {
			p.pending = nil // a late answer finds nothing to resume
		}
		s.mu.Unlock()
		return false, "", context.Cause(ctx)
	}
}
