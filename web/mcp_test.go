package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/internal/mcpclients"
	"github.com/spotter-harness/spotter/store"
)

// bearer adds the server token to every request of an MCP client.
type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpResult is what a computer call answered: its error text, images and
// note.
type mcpResult struct {
	errText string
	images  int
	note    struct {
		Session string `json:"session"`
		FrameID string `json:"frame_id"`
		Ran     int    `json:"ran"`
	}
}

func callMCP(t *testing.T, cs *sdk.ClientSession, args map[string]any) mcpResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "computer", Arguments: args})
	if err != nil {
		t.Errorf("CallTool(computer, %v) = %v", args, err)
		return mcpResult{}
	}
	var r mcpResult
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.ImageContent:
			r.images++
		case *sdk.TextContent:
			if strings.HasPrefix(c.Text, "error: ") {
				r.errText = c.Text
			} else if err := json.Unmarshal([]byte(c.Text), &r.note); err != nil {
				t.Errorf("note %q: %v", c.Text, err)
			}
		}
	}
	if res.IsError != (r.errText != "") {
		t.Errorf("CallTool(computer, %v): isError %v with error text %q", args, res.IsError, r.errText)
	}
	return r
}

// An MCP client over streamable HTTP at /mcp, with the server token: a
// flagged click waits in the panel's queue until a person decides it
// through POST /approvals/:id, and a denial's reason reaches the client.
func TestMCPApprovalsThroughThePanel(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	e.stop()
	e.cfg.MCP.Rules = approvals.Rules{Rules: []approvals.Rule{{Name: "confirm-clicks",
		Kinds: []actions.Kind{actions.Click}, Reason: "every click needs a human"}}}
	e.cfg.Version = "v9.9.9-test"
	e.start()

	// No credentials, no MCP.
	r, err := http.Post(e.base+"/mcp", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /mcp without credentials = %d, want 401", r.StatusCode)
	}

	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{testToken}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	// /mcp reports the build's version, as spotter mcp does.
	if v := cs.InitializeResult().ServerInfo.Version; v != "v9.9.9-test" {
		t.Errorf("/mcp server version = %q, want the build's", v)
	}

	first := callMCP(t, cs, map[string]any{"kind": "screenshot"})
	if first.errText != "" || first.images != 1 || first.note.FrameID == "" {
		t.Fatalf("screenshot = %+v, want an image and a frame", first)
	}
	// The MCP session is a session of kind mcp on the panel.
	var list struct{ Sessions []store.Session }
	e.getJSON("/sessions", &list)
	id := ""
	for _, s := range list.Sessions {
		if s.Kind == "mcp" {
			id = s.ID
		}
	}
	if id == "" {
		t.Fatalf("sessions %+v: want one of kind mcp", list.Sessions)
	}
	events := e.request("GET", "/session/"+id+"/events", nil)
	defer events.Body.Close()
	rd := newSSEReader(events.Body)
	var shots []string // the screenshot each permission_request shows
	nextRequest := func() string {
		t.Helper()
		for {
			ev, err := rd.next()
			if err != nil {
				t.Fatalf("events of %s: %v", id, err)
			}
			if ev.Type == "permission_request" {
				shots = append(shots, ev.field("shot"))
				return ev.field("approvalId")
			}
		}
	}
	decide := func(approval string, body map[string]any) {
		t.Helper()
		r := e.request("POST", "/approvals/"+approval, body)
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Errorf("POST /approvals/%s %v = %d, want 200", approval, body, r.StatusCode)
		}
	}
	click := func() <-chan mcpResult {
		out := make(chan mcpResult, 1)
		go func() {
			out <- callMCP(t, cs, map[string]any{"kind": "click", "at": map[string]any{"x": 100, "y": 80},
				"frame_id": first.note.FrameID})
		}()
		return out
	}

	// Approved: the click waits for the decision, then runs.
	done := click()
	approval := nextRequest()
	select {
	case r := <-done:
		t.Fatalf("the flagged click returned %+v before anyone decided", r)
	default:
	}
	decide(approval, map[string]any{"decision": "approve"})
	if got := <-done; got.errText != "" || got.note.Ran != 1 || got.images != 1 {
		t.Errorf("approved click = %+v, want it run with a fresh screenshot", got)
	}

	// Denied: the reason is in the tool result.
	done = click()
	approval = nextRequest()
	decide(approval, map[string]any{"decision": "deny", "reason": "not that button"})
	if got := <-done; !strings.Contains(got.errText, "not that button") || got.note.Ran != 0 || got.images != 1 {
		t.Errorf("denied click = %+v, want the reason, nothing run and a screenshot", got)
	}

	// Each approval showed the screenshot the client saw, which the panel
	// can load; the panel's live view has the session's latest screenshot.
	for i, shot := range shots {
		if shot == "" {
			t.Errorf("permission_request %d shows no screenshot", i)
			continue
		}
		r := e.request("GET", shot, nil)
		r.Body.Close()
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "image/") {
			t.Errorf("GET %s = %d %s, want the image", shot, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
	r = e.request("GET", "/session/"+id+"/screen", nil)
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Errorf("GET /session/%s/screen = %d, want 200", id, r.StatusCode)
	}
	// The session's history lists the MCP calls and their results, the
	// denial as a denial.
	var hist struct {
		Messages []struct {
			Role      string
			ToolCalls []struct{ ToolCallID string }
		}
		ToolCalls []store.ToolCall
	}
	e.getJSON("/session/"+id, &hist)
	var calls, results int
	for _, m := range hist.Messages {
		calls += len(m.ToolCalls)
		if m.Role == "tool" {
			results++
		}
	}
	if calls != 3 || results != 3 {
		t.Errorf("history of %s has %d calls and %d results, want 3 and 3 (screenshot, approved and denied click)", id, calls, results)
	}
	var statuses []string
	for _, c := range hist.ToolCalls {
		statuses = append(statuses, c.Status)
	}
	if s := strings.Join(statuses, ","); s != "done,done,denied" {
		t.Errorf("tool call statuses = %s, want done,done,denied", s)
	}

	// Both decisions are audited as the panel's.
	var audit struct{ Audit []store.Audit }
	e.getJSON("/audit?session="+id, &audit)
	var got []string
	for _, a := range audit.Audit {
		got = append(got, a.Action)
	}
	if s := strings.Join(got, ","); !strings.Contains(s, "approve") || !strings.Contains(s, "deny") {
		t.Errorf("audit actions of %s = %v, want approve and deny", id, got)
	}
}

