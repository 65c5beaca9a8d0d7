package mcp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrCannotAsk is why Ask has no answer: no call of the session is in
// progress, or its client cannot put a question to its user (it does not
// support MCP elicitation), or the question could not be sent.
var ErrCannotAsk = errors.New("the MCP client cannot ask its user")

// A caller is a tool call in progress: its client's connection and the
// call's context, under which a question is related to the call.
type caller struct {
	conn *sdk.ServerSession
	ctx  context.Context
}

// calling records that a call of conn runs in se, until the returned func
// is called.
func (s *Server) calling(ctx context.Context, se *session, conn *sdk.ServerSession) func() {
	c := &caller{conn: conn, ctx: ctx}
	s.mu.Lock()
	se.caller = c
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if se.caller == c {
			se.caller = nil
		}
		s.mu.Unlock()
	}
}

// approvalSchema is the form of an approval question: approve or not, and
// an optional reason, which the model is told.
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

// Ask puts message to the user of the client whose call is in progress in
// session id, through MCP elicitation (a form: approve, and an optional
// reason), and returns the answer. A user who declines or dismisses the
// question does not approve. It fails with ErrCannotAsk when no call is in
// progress or its client cannot ask, and with ctx's cause when ctx ends
// first (the question expired, or was withdrawn).
func (s *Server) Ask(ctx context.Context, id, message string) (approve bool, reason string, err error) {
	s.mu.Lock()
	var c *caller
	if se := s.sessions[id]; se != nil {
		c = se.caller
	}
	s.mu.Unlock()
	if c == nil || c.conn == nil {
		return false, "", fmt.Errorf("%w: no call of session %s is in progress", ErrCannotAsk, id)
	}
	if p := c.conn.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return false, "", fmt.Errorf("%w: it does not support elicitation", ErrCannotAsk)
	}
	// Sent as part of the call, so that the client relates the two; ended
	// by either context.
	ectx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer stop()
	res, err := c.conn.Elicit(ectx, &sdk.ElicitParams{Message: message, RequestedSchema: approvalSchema})
	switch {
	case ctx.Err() != nil:
		return false, "", context.Cause(ctx)
	case err != nil:
		return false, "", fmt.Errorf("%w: %v", ErrCannotAsk, err)
	case res.Action != "accept":
		return false, "the user chose " + res.Action, nil
	}
	approve, _ = res.Content["approve"].(bool)
	reason, _ = res.Content["reason"].(string)
	return approve, reason, nil
}
