package mcp

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	ToolSnapshot     = "snapshot"
)

func kindNames() []string {
	var out []string
	for _, k := range actions.Kinds() {
		out = append(out, k.String())
	}
	return out
}

func (s *Server) addTools() {
	in := toolSchemas()
	s.srv.AddTool(&sdk.Tool{Name: ToolComputer,
		Description: "Act on the session's screen with one canonical action (kind plus its fields) or a batch (actions), " +
			"in pixels of the latest screenshot (or of frame_id), or on elements by their ref from the snapshot tool " +
			"(\"at\": {\"ref\": \"e12\"}). Answers with a fresh screenshot and a note naming its frame.",
		InputSchema: in[ToolComputer]}, s.computer)
	s.srv.AddTool(&sdk.Tool{Name: ToolNavigate, Description: "Open a URL in the session, if the policy allows its host.",
		InputSchema: in[ToolNavigate]}, s.navigate)
	s.srv.AddTool(&sdk.Tool{Name: ToolOpenSession, Description: "Open a new session: a display of its own. Returns its id and first screenshot.",
		InputSchema: in[ToolOpenSession]}, s.openSession)
	s.srv.AddTool(&sdk.Tool{Name: ToolCloseSession, Description: "Close a session and its display.",
		InputSchema: in[ToolCloseSession]}, s.closeSessionTool)
	s.srv.AddTool(&sdk.Tool{Name: ToolListSessions, Description: "List the open sessions.",
		InputSchema: in[ToolListSessions]}, s.listSessions)
	s.srv.AddTool(&sdk.Tool{Name: ToolSnapshot,
		Description: "The page's accessibility tree as text: each element's role, name and states, with a short ref " +
			"(\"e12\") that the computer tool takes wherever it takes a point. For clients without vision. " +
			"Browser displays only.",
		InputSchema: in[ToolSnapshot]}, s.snapshot)
}

type callArgs struct {
	Session string            `json:"session"`
	FrameID string            `json:"frame_id"`
	Actions []json.RawMessage `json:"actions"`
	URL     string            `json:"url"`
	Start   string            `json:"start_url"`
}

// args checks a call's arguments against its tool's input schema, in the
// schema's words, and decodes the names every tool shares.
func args(req *sdk.CallToolRequest) (callArgs, json.RawMessage, error) {
	raw := json.RawMessage(req.Params.Arguments)
	if len(raw) == 0 || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	var a callArgs
	if s, ok := toolSchemas()[req.Params.Name]; ok {
		if err := checkSchema(raw, s); err != nil {
			return a, raw, err
		}
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return a, raw, fmt.Errorf("%w: arguments: %s", actions.ErrInvalid, inWords(err))
	}
	return a, raw, nil
}

// inWords says what a JSON decoding error means without Go's type names
// (the schema check comes first, so this is a last resort).
func inWords(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%q has the wrong type (%s)", te.Field, te.Value)
		}
		return fmt.Sprintf("a value has the wrong type (%s)", te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not JSON: " + se.Error()
	}
	msg := err.Error()
	if i := strings.Index(msg, "Go "); i >= 0 {
		msg = msg[:i] + "this tool"
	}
	return msg
}

// point is a point as the tool takes it: pixels, or an element's ref.
type point struct {
	X   *float64 `json:"x"`
	Y   *float64 `json:"y"`
	Ref string   `json:"ref"`
}

// of returns p as an actions.Point, refusing half of one.
func (p point) of(name string) (actions.Point, error) {
	switch {
	case p.Ref != "" && (p.X != nil || p.Y != nil):
		return actions.Point{}, fmt.Errorf("%w: %q has a ref and pixels: give {\"x\", \"y\"} or {\"ref\"}, not both", actions.ErrInvalid, name)
	case p.Ref != "":
		return actions.Point{Ref: p.Ref}, nil
	case p.X == nil || p.Y == nil:
		return actions.Point{}, fmt.Errorf("%w: %q needs both x and y (or a ref from the snapshot tool)", actions.ErrInvalid, name)
	}
	return actions.Point{X: *p.X, Y: *p.Y}, nil
}

