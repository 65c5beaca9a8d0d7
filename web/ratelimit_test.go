package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/web"
)

// check429 asserts a rate-limited answer: 429, a Retry-After in seconds
// and a JSON reason.
func check429(t *testing.T, what string, code int, h http.Header, body string) {
	t.Helper()
	var msg struct{ Error string }
	secs, err := strconv.Atoi(h.Get("Retry-After"))
	if code != http.StatusTooManyRequests || err != nil || secs < 1 ||
		json.Unmarshal([]byte(body), &msg) != nil || !strings.Contains(msg.Error, "too many") {
		t.Errorf("%s = %d Retry-After %q %s, want 429 with Retry-After and a reason", what, code, h.Get("Retry-After"), body)
	}
}

// Decisions on approvals are rate-limited per credential: a burst of 20,
// then 429 with Retry-After, while other credentials are unaffected.
func TestRateLimitDecisions(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	web.StopRateLimitClock(e.srv) // 21 requests, however slow, find the bucket empty
	id := e.execSession("anthropic", nil)
	scoped := e.scopedToken(id)
	deny := `{"decision":"deny"}`
	for i := range 20 {
		if code, _, body := e.call("POST", "/approvals/a-none", testToken, deny); code != http.StatusNotFound {
			t.Fatalf("decision %d = %d %s, want 404 (an unknown approval)", i, code, body)
		}
	}
	code, h, body := e.call("POST", "/approvals/a-none", testToken, deny)
	check429(t, "decision 21", code, h, body)
	// tool_permission messages count against the same bucket.
	perm := `{"messages":[{"role":"tool_permission","toolCallId":"c1","granted":true}]}`
	code, h, body = e.call("POST", "/session/"+id, testToken, perm)
	check429(t, "tool_permission after the burst", code, h, body)
	// Reads and other writes are not limited.
	if code, _, body := e.call("GET", "/approvals", testToken, ""); code != http.StatusOK {
		t.Errorf("GET /approvals = %d %s", code, body)
	}
	// Another credential has its own bucket: a permission too many in one
	// request is refused, a few are not.
	many := `{"messages":[` + strings.Repeat(`{"role":"tool_permission","toolCallId":"c1","granted":true},`, 20) +
		`{"role":"tool_permission","toolCallId":"c1","granted":true}]}`
	code, h, body = e.call("POST", "/session/"+id, scoped, many)
	check429(t, "21 permissions at once", code, h, body)
	code, _, body = e.call("POST", "/session/"+id, scoped, perm)
	if code == http.StatusTooManyRequests || code < 400 {
		t.Errorf("one permission (scoped token) = %d %s, want a 4xx other than 429 (no such call)", code, body)
	}
	// The body read for counting reaches the handler intact.
	code, _, body = e.call("POST", "/session/"+id, scoped, `{"messages":[{"role":"tool_permission"}], "x": 1}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "unknown field") {
		t.Errorf("bad body = %d %s, want 400 about the unknown field", code, body)
	}
}

// Failed logins are rate-limited per remote address; the right token is
// never refused for them (TestLoginFloodDoesNotLockOut has the flood).
func TestRateLimitLogin(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	web.StopRateLimitClock(e.srv)
	for i := range 10 {
		resp, err := http.PostForm(e.http.URL+"/login", url.Values{"token": {"guess" + strconv.Itoa(i)}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("login %d = %d, want 401", i, resp.StatusCode)
		}
	}
	// The next wrong token waits, and X-Forwarded-For does not help.
	login := func(token string) (*http.Response, string) {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+"/login", strings.NewReader(`{"token":"`+token+`"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		_, _ = io.Copy(&b, resp.Body)
		resp.Body.Close()
		return resp, b.String()
	}
	resp, body := login("guess-11")
	check429(t, "wrong login 11", resp.StatusCode, resp.Header, body)
	if len(resp.Cookies()) != 0 {
		t.Errorf("a rate-limited login set cookies")
	}
	// The right token gets in all the same.
	if resp, body := login(testToken); resp.StatusCode != http.StatusOK || len(resp.Cookies()) == 0 {
		t.Errorf("login with the right token after the limit = %d %s (cookies %v), want 200 with cookies", resp.StatusCode, body, resp.Cookies())
	}
}
