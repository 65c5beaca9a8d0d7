package web_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/web"
)

// The fuzz targets drive every HTTP input decoder of the server through
// Handler(), with an in-memory display and a model that ends each turn at
// once. Whatever the body, the server must not panic (gin's recovery would
// answer 500), must not answer 5xx, and must give every 4xx a JSON reason.
// The seed corpora are in testdata/fuzz/<target>.

// endModel ends every turn at once, with a word.
type endModel struct{}

func (endModel) Next(context.Context, harness.Input) (harness.Turn, error) {
	return harness.Turn{Text: "done", Stop: harness.StopEndTurn}, nil
}

// fuzzServer is a server on a fake display and endModel, used in process.
type fuzzServer struct {
	t testing.TB
	h http.Handler
	n atomic.Int64 // request counter, for distinct remote addresses
	// timeout bounds each request; default 10s.
	timeout time.Duration
}

func newFuzzServer(t testing.TB) *fuzzServer {
	srv, err := web.New(t.Context(), web.Config{
		DataDir: t.TempDir(),
		Token:   testToken,
		NewModel: func(context.Context, session.ModelSpec, screen.Size, []harness.ToolSpec) (harness.Model, error) {
			return endModel{}, nil
		},
		NewDisplay: func(_ context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		},
		ApprovalTimeout: time.Hour,
	})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &fuzzServer{t: t, h: srv.Handler()}
}

// do serves one request, bounded by f.timeout, and returns the recorder.
// contentType "" means application/json.
func (f *fuzzServer) do(method, path, contentType string, body []byte) *httptest.ResponseRecorder {
	ctx, cancel := context.WithTimeout(context.Background(), cmp.Or(f.timeout, 10*time.Second))
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, path, bytes.NewReader(body))
	req.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:4242", f.n.Add(1)>>16&255, f.n.Load()>>8&255, f.n.Load()&255)
	if path != "/login" {
		req.Header.Set("Authorization", "Bearer "+testToken)
	}
	if contentType == "" {
		contentType = "application/json"
	}
	req.Header.Set("Content-Type", contentType)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, req)
	return rec
}