// The official MCP conformance suite passes against serve's /mcp (through
// a proxy that adds the server token, which the suite cannot send), but
// for the fixture-only scenarios of mcp/conformance-expected.yaml.
func TestConformanceServe(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the conformance suite (npm, Node.js 22)")
	}
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	target, _ := url.Parse(e.base)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // the DNS rebinding scenario's Host reaches the server
		r.Out.Header.Set("Authorization", "Bearer "+testToken)
	}, FlushInterval: -1})
	t.Cleanup(proxy.Close)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	mcpclients.Conformance(ctx, t, proxy.URL+"/mcp")
}

// A token scoped to one MCP client (POST /mcp/tokens) reaches /mcp only,
// and its connections list and drive only that client's sessions; the
// server token's connection sees every client's.
func TestMCPClientTokensConfine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	mint := func(client string) string {
		t.Helper()
		var out struct{ Client, Token string }
		r := e.request("POST", "/mcp/tokens", map[string]any{"client": client})
		defer r.Body.Close()
		if r.StatusCode != http.StatusOK || json.NewDecoder(r.Body).Decode(&out) != nil || out.Client != client || out.Token == "" {
			t.Fatalf("POST /mcp/tokens %s = %d %+v", client, r.StatusCode, out)
		}
		return out.Token
	}
	alice, bob := mint("alice"), mint("bob")
	if r := e.request("POST", "/mcp/tokens", map[string]any{"client": "a.b"}); r.StatusCode != http.StatusBadRequest {
		t.Errorf("POST /mcp/tokens a.b = %d, want 400", r.StatusCode)
	}
	connect := func(tok string) *sdk.ClientSession {
		t.Helper()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
			&sdk.StreamableClientTransport{Endpoint: e.base + "/mcp", HTTPClient: &http.Client{Transport: bearer{tok}}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	sessions := func(cs *sdk.ClientSession) []string {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("list_sessions = %v %+v", err, res)
		}
		var out struct{ Sessions []struct{ ID string } }
		if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range out.Sessions {
			ids = append(ids, s.ID)
		}
		return ids
	}
	a, b, admin := connect(alice), connect(bob), connect(testToken)
	aShot := callMCP(t, a, map[string]any{"kind": "screenshot"})
	bShot := callMCP(t, b, map[string]any{"kind": "screenshot"})
	if got := sessions(a); len(got) != 1 || got[0] != aShot.note.Session {
		t.Errorf("alice lists %v, want only her session %s", got, aShot.note.Session)
	}
	if got := sessions(b); len(got) != 1 || got[0] != bShot.note.Session {
		t.Errorf("bob lists %v, want only his session %s", got, bShot.note.Session)
	}
	if got := sessions(admin); len(got) != 2 {
		t.Errorf("the server token lists %v, want both clients' sessions", got)
	}
	// Bob cannot drive, or close, Alice's session: it does not exist for him.
	if r := callMCP(t, b, map[string]any{"kind": "screenshot", "session": aShot.note.Session}); !strings.Contains(r.errText, "no such session") {
		t.Errorf("bob's call on alice's session = %+v, want no such session", r)
	}
	res, err := b.CallTool(t.Context(), &sdk.CallToolParams{Name: "close_session", Arguments: map[string]any{"session": aShot.note.Session}})
	if err != nil || !res.IsError {
		t.Errorf("bob's close_session of alice's session = %v %+v, want refused", err, res)
	}
	if r := callMCP(t, admin, map[string]any{"kind": "screenshot", "session": aShot.note.Session}); r.errText != "" {
		t.Errorf("the server token's call on alice's session: %s", r.errText)
	}
	// A client token reaches /mcp only.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", e.base+"/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("GET /sessions with an MCP client token = %d, want 403", r.StatusCode)
	}
}