// decodeAction reads one action from the tool's JSON, which checkSchema
// has checked: actions.Action's fields, with "at" implying has_at, points
// that may be refs, and duration_ms in milliseconds.
func decodeAction(raw json.RawMessage) (actions.Action, error) {
	var a actions.Action
	var in struct {
		Kind       string  `json:"kind"`
		At         *point  `json:"at"`
		Path       []point `json:"path"`
		Button     string  `json:"button"`
		Modifiers  []string
		DX         float64 `json:"dx"`
		DY         float64 `json:"dy"`
		Text       string  `json:"text"`
		Keys       []string
		DurationMS *float64 `json:"duration_ms"`
		Region     *struct {
			Min point `json:"min"`
			Max point `json:"max"`
		} `json:"region"`
		URL    string   `json:"url"`
		Tab    int      `json:"tab"`
		Accept bool     `json:"accept"`
		Files  []string `json:"files"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return a, fmt.Errorf("%w: %s", actions.ErrInvalid, inWords(err))
	}
	if in.Kind == "" {
		return a, fmt.Errorf("%w: kind is required (one of %s)", actions.ErrInvalid, strings.Join(kindNames(), ", "))
	}
	var err error
	if a.Kind, err = actions.ParseKind(in.Kind); err != nil {
		return a, err
	}
	if a.Button, err = actions.ParseButton(in.Button); err != nil {
		return a, err
	}
	if in.At != nil {
		if a.At, err = in.At.of("at"); err != nil {
			return a, err
		}
		a.HasAt = true
	}
	for i, p := range in.Path {
		q, err := p.of(fmt.Sprintf("path[%d]", i))
		if err != nil {
			return a, err
		}
		a.Path = append(a.Path, q)
	}
	if in.Region != nil {
		if a.Region.Min, err = in.Region.Min.of("region.min"); err != nil {
			return a, err
		}
		if a.Region.Max, err = in.Region.Max.of("region.max"); err != nil {
			return a, err
		}
	}
	a.DeltaX, a.DeltaY, a.Text, a.URL, a.Tab, a.Accept, a.Files = in.DX, in.DY, in.Text, in.URL, in.Tab, in.Accept, in.Files
	// Keys and modifiers may be in any dialect (ChordOf reads them).
	if len(in.Keys) > 0 {
		if a.Keys, err = actions.ChordOf(in.Keys); err != nil {
			return a, fmt.Errorf("%w: keys: %v", actions.ErrInvalid, err)
		}
	}
	if len(in.Modifiers) > 0 {
		if a.Modifiers, err = actions.ChordOf(in.Modifiers); err != nil {
			return a, fmt.Errorf("%w: modifiers: %v", actions.ErrInvalid, err)
		}
	}
	if in.DurationMS != nil {
		a.Duration = time.Duration(*in.DurationMS * float64(time.Millisecond))
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
			act, err := decodeAction(r)
			if err != nil {
				return errorResult(fmt.Errorf("actions[%d]: %w", i, err)), nil
			}
			batch = append(batch, act)
		}
	} else {
		act, err := decodeAction(raw)
		if err != nil {
			return errorResult(err), nil
		}
		batch = []actions.Action{act}
	}
	se, err := s.lookup(ctx, req.Session, clientOf(req.Extra), a.Session)
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
	se, err := s.lookup(ctx, req.Session, clientOf(req.Extra), a.Session)
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
	se, err := s.open(ctx, req.Session, clientOf(req.Extra), "", false)
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
	if err := s.closeSessionOf(ctx, clientOf(req.Extra), a.Session); err != nil {
		return errorResult(err), nil
	}
	return textResult(map[string]any{"closed": a.Session}), nil
}

func (s *Server) snapshot(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	a, _, err := args(req)
	if err != nil {
		return errorResult(err), nil
	}
	se, err := s.lookup(ctx, req.Session, clientOf(req.Extra), a.Session)
	if err != nil {
		return errorResult(err), nil
	}
	snap, err := se.exec.Snapshot(ctx, harness.ActorClient)
	if err != nil {
		return errorResult(err), nil
	}
	page := snap.URL
	if len(page) > 200 {
		page = page[:200] + "..."
	}
	head := fmt.Sprintf("session: %s\npage: %s\n", se.id, page)
	if snap.Title != "" {
		head += fmt.Sprintf("title: %q\n", snap.Title)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: head + "\n" + snap.Text}}}, nil
}

func (s *Server) listSessions(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	return textResult(map[string]any{"sessions": s.list(clientOf(req.Extra))}), nil
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
	s.mu.Lock()
	var notes []string
	if se.note != "" {
		notes, se.note = []string{se.note}, ""
	}
	s.mu.Unlock()
	return s.park(ctx, id, se.id, conn, func(ctx context.Context) *sdk.CallToolResult {
		r := se.exec.Do(ctx, harness.Call{ID: id, Name: tool, Actions: batch, Space: screen.Image, FrameID: frameID,
			Raw: raw}, harness.Options{Actor: harness.ActorClient, Notes: notes})
		if r.Err != nil {
			s.log.InfoContext(ctx, "call failed", "session", se.id, "call", id, "err", r.Err)
		}
		return shotResult(se.id, r)
	})
}

// callID names a new call: uniquely among every server's, since a
// session resumed elsewhere keeps the calls it had (its record's).
func (s *Server) callID() string {
	return "mcp-" + strings.ToLower(rand.Text()[:12])
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