// check fails t unless rec is a success or a 4xx with a JSON reason.
func check(t *testing.T, what string, body []byte, rec *httptest.ResponseRecorder) {
	t.Helper()
	switch {
	case rec.Code >= 500:
		t.Fatalf("%s %q = %d %s: a malformed body must be a 4xx, never a 5xx", what, body, rec.Code, rec.Body)
	case rec.Code >= 400:
		var msg struct {
			Error string `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &msg); err != nil || msg.Error == "" {
			t.Fatalf("%s %q = %d %q, want a JSON reason", what, body, rec.Code, rec.Body)
		}
	}
}

// sessionID creates an agent session, lets its first turn end, and
// returns its id.
func (f *fuzzServer) sessionID() string {
	rec := f.do("PUT", "/session", "", []byte(`{"model":{"provider":"anthropic","name":"claude-sonnet-4-5"},"display":{"width":400,"height":300},"messages":[{"role":"user","content":"hi"}]}`))
	id := rec.Header().Get("X-Session-Id")
	if rec.Code != http.StatusOK || id == "" {
		f.t.Fatalf("PUT /session = %d %s", rec.Code, rec.Body)
	}
	return id
}

// execID creates an executor session and returns its id.
func (f *fuzzServer) execID(provider, approvals string) string {
	rec := f.do("POST", "/executor/sessions", "", []byte(`{"provider":"`+provider+`","display":{"width":400,"height":300},"approvals":`+approvals+`}`))
	var out struct{ ID string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.ID == "" {
		f.t.Fatalf("POST /executor/sessions = %d %s", rec.Code, rec.Body)
	}
	return out.ID
}

// stopCreated stops the session a PUT /session created, so that fuzzing
// does not pile up running sessions.
func (f *fuzzServer) stopCreated(rec *httptest.ResponseRecorder) {
	if id := rec.Header().Get("X-Session-Id"); id != "" {
		f.do("POST", "/session/"+id+"/stop", "", nil)
	}
}

func FuzzCreateSession(f *testing.F) {
	for _, s := range []string{
		`{"model":{"provider":"anthropic","name":"claude-sonnet-4-5"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"title":"t","model":{"provider":"openai","name":"computer-use-preview"},"display":{"width":800,"height":600,"dpr":2},"start_url":"https://example.test/","policy":{"allow":["click"],"hosts":["example.test"]},"approvals":{"supervise":"all","confirm":["type"]},"max_steps":3}`,
		`{"model":{"provider":"gemini"},"approvals":{"rules":[{"name":"r","when":{"kind":["click"]}}]}}`,
		`{"tools":[{"name":"lookup","description":"d","input_schema":{"type":"object"}}],"model":{"provider":"anthropic"}}`,
		`{"display":{"width":-1,"height":1e9,"dpr":-3}}`, `{"max_steps":"x"}`, `[]`, `null`, `{}`, ``, `{"bogus":1}`,
	} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	// A session created without messages streams until the client leaves
	// (see the report on web.Server.stream): leave after a second.
	fs.timeout = time.Second
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := fs.do("PUT", "/session", "", body)
		fs.stopCreated(rec)
		check(t, "PUT /session", body, rec)
	})
}

func FuzzPostSession(f *testing.F) {
	for _, s := range []string{
		`{"messages":[{"role":"user","content":"next"}]}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image"}]}]}`,
		`{"messages":[{"role":"tool","toolCallId":"call_001","content":"booking 42","isError":false}]}`,
		`{"messages":[{"role":"tool_permission","toolCallId":"call_004","granted":false,"reason":"no"}]}`,
		`{"messages":[{"role":"tool_permission","toolCallId":"call_005","granted":true,"edit":{"at":{"x":310,"y":220}}}]}`,
		`{"messages":[{"role":"tool_permission","toolCallId":"c","granted":true,"edit":{"text":"x"}}]}`,
		`{"messages":[{"role":"system","content":"x"}]}`, `{"messages":[]}`, `{"messages":null}`, `{"messages":[null]}`,
		`{}`, ``, `{"messages":[{"role":"user","content":"a"}],"x":1}`, `{"messages":"user"}`,
	} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	id := fs.sessionID()
	f.Fuzz(func(t *testing.T, body []byte) {
		check(t, "POST /session/:id", body, fs.do("POST", "/session/"+id, "", body))
	})
}

func FuzzDecision(f *testing.F) {
	for _, s := range []string{
		`{"decision":"approve"}`, `{"decision":"deny","reason":"wrong item"}`,
		`{"decision":"edit","edit":{"at":{"x":12,"y":34}}}`, `{"decision":"edit","edit":{"text":"hello"}}`,
		`{"decision":"edit"}`, `{"decision":"approve","edit":{"text":"x"}}`, `{"decision":"maybe"}`,
		`{"decision":"edit","edit":{"at":{"x":-5,"y":1e12}}}`, `{"decision":1}`, `{}`, ``, `[`,
	} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	id := fs.execID("anthropic", `{"confirm":["click"]}`)
	var calls int
	pending := func() string {
		calls++
		call := fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`, calls)
		for {
			rec := fs.do("POST", "/executor/sessions/"+id+"/call?wait=0s", "", []byte(call))
			var a struct{ ApprovalID string }
			if rec.Code != http.StatusAccepted || json.Unmarshal(rec.Body.Bytes(), &a) != nil {
				f.Fatalf("call = %d %s, want 202", rec.Code, rec.Body)
			}
			if a.ApprovalID != "" {
				return a.ApprovalID
			}
		}
	}
	ap := pending()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := fs.do("POST", "/approvals/"+ap, "", body)
		check(t, "POST /approvals/:id", body, rec)
		if rec.Code == http.StatusOK {
			// Decided: wait for the call to finish, then ask again.
			fs.do("GET", fmt.Sprintf("/executor/sessions/%s/calls/toolu_%d?wait=10s", id, calls), "", nil)
			ap = pending()
		}
	})
}

func FuzzTakeover(f *testing.F) {
	for _, s := range []string{`{"active":true}`, `{"active":false}`, `{"active":null}`, `{"active":"yes"}`, `{}`, ``, `true`} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	id := fs.sessionID()
	f.Fuzz(func(t *testing.T, body []byte) {
		check(t, "POST /session/:id/takeover", body, fs.do("POST", "/session/"+id+"/takeover", "", body))
	})
}

func FuzzInput(f *testing.F) {
	for _, s := range []string{
		`{"kind":"click","at":{"x":10,"y":20},"has_at":true}`, `{"kind":"type","text":"hello"}`,
		`{"kind":"key","keys":["ctrl","a"]}`, `{"kind":"scroll","at":{"x":1,"y":1},"has_at":true,"dx":0,"dy":300}`,
		`{"kind":"navigate","url":"https://example.test/"}`, `{"kind":"wait","duration":1000000}`,
		`{"kind":"drag","path":[{"x":1,"y":1},{"x":50,"y":50}]}`, `{"kind":"click","at":{"x":100000,"y":-1},"has_at":true}`,
		`{"kind":"nope"}`, `{"kind":7}`, `{}`, ``, `{"kind":"screenshot"}`,
	} {
		f.Add([]byte(s))
	}
	fs := newFuzzServer(f)
	id := fs.sessionID()
	if rec := fs.do("POST", "/session/"+id+"/takeover", "", []byte(`{"active":true}`)); rec.Code != http.StatusOK {
		f.Fatalf("takeover = %d %s", rec.Code, rec.Body)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check(t, "POST /session/:id/input", body, fs.do("POST", "/session/"+id+"/input", "", body))
	})
}

// FuzzExecutorCall posts provider-native calls to an executor session of
// each provider (the first byte picks it).
func FuzzExecutorCall(f *testing.F) {
	seeds := map[uint8][]string{
		0: {`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`,
			`{"type":"tool_use","id":"toolu_2","name":"computer","input":{"action":"type","text":"hi"}}`,
			`{"type":"tool_use","id":"toolu_3","name":"computer","input":{"action":"key","text":"ctrl+a"}}`,
			`{"type":"tool_use","id":"toolu_4","name":"computer","input":{"action":"scroll","coordinate":[5,5],"scroll_direction":"down","scroll_amount":3}}`,
			`{"type":"tool_use","id":"toolu_5","name":"computer","input":{"action":"clack"}}`,
			`{"type":"tool_use","name":"computer","input":{}}`, `{"type":"tool_use","id":"toolu_6","input":"x"}`},
		1: {`{"type":"computer_call","call_id":"call_1","actions":[{"type":"click","button":"left","x":10,"y":20}],"pending_safety_checks":[]}`,
			`{"type":"computer_call","call_id":"call_2","action":{"type":"type","text":"hi"}}`,
			`{"type":"computer_call","call_id":"call_3","actions":[{"type":"keypress","keys":["CTRL","A"]},{"type":"wait"}]}`,
			`{"type":"computer_call","call_id":"call_4","actions":[{"type":"drag","path":[{"x":1,"y":1},{"x":9,"y":9}]}]}`,
			`{"type":"computer_call","call_id":"call_5","actions":[{"type":"click","x":"a"}]}`,
			`{"type":"computer_call","actions":[]}`},
		2: {`{"functionCall":{"id":"fc_1","name":"click_at","args":{"x":500,"y":300}}}`,
			`{"functionCall":{"id":"fc_2","name":"type_text_at","args":{"x":1,"y":2,"text":"hi","press_enter":true}}}`,
			`{"functionCall":{"id":"fc_3","name":"scroll_document","args":{"direction":"down"}}}`,
			`{"functionCall":{"id":"fc_4","name":"key_combination","args":{"keys":"Control+A"}}}`,
			`{"functionCall":{"id":"fc_5","name":"click_at","args":{"x":5000}}}`,
			`{"functionCall":{"name":"click_at"}}`, `{"functionCall":null}`},
	}
	for p, list := range seeds {
		for _, s := range list {
			f.Add(p, []byte(s))
		}
		f.Add(p, []byte(`not json`))
		f.Add(p, []byte(`{}`))
	}
	fs := newFuzzServer(f)
	providers := []string{"anthropic", "openai", "gemini"}
	ids := make([]string, len(providers))
	for i, p := range providers {
		ids[i] = fs.execID(p, `{"supervise":"none"}`)
	}
	f.Fuzz(func(t *testing.T, p uint8, body []byte) {
		i := int(p) % len(providers)
		rec := fs.do("POST", "/executor/sessions/"+ids[i]+"/call?wait=5s", "", body)
		check(t, providers[i]+" call", body, rec)
	})
}

// FuzzLogin posts login forms and JSON bodies (each from its own remote
// address, so the rate limit does not hide the decoder).
func FuzzLogin(f *testing.F) {
	for _, s := range []string{"token=" + testToken, "token=wrong", "token=", "token=%zz", "a=b&token=x&token=y", ""} {
		f.Add(false, []byte(s))
	}
	for _, s := range []string{`{"token":"` + testToken + `"}`, `{"token":"x"}`, `{"token":1}`, `{"token":null}`, `[`, `null`} {
		f.Add(true, []byte(s))
	}
	fs := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, isJSON bool, body []byte) {
		ct := "application/x-www-form-urlencoded"
		if isJSON {
			ct = "application/json"
		}
		rec := fs.do("POST", "/login", ct, body)
		check(t, "POST /login", body, rec)
		if rec.Code == http.StatusOK && len(rec.Result().Cookies()) != 2 {
			t.Fatalf("login with %q = 200 without its cookies", body)
		}
	})
}
