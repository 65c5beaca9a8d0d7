package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/screen"
)

// Tool names.
const (
	ToolComputer     = "computer"
	ToolNavigate     = "navigate"
	ToolOpenSession  = "open_session"
	ToolCloseSession = "close_session"
	ToolListSessions = "list_sessions"
)

func kindNames() []string {
	var out []string
	for _, k := range actions.Kinds() {
		out = append(out, k.String())
	}
	return out
}

func obj(props map[string]any, required ...string) map[string]any {
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

var (
	point       = obj(map[string]any{"x": map[string]any{"type": "number"}, "y": map[string]any{"type": "number"}}, "x", "y")
	sessionProp = map[string]any{"type": "string", "description": "session id from open_session; default: this connection's own session"}
)

// actionProps are the fields of actions.Action's JSON, in image pixels of
// the screenshot the client saw.
func actionProps() map[string]any {
	return map[string]any{
		"kind":        map[string]any{"type": "string", "enum": kindNames()},
		"at":          map[string]any{"description": "image pixel to act at (clicks, move, scroll, mouse_down/up)", "allOf": []any{point}},
		"path":        map[string]any{"type": "array", "items": point, "description": "drag: two or more image pixels"},
		"button":      map[string]any{"type": "string", "description": "left (default), right, middle, back, forward"},
		"modifiers":   map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "modifier keys held during a pointer action"},
		"dx":          map[string]any{"type": "number", "description": "scroll: pixels right"},
		"dy":          map[string]any{"type": "number", "description": "scroll: pixels down"},
		"text":        map[string]any{"type": "string", "description": "type: the text"},
		"keys":        map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "keypress, hold_key: one chord, e.g. [\"ctrl\", \"shift\", \"k\"]"},
		"duration_ms": map[string]any{"type": "number", "description": "wait, hold_key: milliseconds"},
		"region":      map[string]any{"type": "object", "description": "zoom: {min:{x,y}, max:{x,y}} in image pixels", "properties": map[string]any{"min": point, "max": point}},
		"url":         map[string]any{"type": "string", "description": "navigate: the URL"},
		"tab":         map[string]any{"type": "integer"},
		"accept":      map[string]any{"type": "boolean"},
		"files":       map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}
}

func computerSchema() map[string]any {
	props := actionProps()
	props["session"] = sessionProp
	props["frame_id"] = map[string]any{"type": "string", "description": "the screenshot the coordinates refer to (default: the latest)"}
	props["actions"] = map[string]any{"type": "array", "items": obj(actionProps(), "kind"),
		"description": "a batch of actions instead of one; run in order, stopping at the first failure"}
	return props
}

func (s *Server) addTools() {
	s.srv.AddTool(&sdk.Tool{Name: ToolComputer,
		Description: "Act on the session's screen with one canonical action (kind plus its fields) or a batch (actions), " +
			"in pixels of the latest screenshot (or of frame_id). Answers with a fresh screenshot and a note naming its frame.",
		InputSchema: obj(computerSchema())}, s.computer)
	s.srv.AddTool(&sdk.Tool{Name: ToolNavigate, Description: "Open a URL in the session, if the policy allows its host.",
		InputSchema: obj(map[string]any{"url": map[string]any{"type": "string"}, "session": sessionProp}, "url")}, s.navigate)
	s.srv.AddTool(&sdk.Tool{Name: ToolOpenSession, Description: "Open a new session: a display of its own. Returns its id and first screenshot.",
		InputSchema: obj(map[string]any{"start_url": map[string]any{"type": "string"}})}, s.openSession)
	s.srv.AddTool(&sdk.Tool{Name: ToolCloseSession, Description: "Close a session and its display.",
		InputSchema: obj(map[string]any{"session": map[string]any{"type": "string"}}, "session")}, s.closeSessionTool)
	s.srv.AddTool(&sdk.Tool{Name: ToolListSessions, Description: "List the open sessions.",
		InputSchema: obj(map[string]any{})}, s.listSessions)
}

type callArgs struct {
	Session string            `json:"session"`
	FrameID string            `json:"frame_id"`
	Actions []json.RawMessage `json:"actions"`
	URL     string            `json:"url"`
	Start   string            `json:"start_url"`
}

func args(req *sdk.CallToolRequest) (callArgs, json.RawMessage, error) {
	raw := json.RawMessage(req.Params.Arguments)
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	var a callArgs
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, raw, fmt.Errorf("%w: arguments: %v", actions.ErrInvalid, err)
	}
	return a, raw, nil
}

