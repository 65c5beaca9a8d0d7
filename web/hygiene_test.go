package web_test

// HTTP hygiene (issue 15): connections that send nothing, half a request,
// or nothing after a request are closed; event streams and long polls
// outlive the write timeout; every error answer is JSON; a flood of wrong
// tokens at /login does not keep the right one out. Every test talks to
// the server's own Serve on a loopback listener, with a bounded number of
// connections, each with a deadline of its own.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/internal/syncbuf"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/web"
)

// serveHTTP returns a server under test that Serve serves, with bounds h,
// on a loopback listener of its own; e's requests go there.
func serveHTTP(t *testing.T, h web.HTTPConfig, o envOpts) *env {
	t.Helper()
	e := newEnv(t, o)
	e.stop()
	e.cfg.HTTP = h
	e.start()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	srv := e.srv
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Serve: %v", err)
		}
	})
	e.base = "http://" + ln.Addr().String()
	return e
}

// waitClosed reads c until the server closes it, and fails if that takes
// longer than bound. It returns what the server sent.
func waitClosed(c net.Conn, r io.Reader, bound time.Duration) ([]byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(bound))
	b, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return b, fmt.Errorf("still open after %v", bound)
	}
	return b, nil
}

// Connections that send nothing, half their headers, nothing after a
// request, or half a body, are closed by the server within its bounds,
// whatever the client does.
func TestSlowAndIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	const (
		perKind = 16
		limit   = 300 * time.Millisecond
		bound   = 10 * time.Second // far beyond limit: reaching it is a failure
	)
	e := serveHTTP(t, web.HTTPConfig{ReadHeaderTimeout: limit, IdleTimeout: limit, ReadTimeout: limit}, envOpts{fake: true})
	addr := strings.TrimPrefix(e.base, "http://")
	kinds := []struct {
		name string
		// do talks on the connection and returns the reader to drain.
		do func(c net.Conn) (io.Reader, error)
		// check looks at what the server sent before it closed.
		check func(got []byte) error
	}{
		{"silent", func(c net.Conn) (io.Reader, error) { return c, nil }, nil},
		{"half-sent headers", func(c net.Conn) (io.Reader, error) {
			_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: spotter\r\nX-Slow: ")
			return c, err
		}, nil},
		{"idle after a request", func(c net.Conn) (io.Reader, error) {
			if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: spotter\r\n\r\n"); err != nil {
				return nil, err
			}
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return nil, err
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close {
				return nil, fmt.Errorf("GET /healthz = %d (close %v), want 200 kept alive", resp.StatusCode, resp.Close)
			}
			return br, err
		}, func(got []byte) error {
			if len(got) != 0 {
				return fmt.Errorf("the server sent %q after the answer", got)
			}
			return nil
		}},
		{"half-sent body", func(c net.Conn) (io.Reader, error) {
			_, err := io.WriteString(c, "PUT /session HTTP/1.1\r\nHost: spotter\r\nAuthorization: Bearer "+testToken+
				"\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"messages\":[")
			return c, err
		}, func(got []byte) error {
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(got))), nil)
			if err != nil {
				return fmt.Errorf("answer %q: %v", got, err)
			}
			b, _ := io.ReadAll(resp.Body)
			var msg struct{ Error string }
			if resp.StatusCode != http.StatusRequestTimeout || json.Unmarshal(b, &msg) != nil || !strings.Contains(msg.Error, "did not arrive") {
				return fmt.Errorf("answer = %d %s, want 408 with a JSON reason", resp.StatusCode, b)
			}
			return nil
		}},
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(kinds)*perKind)
	t0 := time.Now()
	for _, k := range kinds {
		for i := range perKind {
			wg.Go(func() {
				c, err := net.DialTimeout("tcp", addr, bound)
				if err != nil {
					errs <- fmt.Errorf("%s %d: dial: %v", k.name, i, err)
					return
				}
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(bound))
				r, err := k.do(c)
				if err != nil {
					errs <- fmt.Errorf("%s %d: %v", k.name, i, err)
					return
				}
				got, err := waitClosed(c, r, bound)
				if err == nil && k.check != nil {
					err = k.check(got)
				}
				if err != nil {
					errs <- fmt.Errorf("%s connection %d: %v", k.name, i, err)
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d connections closed by the server in %v (limits %v)", len(kinds)*perKind, time.Since(t0).Round(time.Millisecond), limit)
	// The server still answers.
	var ok struct{ OK bool }
	e.getJSON("/healthz", &ok)
}

// An event stream and a long poll last longer than the write timeout,
// which bounds each write, not the answer, and than the read timeout,
// which ends with the request's body.
func TestStreamsOutliveTheWriteTimeout(t *testing.T) {
	t.Parallel()
	const wt = 100 * time.Millisecond
	e := serveHTTP(t, web.HTTPConfig{WriteTimeout: wt, ReadTimeout: wt}, envOpts{fake: true})
	id := e.execSession("anthropic", map[string]any{"supervise": "all"})

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/session/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	opened := time.Now()
	events := newSSEReader(resp.Body)
	next := func(typ string) sseEvent {
		t.Helper()
		for {
			ev, err := events.next()
			if err != nil {
				t.Fatalf("event stream after %v: %v, want it open", time.Since(opened).Round(time.Millisecond), err)
			}
			if ev.Type == typ {
				return ev
			}
		}
	}

	// A call that waits for a human: its long poll waits with it.
	type answer struct {
		code int
		body string
		err  error
	}
	polled := make(chan answer, 1)
	go func() {
		call := `{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"left_click","coordinate":[10,20]}}`
		req, _ := http.NewRequestWithContext(ctx, "POST", e.base+"/executor/sessions/"+id+"/call?wait=60s", strings.NewReader(call))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			polled <- answer{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		polled <- answer{code: resp.StatusCode, body: string(b)}
	}()
	approval := next("permission_request").field("approvalId")

	// Events keep coming through the stream for many write timeouts.
	var n int
	for n = 0; time.Since(opened) < 5*wt; n++ {
		if n == 3000 {
			t.Fatalf("3000 takeovers took less than %v", 5*wt)
		}
		r := e.request("POST", "/session/"+id+"/takeover", map[string]any{"active": n%2 == 0})
		r.Body.Close()
		if r.StatusCode != http.StatusOK {
			t.Fatalf("takeover %d = %d", n, r.StatusCode)
		}
		next("takeover")
	}
	if n%2 == 1 {
		r := e.request("POST", "/session/"+id+"/takeover", map[string]any{"active": false})
		r.Body.Close()
		next("takeover")
	}
	t.Logf("%d events over %v on one stream (write timeout %v)", n, time.Since(opened).Round(time.Millisecond), wt)

	r := e.request("POST", "/approvals/"+approval, map[string]any{"decision": "approve"})
	r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("approve = %d", r.StatusCode)
	}
	a := <-polled
	if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.body, `"status":"done"`) {
		t.Fatalf("long poll after %v = %d %s %v, want 200 done", time.Since(opened).Round(time.Millisecond), a.code, a.body, a.err)
	}
	next("tool_result")
}

// Every error answer is JSON {"error": "..."}: gin's 404 and 405, a
// missing screenshot, a bad Range on a screenshot, a body too large,
// errors of the MCP transport, and the rest; none shows a server path.
func TestErrorsAreJSON(t *testing.T) {
	t.Parallel()
	e := serveHTTP(t, web.HTTPConfig{}, envOpts{fake: true})
	id := e.execSession("anthropic", map[string]any{"supervise": "none"})
	code, a := e.execPost("/executor/sessions/"+id+"/call?wait=30s",
		json.RawMessage(`{"type":"tool_use","id":"toolu_1","name":"computer","input":{"action":"screenshot"}}`))
	if code != http.StatusOK || a.Status != "done" {
		t.Fatalf("screenshot call = %d %+v", code, a)
	}
	// The screenshot the call's result shows, as the session's events name it.
	var shot string
	resp := e.request("GET", "/session/"+id+"/events", nil)
	events := newSSEReader(resp.Body)
	for shot == "" {
		ev, err := events.next()
		if err != nil {
			t.Fatalf("events: %v, want a tool_result", err)
		}
		if ev.Type == "tool_result" {
			var r struct{ Content []struct{ Type, URL string } }
			_ = json.Unmarshal(ev.Data, &r)
			for _, c := range r.Content {
				if c.Type == "image" {
					shot = c.URL
				}
			}
			if shot == "" {
				t.Fatalf("tool_result %s has no image", ev.Data)
			}
		}
	}
	resp.Body.Close()
	if r := e.request("GET", shot, nil); r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "image/png" {
		t.Errorf("GET %s = %d %s, want 200 image/png", shot, r.StatusCode, r.Header.Get("Content-Type"))
	} else {
		r.Body.Close()
	}
	missing := strings.Replace(shot, "/shots/f", "/shots/nope-f", 1)
	big := `{"title":"` + strings.Repeat("x", web.MaxBody) + `"}`
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	tests := []struct {
		name, method, path, body string
		header                   map[string]string
		want                     int
	}{
		{"unknown path", "GET", "/nope", "", nil, 404},
		{"unknown path with a token", "POST", "/nope/deeper", "", auth, 404},
		{"HEAD of an unknown path", "HEAD", "/nope", "", nil, 404},
		{"method not allowed", "DELETE", "/sessions", "", auth, 405},
		{"method not allowed on a session", "PATCH", "/session/" + id, "{}", auth, 405},
		{"missing screenshot", "GET", missing, "", auth, 404},
		{"screenshot name without shots", "GET", "/session/" + id + "/shots/t1/events.jsonl", "", auth, 404},
		{"screenshot of an unknown session", "GET", "/session/s-nope/shots/t1/shots/f0001.png", "", auth, 404},
		{"screenshot out of the directory", "GET", "/session/" + id + "/shots/t1/shots/..%2f..%2f..%2fspotter.db", "", auth, 404},
		{"screenshot range past its end", "GET", shot, "", map[string]string{"Authorization": "Bearer " + testToken, "Range": "bytes=99999999-"}, 416},
		{"unknown session", "GET", "/session/s-nope", "", auth, 404},
		{"no credentials", "GET", "/sessions", "", nil, 401},
		{"body too large", "PUT", "/session", big, auth, 413},
		{"not JSON", "PUT", "/session", "{", auth, 400},
		{"bad provider key", "PUT", "/session", "{}", map[string]string{"Authorization": "Bearer " + testToken, web.HeaderProviderKey: "two words"}, 400},
		{"MCP without a session", "GET", "/mcp", "", auth, 400},
		{"MCP with an unknown session", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			map[string]string{"Authorization": "Bearer " + testToken, "Mcp-Session-Id": "nope", "Accept": "application/json, text/event-stream"}, 404},
		{"bad login", "POST", "/login", "token=nope", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tt.method, e.base+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			if tt.body != "" && req.Header.Get("Content-Type") == "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
			if resp.StatusCode != tt.want || mt != "application/json" {
				t.Errorf("%s %s = %d %q %s, want %d application/json", tt.method, tt.path, resp.StatusCode, mt, b, tt.want)
			}
			if tt.method == "HEAD" {
				return
			}
			var msg struct{ Error string }
			if err := json.Unmarshal(b, &msg); err != nil || msg.Error == "" {
				t.Errorf("%s %s = %s, want {\"error\": reason}", tt.method, tt.path, b)
			}
			if strings.Contains(string(b), e.data) || strings.Contains(string(b), os.TempDir()) {
				t.Errorf("%s %s = %s: shows a server path", tt.method, tt.path, b)
			}
		})
	}
}

// A flood of wrong tokens at /login from the operator's own address gets
// 429s, fills no audit log, and does not keep the right token out, before,
// during or after it.
func TestLoginFloodDoesNotLockOut(t *testing.T) {
	t.Parallel()
	e := serveHTTP(t, web.HTTPConfig{}, envOpts{fake: true})
	login := func(tok string) (int, bool) {
		resp, err := http.PostForm(e.base+"/login", url.Values{"token": {tok}})
		if err != nil {
			t.Error(err)
			return 0, false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, len(resp.Cookies()) > 0
	}
	const flood, workers = 300, 8
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	work := make(chan int)
	for range workers {
		wg.Go(func() {
			for i := range work {
				code, _ := login(fmt.Sprintf("guess-%d", i))
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		})
	}
	for i := range flood {
		work <- i
		if i%50 == 25 { // the operator logs in while the flood goes on
			if code, cookies := login(testToken); code != http.StatusOK || !cookies {
				t.Errorf("right token during the flood (after %d wrong ones) = %d, cookies %v, want 200 with cookies", i, code, cookies)
			}
		}
	}
	close(work)
	wg.Wait()
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusOK] != 0 || codes[http.StatusTooManyRequests]+codes[http.StatusUnauthorized] != flood {
		t.Errorf("wrong tokens answered %v, want only 401 and 429, and some 429", codes)
	}
	if code, cookies := login(testToken); code != http.StatusOK || !cookies {
		t.Errorf("right token after the flood = %d, cookies %v, want 200 with cookies", code, cookies)
	}
	var audit struct{ Audit []struct{ Action string } }
	e.getJSON("/audit", &audit)
	failed := 0
	for _, a := range audit.Audit {
		if a.Action == "login_failed" {
			failed++
		}
	}
	if failed != codes[http.StatusUnauthorized] || failed > 20 {
		t.Errorf("audit has %d failed logins for %d answered 401, want one each, and the 429s left out", failed, codes[http.StatusUnauthorized])
	}
}

// A handler that panics is answered 500 {"error": "internal error"}, with
// nothing of the panic, and the server goes on.
func TestPanicIsAnsweredJSON(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{fake: true})
	e.stop()
	logs := &syncbuf.Buffer{}
	e.cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	e.cfg.NewModel = func(context.Context, session.ModelSpec, screen.Size, []harness.ToolSpec) (harness.Model, error) {
		panic("model builder blew up at /srv/secret/path")
	}
	e.start()
	resp := e.request("PUT", "/session", spec("hello", nil))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode != http.StatusInternalServerError || mt != "application/json" || string(b) != `{"error":"internal error"}` {
		t.Errorf("PUT /session with a panicking model builder = %d %q %s, want 500 {\"error\":\"internal error\"}", resp.StatusCode, mt, b)
	}
	if !strings.Contains(logs.String(), "blew up") {
		t.Errorf("the panic was not logged: %s", logs.String())
	}
	var ok struct{ OK bool }
	e.getJSON("/healthz", &ok)
}
