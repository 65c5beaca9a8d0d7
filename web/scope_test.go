package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// call sends a request with a bearer token (none when tok is "") and
// returns the status, the headers and the body.
func (e *env) call(method, path, tok, body string) (int, http.Header, string) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// scopedToken asks the server for a token scoped to session id.
func (e *env) scopedToken(id string) string {
	e.t.Helper()
	code, _, b := e.call("POST", "/session/"+id+"/token", testToken, "")
	var out struct{ Token, Session string }
	if code != http.StatusOK || json.Unmarshal([]byte(b), &out) != nil || out.Token == "" || out.Session != id {
		e.t.Fatalf("POST /session/%s/token = %d %s", id, code, b)
	}
	return out.Token
}

// pendingApproval makes session id's executor wait for a decision on a
// click and returns the approval's id.
func (e *env) pendingApproval(id, callID string) string {
	e.t.Helper()
	call := `{"type":"tool_use","id":"` + callID + `","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`
	for {
		code, a := e.execPost("/executor/sessions/"+id+"/call?wait=0s", json.RawMessage(call))
		if code != http.StatusAccepted {
			e.t.Fatalf("call = %d %+v, want 202", code, a)
		}
		if a.ApprovalID != "" {
			return a.ApprovalID
		}
	}
}

// A token scoped to one session works on that session's routes only: never
// on another session's, nor on the routes that see every session.
func TestScopedTokens(t *testing.T) {
	e := newEnv(t, envOpts{fake: true, timeout: time.Hour})
	confirm := map[string]any{"confirm": []string{"click"}}
	a, b := e.execSession("anthropic", confirm), e.execSession("anthropic", confirm)
	tok := e.scopedToken(a)
	if tok == e.scopedToken(b) || strings.Contains(tok, testToken) {
		t.Fatalf("scoped tokens must differ per session and not carry the server token")
	}
	apA, apB := e.pendingApproval(a, "toolu_a"), e.pendingApproval(b, "toolu_b")
	click := func(id string) string {
		return `{"type":"tool_use","id":"` + id + `","name":"computer","input":{"action":"screenshot"}}`
	}
	tests := []struct {
		method, path, body string
		want               int // 0: anything but 401 and 403
	}{
		// Its own session.
		{"GET", "/session/" + a, "", http.StatusOK},
		{"GET", "/session/" + a + "/screen", "", 0},
		{"GET", "/approvals?session=" + a, "", http.StatusOK},
		{"POST", "/approvals/" + apA, `{"decision":"deny","reason":"no"}`, http.StatusOK},
		{"GET", "/executor/sessions/" + a + "/calls/toolu_a?wait=30s", "", http.StatusOK},
		{"POST", "/executor/sessions/" + a + "/call?wait=30s", click("toolu_a2"), http.StatusOK},
		// Another session.
		{"GET", "/session/" + b, "", http.StatusForbidden},
		{"POST", "/session/" + b, `{"messages":[{"role":"user","content":"hi"}]}`, http.StatusForbidden},
		{"GET", "/session/" + b + "/events", "", http.StatusForbidden},
		{"GET", "/session/" + b + "/screen", "", http.StatusForbidden},
		{"GET", "/session/" + b + "/shots/t1/shots/f0001.png", "", http.StatusForbidden},
		{"POST", "/session/" + b + "/stop", "", http.StatusForbidden},
		{"POST", "/session/" + b + "/takeover", `{"active":true}`, http.StatusForbidden},
		{"POST", "/session/" + b + "/input", `{"kind":"screenshot"}`, http.StatusForbidden},
		{"POST", "/executor/sessions/" + b + "/call", click("toolu_b2"), http.StatusForbidden},
		{"GET", "/executor/sessions/" + b + "/calls/toolu_b", "", http.StatusForbidden},
		{"DELETE", "/executor/sessions/" + b, "", http.StatusForbidden},
		{"POST", "/approvals/" + apB, `{"decision":"approve"}`, http.StatusForbidden},
		{"POST", "/approvals/a0000000000000000", `{"decision":"approve"}`, http.StatusForbidden},
		{"GET", "/approvals?session=" + b, "", http.StatusForbidden},
		// Admin routes.
		{"GET", "/approvals", "", http.StatusForbidden},
		{"GET", "/sessions", "", http.StatusForbidden},
		{"PUT", "/session", `{}`, http.StatusForbidden},
		{"GET", "/audit", "", http.StatusForbidden},
		{"GET", "/audit?session=" + a, "", http.StatusForbidden},
		{"POST", "/executor/sessions", `{"provider":"anthropic"}`, http.StatusForbidden},
		{"POST", "/session/" + a + "/token", "", http.StatusForbidden},
		{"POST", "/session/" + b + "/token", "", http.StatusForbidden},
		// Last, as it ends the session.
		{"DELETE", "/executor/sessions/" + a, "", http.StatusOK},
	}
	for _, tt := range tests {
		code, _, body := e.call(tt.method, tt.path, tok, tt.body)
		var msg struct{ Error string }
		switch {
		case tt.want == 0 && (code == http.StatusUnauthorized || code == http.StatusForbidden):
			t.Errorf("%s %s = %d %s, want it allowed", tt.method, tt.path, code, body)
		case tt.want != 0 && code != tt.want:
			t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, code, body, tt.want)
		case code == http.StatusForbidden && (json.Unmarshal([]byte(body), &msg) != nil || msg.Error == ""):
			t.Errorf("%s %s = 403 %q, want a JSON reason", tt.method, tt.path, body)
		}
	}
	// B's approval is still pending: the scoped token changed nothing.
	code, _, body := e.call("GET", "/approvals?session="+b+"&status=pending", testToken, "")
	if code != http.StatusOK || !strings.Contains(body, apB) {
		t.Errorf("B's approvals = %d %s, want %s pending", code, body, apB)
	}
	// Forged and mangled tokens are not credentials.
	for _, bad := range []string{"sst." + b + "." + strings.Repeat("0", 64), strings.Replace(tok, a, b, 1),
		tok + "x", "sst.", "sst.." + tok, tok[:len(tok)-1]} {
		if code, _, body := e.call("GET", "/session/"+b, bad, ""); code != http.StatusUnauthorized {
			t.Errorf("forged token %q = %d %s, want 401", bad, code, body)
		}
	}
	// The server token still sees everything; an unknown session has no token.
	if code, _, body := e.call("GET", "/session/"+b, testToken, ""); code != http.StatusOK {
		t.Errorf("admin GET = %d %s", code, body)
	}
	if code, _, _ := e.call("POST", "/session/s0000000000000000/token", testToken, ""); code != http.StatusNotFound {
		t.Errorf("token for an unknown session = %d, want 404", code)
	}
}
