package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/testca"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/web"
)

// serve's flags: --isolate defaults to auto, as run's does, and
// --allow-base-url takes http(s) URLs only, checked before anything starts.
func TestServeFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := serveCmd(t.Context(), []string{"-h"}, &out, &errOut); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("serve -h = %v, want flag.ErrHelp", err)
	}
	help := errOut.String()
	for _, want := range []string{"-isolate string", `(default "auto")`, "-allow-base-url", web.HeaderProviderKey} {
		if !strings.Contains(help, want) {
			t.Errorf("serve -h lacks %q:\n%s", want, help)
		}
	}
	for _, bad := range []string{"ftp://models.example", "https://user:pw@models.example", "models.example", "https://models.example/?k=v"} {
		errOut.Reset()
		err := serveCmd(t.Context(), []string{"--allow-base-url", bad, "--data", t.TempDir(), "--addr", "127.0.0.1:0"}, &out, &errOut)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "allow-base-url") ||
			!strings.HasSuffix(err.Error(), "see 'spotter serve -h'") || errOut.Len() > 0 {
			t.Errorf("serve --allow-base-url %q = %v (stderr %q), want exit 2 naming the flag in one line", bad, err, errOut.String())
		}
	}
}

// startServe runs serveCmd in this process until the test ends, and
// returns its base URL.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		err := serveCmd(ctx, append([]string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--isolate", "none"}, args...), pw, &stderr)
		pw.CloseWithError(io.EOF)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, stderr.String())
		}
	})
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "spotter: listening on "); ok {
				listening <- u
			}
		}
		close(listening)
	}()
	select {
	case u, ok := <-listening:
		if !ok {
			t.Fatalf("serve exited before listening")
		}
		return u
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not listen within 60s")
	}
	return ""
}

// `spotter serve` sends its ANTHROPIC_API_KEY to a base URL a session
// names only when --allow-base-url allows it; otherwise the session is
// refused with the reason and the endpoint receives nothing.
func TestServeAllowBaseURL(t *testing.T) {
	const key = "sk-ant-server-serve-test-0123456789"
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("ANTHROPIC_BASE_URL", "")
	t.Setenv("SPOTTER_TOKEN", "serve-test-token-0123456789")
	create := func(base, modelURL string) (int, string) {
		body, _ := json.Marshal(map[string]any{
			"messages": []map[string]any{{"role": "user", "content": "Say done."}},
			"model":    map[string]any{"provider": "anthropic", "name": "claude-sonnet-4-5", "base_url": modelURL},
			"display":  map[string]any{"width": 800, "height": 600},
		})
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", base+"/session", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer serve-test-token-0123456789")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	refused := anthropictest.NewServer(t)
	base := startServe(t)
	if code, body := create(base, refused.URL); code != http.StatusBadRequest || !strings.Contains(body, "--allow-base-url") {
		t.Errorf("PUT /session naming %s = %d %s, want 400 with the reason", refused.URL, code, body)
	}
	if n := len(refused.Requests()); n != 0 {
		t.Errorf("the endpoint that was not allowed received %d requests, want none", n)
	}

	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 runs the allowed session (a real Chromium)")
	}
	allowed := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Done.")}})
	base = startServe(t, "--allow-base-url", allowed.URL)
	if code, body := create(base, allowed.URL); code != http.StatusOK || !strings.Contains(body, "end_turn") {
		t.Fatalf("PUT /session naming the allowed %s = %d %s, want a turn to end_turn", allowed.URL, code, body)
	}
	reqs := allowed.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("X-Api-Key") != key {
		t.Errorf("the allowed endpoint received %d requests (key of the first %q), want 1 with the server's key", len(reqs), firstKey(reqs))
	}
}

func firstKey(reqs []anthropictest.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Header.Get("X-Api-Key")
}

// serve's deployment flags: the database from $SPOTTER_DATABASE_URL
// (its password never printed), and --advertise checked before anything
// starts: a base URL, with a shared token.
func TestServeClusterFlags(t *testing.T) {
	t.Setenv("SPOTTER_TOKEN", "")
	t.Setenv("SPOTTER_DATABASE_URL", "postgres://spotter:hunter2@/spotter?host="+t.TempDir()+"&connect_timeout=5")
	var out, errOut bytes.Buffer
	err := serveCmd(t.Context(), []string{"--data", t.TempDir(), "--addr", "127.0.0.1:0", "--isolate", "none"}, &out, &errOut)
	var ee exitError
	if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "postgres") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("serve with $SPOTTER_DATABASE_URL naming no server = %v, want exit 2 naming postgres, without the password", err)
	}
	t.Setenv("SPOTTER_DATABASE_URL", "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--advertise", "http://:8080", "--token", "tok-0123456789"}, "--advertise"},             // $(POD_IP) was empty
		{[]string{"--advertise", "10.0.0.1:8080", "--token", "tok-0123456789"}, "--advertise"},            // no scheme
		{[]string{"--advertise", "http://10.0.0.1:8080/x?y", "--token", "tok-0123456789"}, "--advertise"}, // not a base URL
		{[]string{"--advertise", "http://127.0.0.1:0"}, "token"},                                          // no shared token
		{[]string{"--advertise", "https://10.0.0.1:8080", "--token", "tok-0123456789"}, "--tls-cert"},     // https served in clear
		{[]string{"--tls-cert", "c.pem"}, "--tls-key"},
		{[]string{"--tls-cert", "nope.pem", "--tls-key", "nope.pem"}, "--tls-cert"}, // unreadable
		{[]string{"--advertise", "http://10.0.0.1:8080", "--peer-ca", "ca.pem", "--token", "tok-0123456789"}, "--peer-ca"},
		{[]string{"--retain", "forever"}, "--retain"},
		{[]string{"--retain", "30d,1GB,2GB"}, "--retain"},
	} {
		errOut.Reset()
		err := serveCmd(t.Context(), append([]string{"--data", t.TempDir(), "--addr", "127.0.0.1:0", "--isolate", "none"}, tt.args...), &out, &errOut)
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("serve %v = %v, want exit 2 naming %s", tt.args, err, tt.want)
		}
	}
}