// An MCP session outlives a restart of spotter serve: its client, which
// keeps its Mcp-Session-Id, finds the session (the same id and record)
// in the new process, reopened at its last page, and its next call
// answers there, telling the client the browser was started anew; a
// session the client closed stays closed.
func TestMCPSessionSurvivesRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	e.stop()
	e.cfg.MCP.StartURL = "https://shop.test/start"
	e.start()
	var mu sync.Mutex
	base := func() string { mu.Lock(); defer mu.Unlock(); return e.base }
	// The client's requests go wherever the server listens now.
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		u, _ := url.Parse(base())
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
		r.Header.Set("Authorization", "Bearer "+testToken)
		return http.DefaultTransport.RoundTrip(r)
	})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: "http://mcp.invalid/mcp", HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	defer cs.Close()
	first := callMCP(t, cs, map[string]any{"kind": "screenshot"})
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "navigate", Arguments: map[string]any{"url": "https://shop.test/basket"}})
	if err != nil || res.IsError {
		t.Fatalf("navigate = %v %+v", err, res)
	}
	other, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "open_session", Arguments: map[string]any{}})
	if err != nil || other.IsError {
		t.Fatalf("open_session = %v %+v", err, other)
	}
	var opened struct{ Session string }
	json.Unmarshal([]byte(other.Content[len(other.Content)-1].(*sdk.TextContent).Text), &opened)
	if res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "close_session", Arguments: map[string]any{"session": opened.Session}}); err != nil || res.IsError {
		t.Fatalf("close_session %s = %v %+v", opened.Session, err, res)
	}

	mu.Lock()
	e.restart()
	mu.Unlock()

	// The first call after the restart is told why, once; both answer on
	// the session's last page.
	type answer struct {
		Session string   `json:"session"`
		URL     string   `json:"url"`
		Notes   []string `json:"notes"`
	}
	shot := func() answer {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "computer", Arguments: map[string]any{"kind": "screenshot"}})
		if err != nil || res.IsError {
			t.Fatalf("screenshot after the restart = %v %+v", err, res)
		}
		var a answer
		if err := json.Unmarshal([]byte(res.Content[len(res.Content)-1].(*sdk.TextContent).Text), &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	for i, a := range []answer{shot(), shot()} {
		told := strings.Contains(strings.Join(a.Notes, " "), "its browser was started anew at https://shop.test/basket")
		if a.Session != first.note.Session || a.URL != "https://shop.test/basket" || told != (i == 0) {
			t.Errorf("screenshot %d after the restart = %+v, want session %s on https://shop.test/basket, told of the restart the first time only",
				i, a, first.note.Session)
		}
	}
	var hist struct {
		Session   struct{ Status string }
		ToolCalls []store.ToolCall
	}
	e.getJSON("/session/"+first.note.Session, &hist)
	if hist.Session.Status != store.StatusRunning || len(hist.ToolCalls) != 4 {
		t.Errorf("the session's record after the restart: %s with %d calls, want running with 4 (2 before, 2 after)",
			hist.Session.Status, len(hist.ToolCalls))
	}
	var closed struct{ Session struct{ Status string } }
	e.getJSON("/session/"+opened.Session, &closed)
	if closed.Session.Status != store.StatusStopped {
		t.Errorf("the session the client closed is %s after the restart, want stopped", closed.Session.Status)
	}
}
