package web_test

// Provider safety checks through `spotter serve` (issue 14): an OpenAI
// computer_call with pending_safety_checks (in the computer-use-preview
// and the GA tool's shapes) and a Gemini call whose safety_decision
// requires confirmation, in an agent session (the server's model talks to
// the provider's fake) and in an executor session (the client's own loop
// talks to the fake and posts the calls), under supervise none and
// flagged. Each check is held as an approval that shows the provider's
// code and message. Approved, the call runs and the provider's next
// request acknowledges the check; denied or expired, nothing runs, nothing
// is acknowledged, and the model or the client reads a denial in words,
// never an internal error.
//
// With SPOTTER_INTEGRATION=1 every session runs on a real Chromium showing
// a page that reports clicks, and the panel's card is checked in it too.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/approvals"
	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/gemini"
	"github.com/spotter-harness/spotter/harness/gemini/geminitest"
	"github.com/spotter-harness/spotter/harness/openai"
	"github.com/spotter-harness/spotter/harness/openai/openaitest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/store"
)

// safetyHTML is one big button: wherever the model clicks, it clicks it,
// and the page tells its server.
const safetyHTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>Continue</title>
<style>html, body { margin: 0; height: 100%; } button { position: fixed; inset: 0; width: 100%; height: 100%; font: 32px sans-serif; }</style></head>
<body><button onclick="fetch('/clicked', {method: 'POST'})">Continue</button></body></html>`

// safetyInternalWords are what Go's and Spotter's internals say, which no model
// or client may read.
var safetyInternalWords = []string{"MarshalText", "actions.Kind", "kind 0", "record approval request", "internal error",
	"store approval", "sql:"}

// safetyCase is one provider, door and decision.
type safetyCase struct {
	name      string
	provider  string // openai or gemini
	model     string
	preview   bool   // OpenAI's computer-use-preview call shape
	supervise string // none or flagged
	decision  string // approve, deny, or "" to let it expire (executor sessions only)
}

// check is the safety check the case's provider raises.
func (c safetyCase) check() harness.SafetyCheck {
	if c.provider == "gemini" {
		return harness.SafetyCheck{ID: "fc_sc", Code: "require_confirmation",
			Message: "The page asks to accept its terms; a person should confirm."}
	}
	return harness.SafetyCheck{ID: "sc_1", Code: "malicious_instructions",
		Message: "The page may hold instructions that steer the model away from the task."}
}

// callID is the id of the case's call.
func (c safetyCase) callID() string {
	if c.provider == "gemini" {
		return "fc_sc"
	}
	return "call_sc"
}

// openaiCall is the case's computer_call item: a click anywhere on the
// page, with the check pending.
func (c safetyCase) openaiCall() json.RawMessage {
	return openaitest.Call{ID: c.callID(), Actions: []string{`{"type":"click","button":"left","x":100,"y":100}`},
		Preview: c.preview, Checks: []harness.SafetyCheck{c.check()}}.Item()
}

// geminiCall is the case's function call: a click in the middle of the
// page, whose safety decision requires confirmation.
func (c safetyCase) geminiCall(t *testing.T) geminitest.Call {
	t.Helper()
	call, err := geminitest.CallOf(gemini.FunctionSetFor(c.model), c.callID(),
		actions.Action{Kind: actions.Click, At: actions.Pt(500, 500), HasAt: true})
	if err != nil {
		t.Fatalf("geminitest.CallOf() = %v", err)
	}
	call.Args["safety_decision"] = map[string]any{"decision": "require_confirmation", "explanation": c.check().Message}
	return call
}

// safetyPage serves safetyHTML and counts the clicks it reports.
type safetyPage struct {
	url     string
	clicked chan struct{} // a value per click
}

func newSafetyPage(t *testing.T) *safetyPage {
	t.Helper()
	p := &safetyPage{clicked: make(chan struct{}, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, safetyHTML) })
	mux.HandleFunc("POST /clicked", func(w http.ResponseWriter, r *http.Request) {
		select {
		case p.clicked <- struct{}{}:
		default:
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/"
	return p
}

// newSafetyEnv is a server whose agent sessions talk to the OpenAI or
// Gemini fake named by the session's model (provider and base_url).
func newSafetyEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, data: t.TempDir()}
	e.cfg.DataDir, e.cfg.Token = e.data, testToken
	e.cfg.NewModel = func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
		switch m.Provider {
		case "openai":
			return openai.New(openai.Config{BaseURL: m.BaseURL, APIKey: "test", Model: m.Name, Display: image,
				Tools: tools, MaxRetries: -1})
		case "gemini":
			return gemini.New(gemini.Config{BaseURL: m.BaseURL, APIKey: "test", Model: m.Name, Display: image,
				Tools: tools, MaxRetries: -1})
		}
		return nil, fmt.Errorf("no fake for provider %q", m.Provider)
	}
	if integration() {
		e.cfg.NewDisplay = openBrowser
	} else {
		e.cfg.NewDisplay = func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			f := &screentest.Fake{Viewport: d.Size(), DPR: d.DPR}
			e.mu.Lock()
			e.fakes = append(e.fakes, f)
			e.mu.Unlock()
			return fakeDisplay{f}, nil
		}
	}
	e.start()
	t.Cleanup(e.stop)
	return e
}

// safetyClicks returns how many clicks reached the page (a real Chromium) or
// the display (the in-memory one, the last opened), waiting, when want
// is more than none, until that many have arrived.
func (e *env) safetyClicks(p *safetyPage, want int) int {
	e.t.Helper()
	if !integration() {
		e.mu.Lock()
		f := e.fakes[len(e.fakes)-1]
		e.mu.Unlock()
		n := 0
		for _, m := range f.Performed() {
			if m.Kind == actions.Click {
				n++
			}
		}
		return n
	}
	ctx, cancel := context.WithTimeout(e.t.Context(), 30*time.Second)
	defer cancel()
	got := 0
	for got < want {
		select {
		case <-p.clicked:
			got++
		case <-ctx.Done():
			return got
		}
	}
	return got + len(p.clicked)
}

// safetyNoInternals fails t if what (a stream, an answer, a request to the
// provider) shows an internal error.
func safetyNoInternals(t *testing.T, where string, what []byte) {
	t.Helper()
	for _, w := range safetyInternalWords {
		if bytes.Contains(what, []byte(w)) {
			t.Errorf("%s shows an internal error (%q): %.600s", where, w, what)
		}
	}
}

// safetyPermission checks that a permission_request, or a stored
// approval's request, shows the case's safety check and no action.
func safetyPermission(t *testing.T, c safetyCase, where string, raw json.RawMessage) session.PermissionRequest {
	t.Helper()
	var pr session.PermissionRequest
	if err := json.Unmarshal(raw, &pr); err != nil {
		t.Fatalf("%s: %v: %s", where, err, raw)
	}
	if pr.Index != -1 || pr.Rule != approvals.RuleSafetyCheck || pr.ToolCallID != c.callID() {
		t.Errorf("%s = index %d, rule %q, call %q; want -1, %q, %q", where, pr.Index, pr.Rule, pr.ToolCallID,
			approvals.RuleSafetyCheck, c.callID())
	}
	if diff := cmp.Diff([]harness.SafetyCheck{c.check()}, pr.SafetyChecks); diff != "" {
		t.Errorf("%s safety checks (-want +got):\n%s", where, diff)
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(raw, &fields)
	if a, ok := fields["action"]; ok {
		t.Errorf("%s has an action %s, want none: the request is for the provider's check", where, a)
	}
	return pr
}

// safetyStored checks GET /approvals for the session: one approval, for
// the case's check, with the given status.
func (e *env) safetyStored(c safetyCase, id, status string) store.Approval {
	e.t.Helper()
	var list struct{ Approvals []store.Approval }
	e.getJSON("/approvals?session="+id, &list)
	if len(list.Approvals) != 1 {
		e.t.Fatalf("GET /approvals?session=%s = %d approvals, want 1: %+v", id, len(list.Approvals), list.Approvals)
	}
	a := list.Approvals[0]
	if a.Status != status || a.Index != -1 || a.Rule != approvals.RuleSafetyCheck {
		e.t.Errorf("stored approval = status %q, index %d, rule %q; want %q, -1, %q", a.Status, a.Index, a.Rule,
			status, approvals.RuleSafetyCheck)
	}
	safetyPermission(e.t, c, "the stored approval's request", a.Request)
	return a
}

// safetyAck checks the provider's request that answers the case's call:
// acknowledged exactly when approved; an error in words otherwise.
func safetyAck(t *testing.T, c safetyCase, body []byte, approved bool) {
	t.Helper()
	safetyNoInternals(t, "the provider's next request", body)
	switch c.provider {
	case "openai":
		outs, err := openaitest.Outputs(body)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(outs, func(o openaitest.Output) bool { return o.CallID == c.callID() })
		if i < 0 {
			t.Fatalf("the provider's next request does not answer %s: %.500s", c.callID(), body)
		}
		var want []string
		if approved {
			want = []string{c.check().ID}
		}
		if diff := cmp.Diff(want, outs[i].Acknowledged); diff != "" {
			t.Errorf("acknowledged_safety_checks (-want +got):\n%s", diff)
		}
		if !approved && !bytes.Contains(body, []byte("denied")) {
			t.Errorf("the provider's next request does not tell the model of the denial: %.800s", body)
		}
	case "gemini":
		frs, err := geminitest.Request{Body: body}.FunctionResponses()
		if err != nil || len(frs) != 1 {
			t.Fatalf("the provider's next request has function responses %v (%v), want one", frs, err)
		}
		ack, has := frs[0].Response["safety_acknowledgement"]
		switch {
		case approved && ack != "true":
			t.Errorf("functionResponse.response.safety_acknowledgement = %v, want \"true\"", ack)
		case !approved && has:
			t.Errorf("functionResponse.response.safety_acknowledgement = %v after a denial, want none", ack)
		}
		if msg, _ := frs[0].Response["error"].(string); !approved && !strings.Contains(msg, "denied") {
			t.Errorf("functionResponse.response.error = %q, want the denial", msg)
		}
	}
}

var safetyAgentCases = []safetyCase{
	{name: "openai preview approved, supervise none", provider: "openai", model: "computer-use-preview", preview: true, supervise: "none", decision: "approve"},
	{name: "openai preview denied", provider: "openai", model: "computer-use-preview", preview: true, supervise: "flagged", decision: "deny"},
	{name: "openai GA approved", provider: "openai", model: "gpt-5.4", supervise: "flagged", decision: "approve"},
	{name: "openai GA denied, supervise none", provider: "openai", model: "gpt-5.4", supervise: "none", decision: "deny"},
	{name: "gemini approved, supervise none", provider: "gemini", model: "gemini-2.5-computer-use-preview-10-2025", supervise: "none", decision: "approve"},
	{name: "gemini denied", provider: "gemini", model: "gemini-3.5-flash", supervise: "flagged", decision: "deny"},
}

// An agent session holds the model's safety check for a human, who
// answers with a tool_permission message.
func TestSafetyChecksAgentSession(t *testing.T) {
	e := newSafetyEnv(t)
	for _, c := range safetyAgentCases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			page := newSafetyPage(t)
			var baseURL string
			var requests func() [][]byte
			switch c.provider {
			case "openai":
				srv := openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{c.openaiCall()}},
					openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
				baseURL = srv.URL
				requests = func() (out [][]byte) {
					for _, r := range srv.Requests() {
						out = append(out, r.Body)
					}
					return out
				}
			case "gemini":
				srv := geminitest.NewServer(t, geminitest.Turn{Calls: []geminitest.Call{c.geminiCall(t)}}.Reply(),
					geminitest.Text("Done."))
				baseURL = srv.URL
				requests = func() (out [][]byte) {
					for _, r := range srv.Requests() {
						out = append(out, r.Body)
					}
					return out
				}
			}
			resp, evs := e.stream("PUT", "/session", map[string]any{
				"messages":  []map[string]any{{"role": "user", "content": "Continue, please."}},
				"model":     map[string]any{"provider": c.provider, "name": c.model, "base_url": baseURL},
				"display":   map[string]any{"width": 1024, "height": 640},
				"start_url": page.url,
				"approvals": map[string]any{"supervise": c.supervise},
			})
			id := resp.Header.Get("X-Session-Id")
			call := c.callID()
			want := []string{"session", "tool_call:" + call, "permission_request:" + call, "turn_stop:tool_use"}
			if diff := cmp.Diff(want, kinds(evs)); diff != "" {
				t.Fatalf("PUT /session events (-want +got):\n%s\n%s", diff, safetyDump(evs))
			}
			pr := safetyPermission(t, c, "permission_request", evs[2].Data)
			if pr.Shot == "" {
				t.Errorf("permission_request has no screenshot")
			}
			e.safetyStored(c, id, store.ApprovalPending)
			if n := e.safetyClicks(page, 0); n != 0 {
				t.Fatalf("%d clicks before a human decided, want none", n)
			}

			_, evs = e.stream("POST", "/session/"+id, map[string]any{"messages": []map[string]any{{
				"role": "tool_permission", "toolCallId": call, "granted": c.decision == "approve", "reason": "not on this page"}}})
			want = []string{"approval_decided:" + call, "tool_result:" + call, "text_delta", "turn_stop:end_turn"}
			if diff := cmp.Diff(want, kinds(evs)); diff != "" {
				t.Fatalf("POST /session/:id events (-want +got):\n%s\n%s", diff, safetyDump(evs))
			}
			var res session.ToolResultEvent
			if err := json.Unmarshal(evs[1].Data, &res); err != nil {
				t.Fatal(err)
			}
			var all []byte
			for _, ev := range evs {
				all = append(all, ev.Data...)
			}
			safetyNoInternals(t, "the session's stream", all)
			_, hist := e.safetyDo("GET", "/session/"+id, nil, nil)
			safetyNoInternals(t, "GET /session/:id", hist)

			reqs := requests()
			if len(reqs) != 2 {
				t.Fatalf("the provider got %d requests, want 2", len(reqs))
			}
			switch c.decision {
			case "approve":
				if res.IsError {
					t.Errorf("tool_result = %s, want success", evs[1].Data)
				}
				if n := e.safetyClicks(page, 1); n != 1 {
					t.Errorf("%d clicks reached the page after the approval, want 1", n)
				}
				e.safetyStored(c, id, store.ApprovalApproved)
			case "deny":
				text := safetyResultText(res)
				if !res.IsError || !strings.Contains(text, "denied") || !strings.Contains(text, "not on this page") {
					t.Errorf("tool_result = %s, want an error with the denial and its reason", evs[1].Data)
				}
				if n := e.safetyClicks(page, 0); n != 0 {
					t.Errorf("%d clicks reached the page after the denial, want none", n)
				}
				e.safetyStored(c, id, store.ApprovalDenied)
			}
			safetyAck(t, c, reqs[1], c.decision == "approve")
		})
	}
	e.t = t
}

var safetyExecutorCases = []safetyCase{
	{name: "openai preview approved, supervise none", provider: "openai", model: "computer-use-preview", preview: true, supervise: "none", decision: "approve"},
	{name: "openai preview denied", provider: "openai", model: "computer-use-preview", preview: true, supervise: "flagged", decision: "deny"},
	{name: "openai GA approved", provider: "openai", model: "gpt-5.4", supervise: "flagged", decision: "approve"},
	{name: "openai GA denied, supervise none", provider: "openai", model: "gpt-5.4", supervise: "none", decision: "deny"},
	{name: "openai GA expired, supervise none", provider: "openai", model: "gpt-5.4", supervise: "none"},
	{name: "gemini approved", provider: "gemini", model: "gemini-3.5-flash", supervise: "flagged", decision: "approve"},
	{name: "gemini denied, supervise none", provider: "gemini", model: "gemini-2.5-computer-use-preview-10-2025", supervise: "none", decision: "deny"},
}

// safetyAnswer is an executor call's answer.
type safetyAnswer struct {
	Status     string          `json:"status"`
	ToolCallID string          `json:"toolCallId"`
	ApprovalID string          `json:"approvalId"`
	Result     json.RawMessage `json:"result"`
	Message    json.RawMessage `json:"message"`
	Error      string          `json:"error"`
}

// safetyDo sends an API request and decodes its JSON answer into v.
func (e *env) safetyDo(method, path string, body, v any) (int, []byte) {
	e.t.Helper()
	resp := e.request(method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			e.t.Fatalf("%s %s = %d %s: %v", method, path, resp.StatusCode, b, err)
		}
	}
	return resp.StatusCode, b
}

// safetyPostProvider sends a request to a provider's fake as the executor
// client's own loop would, and returns the answer.
func safetyPostProvider(t *testing.T, url string, body any) []byte {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", "test")
	req.Header.Set("Authorization", "Bearer test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s = %d %s", url, resp.StatusCode, out)
	}
	return out
}

// An executor session holds a client's call with a safety check for a
// human; the client's next request to its provider carries the
// acknowledgement only if one approved.
func TestSafetyChecksExecutorSession(t *testing.T) {
	e := newSafetyEnv(t)
	for _, c := range safetyExecutorCases {
		t.Run(c.name, func(t *testing.T) {
			e.t = t
			page := newSafetyPage(t)
			approvalsSpec := map[string]any{"supervise": c.supervise}
			if c.decision == "" {
				approvalsSpec["rules"] = map[string]any{"timeout": "1s"}
			}
			var created struct{ ID string }
			code, b := e.safetyDo("POST", "/executor/sessions", map[string]any{"provider": c.provider,
				"model": map[string]any{"name": c.model}, "display": map[string]any{"width": 1024, "height": 640},
				"start_url": page.url, "approvals": approvalsSpec}, &created)
			if code != http.StatusOK || created.ID == "" {
				t.Fatalf("POST /executor/sessions = %d %s", code, b)
			}
			id := created.ID

			// The client asks its provider, which answers with the call.
			task := "Continue, please."
			var item json.RawMessage
			var sendBack func(result, message json.RawMessage) []byte
			switch c.provider {
			case "openai":
				srv := openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{c.openaiCall()}},
					openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
				user := map[string]any{"role": "user", "content": task}
				var first struct{ Output []json.RawMessage }
				if err := json.Unmarshal(safetyPostProvider(t, srv.URL+"responses", map[string]any{"model": c.model,
					"input": []any{user}}), &first); err != nil || len(first.Output) != 1 {
					t.Fatalf("the provider's first answer: %v, %d items", err, len(first.Output))
				}
				item = first.Output[0]
				sendBack = func(result, message json.RawMessage) []byte {
					input := []any{user, item, result}
					if message != nil {
						input = append(input, message)
					}
					safetyPostProvider(t, srv.URL+"responses", map[string]any{"model": c.model, "input": input})
					return srv.Requests()[1].Body
				}
			case "gemini":
				srv := geminitest.NewServer(t, geminitest.Turn{Calls: []geminitest.Call{c.geminiCall(t)}}.Reply(),
					geminitest.Text("Done."))
				url := srv.URL + "v1beta/models/" + c.model + ":generateContent"
				user := map[string]any{"role": "user", "parts": []any{map[string]any{"text": task}}}
				var first struct {
					Candidates []struct {
						Content struct {
							Role  string            `json:"role"`
							Parts []json.RawMessage `json:"parts"`
						} `json:"content"`
					} `json:"candidates"`
				}
				if err := json.Unmarshal(safetyPostProvider(t, url, map[string]any{"contents": []any{user}}), &first); err != nil ||
					len(first.Candidates) != 1 || len(first.Candidates[0].Content.Parts) != 1 {
					t.Fatalf("the provider's first answer: %v, %+v", err, first)
				}
				model := first.Candidates[0].Content
				item = model.Parts[0]
				sendBack = func(result, _ json.RawMessage) []byte {
					answer := map[string]any{"role": "user", "parts": []json.RawMessage{result}}
					safetyPostProvider(t, url, map[string]any{"contents": []any{user, model, answer}})
					return srv.Requests()[1].Body
				}
			}

			// The call waits for a human.
			call := c.callID()
			var a safetyAnswer
			code, b = e.safetyDo("POST", "/executor/sessions/"+id+"/call?wait=0s", item, &a)
			for code == http.StatusAccepted && a.ApprovalID == "" { // not at the gate yet: long-poll
				code, b = e.safetyDo("GET", "/executor/sessions/"+id+"/calls/"+call+"?wait=200ms", nil, &a)
			}
			if code != http.StatusAccepted || a.Status != "pending_approval" || a.ToolCallID != call {
				t.Fatalf("call = %d %.600s, want 202 pending_approval", code, b)
			}
			stored := e.safetyStored(c, id, store.ApprovalPending)
			if stored.ID != a.ApprovalID {
				t.Errorf("stored approval %s, the call waits for %s", stored.ID, a.ApprovalID)
			}
			if n := e.safetyClicks(page, 0); n != 0 {
				t.Fatalf("%d clicks before a human decided, want none", n)
			}
			if c.decision != "" {
				var decided store.Approval
				code, b = e.safetyDo("POST", "/approvals/"+a.ApprovalID, map[string]any{"decision": c.decision,
					"reason": "not on this page"}, &decided)
				if code != http.StatusOK {
					t.Fatalf("POST /approvals/%s = %d %s", a.ApprovalID, code, b)
				}
			}

			code, b = e.safetyDo("GET", "/executor/sessions/"+id+"/calls/"+call+"?wait=30s", nil, &a)
			if code != http.StatusOK || a.Status != "done" {
				t.Fatalf("GET the call's result = %d %.600s, want 200 done", code, b)
			}
			safetyNoInternals(t, "the executor's answer", b)
			switch c.decision {
			case "approve":
				if a.Error != "" {
					t.Errorf("answer error = %q, want none", a.Error)
				}
				if n := e.safetyClicks(page, 1); n != 1 {
					t.Errorf("%d clicks reached the page after the approval, want 1", n)
				}
				e.safetyStored(c, id, store.ApprovalApproved)
			case "deny":
				if !strings.Contains(a.Error, "denied") || !strings.Contains(a.Error, "not on this page") {
					t.Errorf("answer error = %q, want the denial with its reason", a.Error)
				}
				e.safetyStored(c, id, store.ApprovalDenied)
			default:
				if !strings.Contains(a.Error, "denied") || !strings.Contains(a.Error, "no human decided in time") {
					t.Errorf("answer error = %q, want a denial saying nobody decided in time", a.Error)
				}
				e.safetyStored(c, id, store.ApprovalExpired)
			}
			if c.decision != "approve" {
				if n := e.safetyClicks(page, 0); n != 0 {
					t.Errorf("%d clicks reached the page without an approval, want none", n)
				}
			}
			safetyAck(t, c, sendBack(a.Result, a.Message), c.decision == "approve")
			code, b = e.safetyDo("DELETE", "/executor/sessions/"+id, nil, nil)
			if code != http.StatusOK {
				t.Errorf("DELETE = %d %s", code, b)
			}
		})
	}
	e.t = t
}

// safetyResultText joins a tool_result's text parts.
func safetyResultText(r session.ToolResultEvent) string {
	var ts []string
	for _, c := range r.Content {
		if c.Type == "text" {
			ts = append(ts, c.Text)
		}
	}
	return strings.Join(ts, "\n")
}

// safetyDump shows a stream's events for a failure.
func safetyDump(evs []sseEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%s %.300s\n", ev.Type, ev.Data)
	}
	return b.String()
}

// safetyCard is what the panel's approval card shows.
type safetyCard struct {
	Title       string   `json:"title"`
	Rule        string   `json:"rule"`
	Safety      []string `json:"safety"`
	TargetShown bool     `json:"targetShown"`
	EditShown   bool     `json:"editShown"`
}

// safetyCardJS reads the first approval card, or null.
const safetyCardJS = `() => {
	const card = document.querySelector('#approval-list .approval');
	if (!card) return null;
	const q = (s) => card.querySelector(s);
	return {title: q('.a-title').textContent, rule: q('.a-rule-name').textContent,
		safety: Array.from(card.querySelectorAll('.a-safety')).map((e) => e.textContent),
		targetShown: !q('.a-target-head').hidden, editShown: !q('.edit-toggle').hidden};
}`

// safetyWaitFor evaluates read (a JavaScript function) in d's page until
// it returns something other than null; the page tells each evaluation
// when its DOM changes, or after a second.
func safetyWaitFor(ctx context.Context, t *testing.T, d *cdp.Display, what, read string) json.RawMessage {
	t.Helper()
	expr := `new Promise((resolve) => {
	const read = ` + read + `;
	const v = read();
	if (v !== null) return resolve(v);
	const o = new MutationObserver(() => { const v = read(); if (v !== null) { o.disconnect(); resolve(v); } });
	o.observe(document.documentElement, {subtree: true, childList: true, attributes: true, characterData: true});
	setTimeout(() => { o.disconnect(); resolve(null); }, 1000);
})`
	for {
		raw, err := d.Eval(ctx, expr)
		if err == nil && string(raw) != "null" {
			return raw
		}
		if ctx.Err() != nil {
			t.Fatalf("the panel never showed %s (last: %s, %v)", what, raw, err)
		}
	}
}

// The panel shows a safety check's card (the provider's code and message,
// no target, nothing to edit) in a real Chromium, and its Approve button
// releases the call, whose answer then acknowledges the check.
func TestSafetyCheckPanelCard(t *testing.T) {
	if !integration() {
		t.Skip("set SPOTTER_INTEGRATION=1 to render the panel in a real Chromium")
	}
	e := newSafetyEnv(t)
	c := safetyCase{provider: "openai", model: "gpt-5.4", supervise: "none", decision: "approve"}
	page := newSafetyPage(t)
	srv := openaitest.NewServer(t, openaitest.Reply{Output: []json.RawMessage{c.openaiCall()}},
		openaitest.Reply{Output: []json.RawMessage{openaitest.Message("Done.")}})
	resp, evs := e.stream("PUT", "/session", map[string]any{
		"messages":  []map[string]any{{"role": "user", "content": "Continue, please."}},
		"model":     map[string]any{"provider": "openai", "name": c.model, "base_url": srv.URL},
		"display":   map[string]any{"width": 1024, "height": 640},
		"start_url": page.url,
		"approvals": map[string]any{"supervise": "none"},
	})
	id := resp.Header.Get("X-Session-Id")
	if k := kinds(evs); len(k) == 0 || k[len(k)-1] != "turn_stop:tool_use" || !slices.Contains(k, "permission_request:"+c.callID()) {
		t.Fatalf("PUT /session events = %v, want a permission_request, then a pause", k)
	}

	// The operator's panel, in a tab of the shared Chromium.
	disp, err := openBrowser(t.Context(), session.DisplaySpec{Width: 1280, Height: 900, DPR: 1})
	if err != nil {
		t.Fatalf("open a tab for the panel: %v", err)
	}
	t.Cleanup(func() { disp.Close(context.Background()) })
	d, ok := disp.(*cdp.Display)
	if !ok {
		t.Fatalf("openBrowser() = %T, want a *cdp.Display", disp)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	if err := d.Perform(ctx, screen.Mapped{Action: actions.Action{Kind: actions.Navigate, URL: e.base + "/#/session/" + id}}); err != nil {
		t.Fatalf("open the panel: %v", err)
	}
	// Once the script has started, the login form shows; then log in.
	safetyWaitFor(ctx, t, d, "the login form", `() => document.getElementById('login').hidden ? null : true`)
	login := fmt.Sprintf(`(() => { document.getElementById('login-token').value = %q;
		document.getElementById('login-form').requestSubmit(); return true; })()`, testToken)
	if _, err := d.Eval(ctx, login); err != nil {
		t.Fatalf("log in to the panel: %v", err)
	}
	var card safetyCard
	raw := safetyWaitFor(ctx, t, d, "the approval card", safetyCardJS)
	if err := json.Unmarshal(raw, &card); err != nil {
		t.Fatalf("card %s: %v", raw, err)
	}
	ch := c.check()
	want := safetyCard{Title: "Provider safety check: " + ch.Code, Rule: approvals.RuleSafetyCheck,
		Safety: []string{ch.Code + ": " + ch.Message}}
	if diff := cmp.Diff(want, card); diff != "" {
		t.Errorf("the panel's card (-want +got):\n%s", diff)
	}

	// Approve in the panel; the run goes on.
	if _, err := d.Eval(ctx, `(() => { document.querySelector('#approval-list .approval .approve').click(); return true; })()`); err != nil {
		t.Fatalf("click Approve: %v", err)
	}
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/session/%s/events?after=%d", e.base, id, evs[len(evs)-1].ID), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	follow, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("follow the session's stream: %v", err)
	}
	defer follow.Body.Close()
	r := newSSEReader(follow.Body)
	var got []string
	for len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "turn_stop") {
		ev, err := r.next()
		if err != nil {
			t.Fatalf("the session's stream after the approval: %v; events %v", err, got)
		}
		got = append(got, kinds([]sseEvent{ev})...)
	}
	want2 := []string{"approval_decided:" + c.callID(), "tool_result:" + c.callID(), "text_delta", "turn_stop:end_turn"}
	if diff := cmp.Diff(want2, got); diff != "" {
		t.Errorf("events after the panel's approval (-want +got):\n%s", diff)
	}
	e.safetyStored(c, id, store.ApprovalApproved)
	if n := e.safetyClicks(page, 1); n != 1 {
		t.Errorf("%d clicks reached the page after the panel's approval, want 1", n)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the provider got %d requests, want 2", len(reqs))
	}
	safetyAck(t, c, reqs[1].Body, true)
}
