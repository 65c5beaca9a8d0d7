package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/web"
)

// Every route refuses requests without credentials, with bad ones, and
// cross-site or cross-origin requests whatever their credentials.
func TestAccessControl(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	cookies := login(t, e)
	var auth, csrf string
	for _, c := range cookies {
		switch c.Name {
		case "spotter_auth":
			auth = c.Value
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
				t.Errorf("auth cookie %+v: want HttpOnly and SameSite=Strict", c)
			}
		case "spotter_csrf":
			csrf = c.Value
		}
	}
	if auth == "" || csrf == "" {
		t.Fatalf("POST /login set cookies %v, want spotter_auth and spotter_csrf", cookies)
	}
	type check struct {
		name   string
		header map[string]string
		want   int
		unsafe bool // only for state-changing methods
	}
	checks := []check{
		{"no credentials", nil, http.StatusUnauthorized, false},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized, false},
		{"basic auth", map[string]string{"Authorization": "Basic " + testToken}, http.StatusUnauthorized, false},
		{"wrong cookie", map[string]string{"Cookie": "spotter_auth=forged"}, http.StatusUnauthorized, false},
		{"cross-site with token", map[string]string{"Authorization": "Bearer " + testToken, "Sec-Fetch-Site": "cross-site"},
			http.StatusForbidden, false},
		{"cross-site with cookie", map[string]string{"Cookie": "spotter_auth=" + auth + "; spotter_csrf=" + csrf,
			"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, false},
		{"other origin with token", map[string]string{"Authorization": "Bearer " + testToken, "Origin": "http://evil.example"},
			http.StatusForbidden, true},
		{"same-site other origin", map[string]string{"Authorization": "Bearer " + testToken, "Sec-Fetch-Site": "same-site"},
			http.StatusForbidden, true},
		{"cookie without CSRF token", map[string]string{"Cookie": "spotter_auth=" + auth + "; spotter_csrf=" + csrf},
			http.StatusForbidden, true},
		{"cookie with a wrong CSRF token", map[string]string{"Cookie": "spotter_auth=" + auth + "; spotter_csrf=x", "X-CSRF-Token": "x"},
			http.StatusForbidden, true},
	}
	for _, r := range web.Routes {
		path := strings.NewReplacer(":id", "s0", ":callId", "c0", "*name", "t1/shots/f1.png").Replace(r.Path)
		unsafe := r.Method != "GET"
		for _, c := range checks {
			if c.unsafe && !unsafe {
				continue
			}
			t.Run(r.Method+" "+r.Path+"/"+c.name, func(t *testing.T) {
				req, err := http.NewRequestWithContext(t.Context(), r.Method, e.http.URL+path, strings.NewReader("{}"))
				if err != nil {
					t.Fatal(err)
				}
				for k, v := range c.header {
					req.Header.Set(k, v)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var body struct{ Error string }
				if resp.StatusCode != c.want || json.Unmarshal(b, &body) != nil || body.Error == "" {
					t.Errorf("%s %s (%s) = %d %s, want %d with a JSON error", r.Method, path, c.name, resp.StatusCode, b, c.want)
				}
			})
		}
	}
	// The same credentials pass: a cookie with its CSRF token may change
	// state (here: a 404 for an unknown session, not a 401 or 403).
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+"/session/s0/stop", nil)
	req.Header.Set("Cookie", "spotter_auth="+auth+"; spotter_csrf="+csrf)
	req.Header.Set("X-CSRF-Token", csrf)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", e.http.URL)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("same-origin cookie request = %d, want 404", resp.StatusCode)
	}
}

func login(t *testing.T, e *env) []*http.Cookie {
	t.Helper()
	resp, err := http.PostForm(e.http.URL+"/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("login with a wrong token = %d, want 401", resp.StatusCode)
	}
	resp, err = http.PostForm(e.http.URL+"/login", url.Values{"token": {testToken}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login = %d", resp.StatusCode)
	}
	return resp.Cookies()
}

// Login from another site is refused, and the public parts answer
// without credentials.
func TestPublicRoutes(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	req, _ := http.NewRequestWithContext(t.Context(), "POST", e.http.URL+"/login", strings.NewReader("token="+testToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("cross-origin login = %d with %d cookies, want 403 and none", resp.StatusCode, len(resp.Cookies()))
	}
	for _, p := range []string{"/healthz", "/", "/login"} {
		resp, err := http.Get(e.http.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", p, resp.StatusCode)
		}
	}
	resp, err = http.Get(e.http.URL + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here = %d, want 404", resp.StatusCode)
	}
}

// Bodies over the limit are refused with 413.
func TestBodyLimit(t *testing.T) {
	e := newEnv(t, envOpts{fake: true})
	big := map[string]any{"title": strings.Repeat("x", web.MaxBody+10)}
	resp := e.request("PUT", "/session", big)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("PUT /session with a big body = %d, want 413", resp.StatusCode)
	}
	resp = e.request("PUT", "/session", map[string]any{"bogus": 1})
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("PUT /session with an unknown field = %d, want 400", resp.StatusCode)
	}
}