// checkArgs refuses argument names the schema does not have: a client
// that writes {"kind":"click","x":85,"y":254} must learn the right shape,
// not have its click land at the pointer's old position. top allows the
// call-level names (session, frame_id, actions) too.
func checkArgs(m map[string]json.RawMessage, top bool) error {
	props := actionProps()
	for k := range m {
		if _, ok := props[k]; ok {
			continue
		}
		if top && (k == "session" || k == "frame_id" || k == "actions") {
			continue
		}
		hint := ""
		if k == "x" || k == "y" {
			hint = `; a point is "at": {"x": 85, "y": 254}`
		}
		return fmt.Errorf(`%w: unknown argument %q%s. An action is {"kind": ..., "at": {"x", "y"}, "text", "keys", "url", ...}, `+
			`for example {"kind": "click", "at": {"x": 85, "y": 254}}`, actions.ErrInvalid, k, hint)
	}
	return nil
}

// decodeAction reads one action from the tool's JSON: actions.Action's
// fields, with "at" implying has_at and duration_ms in milliseconds.
func decodeAction(raw json.RawMessage, top bool) (actions.Action, error) {
	var a actions.Action
	var extra struct {
		At         *actions.Point `json:"at"`
		DurationMS *float64       `json:"duration_ms"`
		Keys       []string       `json:"keys"`
		Modifiers  []string       `json:"modifiers"`
	}
	if err := json.Unmarshal(raw, &extra); err != nil {
		return a, fmt.Errorf("%w: %v", actions.ErrInvalid, err)
	}
	// Keys and modifiers may be in any dialect (ChordOf reads them), and
	// duration_ms replaces actions.Action's nanoseconds.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, fmt.Errorf("%w: %v", actions.ErrInvalid, err)
	}
	if err := checkArgs(m, top); err != nil {
		return a, err
	}
	for _, k := range []string{"keys", "modifiers", "duration_ms", "session", "frame_id", "actions"} {
		delete(m, k)
	}
	if extra.DurationMS != nil {
		delete(m, "duration")
	}
	raw, _ = json.Marshal(m)
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&a); err != nil {
		return a, fmt.Errorf("decode the action: %w", err)
	}
	var err error
	if len(extra.Keys) > 0 {
		if a.Keys, err = actions.ChordOf(extra.Keys); err != nil {
			return a, fmt.Errorf("%w: keys: %v", actions.ErrInvalid, err)
		}
	}
	if len(extra.Modifiers) > 0 {
		if a.Modifiers, err = actions.ChordOf(extra.Modifiers); err != nil {
			return a, fmt.Errorf("%w: modifiers: %v", actions.ErrInvalid, err)
		}
	}
	if a.Kind == actions.KindInvalid {
		return a, fmt.Errorf("%w: kind is required (one of %v)", actions.ErrInvalid, kindNames())
	}
	if extra.At != nil {
		a.HasAt = true
	}
	if extra.DurationMS != nil {
		a.Duration = time.Duration(*extra.DurationMS * float64(time.Millisecond))
	}
	return a, nil
}

func (s *Server) computer(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return s.resume(ctx, req), nil // the client's answer to a question of its call
	}
	a, raw, err := args(req)
	if err != nil {
		return errorResult(err), nil
	}
	var batch []actions.Action
	if len(a.Actions) > 0 {
		for i, r := range a.Actions {
			act, err := decodeAction(r, false)
			if err != nil {
				return errorResult(fmt.Errorf("actions[%d]: %w", i, err)), nil
			}
			batch = append(batch, act)
		}
	} else {
		act, err := decodeAction(raw, true)
		if err != nil {
			return errorResult(err), nil
		}
		batch = []actions.Action{act}
	}
	se, err := s.lookup(ctx, req.Session, a.Session)
	if err != nil {
		return errorResult(err), nil
	}
	return s.call(ctx, req.Session, se, ToolComputer, a.FrameID, batch, raw), nil
}

func (s *Server) navigate(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return s.resume(ctx, req), nil
	}
	a, _, err := args(req)
	if err != nil {
		return errorResult(err), nil
	}
	se, err := s.lookup(ctx, req.Session, a.Session)
	if err != nil {
		return errorResult(err), nil
	}
	raw, _ := json.Marshal(map[string]string{"url": a.URL})
	return s.call(ctx, req.Session, se, ToolNavigate, "", []actions.Action{{Kind: actions.Navigate, URL: a.URL}}, raw), nil
}