// `spotter serve --browsers N`: bad values and containerd isolation are
// refused before anything starts; with --browsers 1, two executor
// sessions open at once on one Chromium, which the server launched, and
// each shows its start page.
func TestServeBrowsers(t *testing.T) {
	for _, args := range [][]string{{"--browsers", "-1"}, {"--browsers", "1", "--isolate", "containerd"}} {
		var out, errOut bytes.Buffer
		err := serveCmd(t.Context(), append(args, "--data", t.TempDir(), "--addr", "127.0.0.1:0"), &out, &errOut)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), "--browsers") {
			t.Errorf("serve %v = %v, want exit 2 naming --browsers", args, err)
		}
	}
	if os.Getenv("SPOTTER_INTEGRATION") != "1" {
		t.Skip("SPOTTER_INTEGRATION=1 runs the shared browser (a real Chromium)")
	}
	t.Setenv("SPOTTER_TOKEN", "serve-test-token-0123456789")
	page := isolatetest.NewPage(t, isolatetest.Blue)
	before := isolatetest.BrowserChildren(t)
	base := startServe(t, "--browsers", "1", "--drain-timeout", "1s")
	if n := isolatetest.NewBrowsers(t, before); n != 1 {
		t.Errorf("serve --browsers 1 runs %d browsers, want 1", n)
	}
	for i := range 2 {
		body := `{"provider":"anthropic","start_url":"` + page.URL + `/"}`
		req, _ := http.NewRequestWithContext(t.Context(), "POST", base+"/executor/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer serve-test-token-0123456789")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			ID         string
			Screenshot struct{ Data string }
		}
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || out.Screenshot.Data == "" {
			t.Fatalf("session %d: POST /executor/sessions = %d, %v", i, resp.StatusCode, err)
		}
		data, err := base64.StdEncoding.DecodeString(out.Screenshot.Data)
		if err != nil {
			t.Fatal(err)
		}
		if got := isolatetest.Centre(t, data); !isolatetest.Near(got, isolatetest.Blue) {
			t.Errorf("session %d shows %v, want its start page's %v", i, got, isolatetest.Blue)
		}
	}
	if n := isolatetest.NewBrowsers(t, before); n != 1 {
		t.Errorf("with two sessions open, serve --browsers 1 runs %d browsers, want 1", n)
	}
}

// A replica serves the certificate its files hold now: a renewal written
// in place (as cert-manager renews a mounted Secret) is served at the next
// handshake, and a pair that cannot be read keeps the last good one.
func TestServeCertRenewed(t *testing.T) {
	dir := t.TempDir()
	ca := testca.New(t)
	first := ca.WriteFiles(t, dir, "spotter-peer")
	crt, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	serveTLS, _, err := replicaTLS(crt, key, "", "", "https://127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Over loopback TCP, not net.Pipe: a pipe has no buffer, so the two
	// ends' close_notify alerts block each other until tls's 5 s deadline.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := func() []byte {
		t.Helper()
		go func() { // ends with the handshake, which the client below ends
			server, err := ln.Accept()
			if err != nil {
				return
			}
			s := tls.Server(server, serveTLS)
			_ = s.Handshake()
			s.Close()
		}()
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		c := tls.Client(client, &tls.Config{RootCAs: ca.Pool, ServerName: "spotter-peer"})
		defer c.Close()
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		return c.ConnectionState().PeerCertificates[0].Raw
	}
	if !bytes.Equal(served(), first.Certificate[0]) {
		t.Fatal("the replica does not serve its certificate")
	}
	renewed := ca.WriteFiles(t, dir, "spotter-peer")
	later := time.Now().Add(time.Minute) // a modification time the file system surely tells apart
	if err := os.Chtimes(crt, later, later); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served(), renewed.Certificate[0]) {
		t.Error("after a renewal the replica still serves the certificate it started with")
	}
	if err := os.WriteFile(key, []byte("half written"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(crt, later.Add(time.Minute), later.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served(), renewed.Certificate[0]) {
		t.Error("a pair that cannot be read replaced the last good certificate")
	}
}