func (s *Server) openSession(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	if req.Params.RequestState != "" {
		return s.resume(ctx, req), nil
	}
	a, _, err := args(req)
	if err != nil {
		return errorResult(err), nil
	}
	se, err := s.open(ctx, "")
	if err != nil {
		return errorResult(err), nil
	}
	id := s.callID()
	return s.park(ctx, id, se.id, req.Session, func(ctx context.Context) *sdk.CallToolResult {
		if a.Start != "" {
			// A URL the client picks is the client's action, through the
			// one path: the policy decides, approvals apply, the record
			// has it.
			raw, _ := json.Marshal(map[string]string{"start_url": a.Start})
			r := se.exec.Do(ctx, harness.Call{ID: id, Name: ToolOpenSession, Space: screen.Image, Raw: raw,
				Actions: []actions.Action{{Kind: actions.Navigate, URL: a.Start}}}, harness.Options{Actor: harness.ActorClient})
			if r.Err != nil {
				cerr := s.closeSession(context.WithoutCancel(ctx), se.id)
				return errorResult(errors.Join(r.Err, cerr))
			}
			s.mu.Lock()
			se.url = a.Start
			s.mu.Unlock()
		}
		shot, err := se.screenshot(ctx)
		if err != nil {
			return errorResult(fmt.Errorf("session %s opened, but the screenshot failed: %w", se.id, err))
		}
		return shotResult(se.id, harness.Result{Shot: &shot})
	}), nil
}

func (s *Server) closeSessionTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	a, _, err := args(req)
	if err != nil {
		return errorResult(err), nil
	}
	if a.Session == "" {
		return errorResult(errors.New("session is required")), nil
	}
	if err := s.closeSession(ctx, a.Session); err != nil {
		return errorResult(err), nil
	}
	return textResult(map[string]any{"closed": a.Session}), nil
}

func (s *Server) listSessions(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return textResult(map[string]any{"sessions": s.list()}), nil
}

// call runs a batch of conn's call of tool in the session, through the
// one per-action path, and turns the result into tool content (or the
// first question its approver asks the client: see park). raw is the
// call as the client sent it, for the record.
func (s *Server) call(ctx context.Context, conn *sdk.ServerSession, se *session, tool, frameID string, batch []actions.Action, raw json.RawMessage) *sdk.CallToolResult {
	for i := range batch {
		batch[i].Secret = false // the executor decides
	}
	id := s.callID()
	return s.park(ctx, id, se.id, conn, func(ctx context.Context) *sdk.CallToolResult {
		r := se.exec.Do(ctx, harness.Call{ID: id, Name: tool, Actions: batch, Space: screen.Image, FrameID: frameID,
			Raw: raw}, harness.Options{Actor: harness.ActorClient})
		if r.Err != nil {
			s.log.InfoContext(ctx, "call failed", "session", se.id, "call", id, "err", r.Err)
		}
		return shotResult(se.id, r)
	})
}

// callID names a new call of this server.
func (s *Server) callID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("mcp-%d", s.seq)
}

// note is the text part of a result.
type note struct {
	Session string         `json:"session"`
	FrameID string         `json:"frame_id,omitempty"`
	Image   screen.Size    `json:"image,omitzero"`
	URL     string         `json:"url,omitempty"`
	Ran     int            `json:"ran"`
	Error   string         `json:"error,omitempty"`
	Notes   []string       `json:"notes,omitempty"`
	Cursor  *actions.Point `json:"cursor,omitempty"`
	ZoomID  string         `json:"zoom_frame_id,omitempty"`
}

func shotResult(session string, r harness.Result) *sdk.CallToolResult {
	n := note{Session: session, Ran: r.Ran, Notes: r.Notes, Cursor: r.Cursor}
	var content []sdk.Content
	if r.Err != nil {
		n.Error = r.Err.Error()
		// The reason first, in words, for the client's model.
		content = append(content, &sdk.TextContent{Text: "error: " + n.Error})
	}
	if r.Shot != nil {
		n.FrameID, n.Image, n.URL = r.Shot.Frame.ID, r.Shot.Frame.Sent, r.Shot.Frame.URL
		content = append(content, &sdk.ImageContent{Data: r.Shot.Data, MIMEType: mime(r.Shot.Frame.Format)})
	}
	if r.Zoom != nil {
		n.ZoomID = r.Zoom.Frame.ID
		content = append(content, &sdk.ImageContent{Data: r.Zoom.Data, MIMEType: mime(r.Zoom.Frame.Format)})
	}
	b, _ := json.Marshal(n)
	content = append(content, &sdk.TextContent{Text: string(b)})
	return &sdk.CallToolResult{Content: content, IsError: r.Err != nil}
}

func mime(f screen.Format) string {
	if f == screen.JPEG {
		return "image/jpeg"
	}
	return "image/png"
}
