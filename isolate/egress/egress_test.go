package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name       string
		pol        Policy
		host, port string
		want       verdict
	}{
		{"zero policy", Policy{}, "example.com", "443", verdict{reason: "example.com is not in this session's allowlist"}},
		{"exact https", Policy{Allow: []string{"example.com"}}, "example.com", "443", verdict{allowed: true, exact: true, rule: "example.com"}},
		{"exact http", Policy{Allow: []string{"example.com"}}, "example.com", "80", verdict{allowed: true, exact: true, rule: "example.com"}},
		{"exact other port", Policy{Allow: []string{"example.com"}}, "example.com", "8443", verdict{reason: "example.com:8443 is not in this session's allowlist"}},
		{"port entry", Policy{Allow: []string{"localhost:8080"}}, "localhost", "8080", verdict{allowed: true, exact: true, rule: "localhost:8080"}},
		{"port entry, default port", Policy{Allow: []string{"localhost:8080"}}, "localhost", "80", verdict{reason: "localhost is not in this session's allowlist"}},
		{"wildcard subdomain", Policy{Allow: []string{"*.example.com"}}, "a.b.example.com", "443", verdict{allowed: true, rule: "*.example.com"}},
		{"wildcard not apex", Policy{Allow: []string{"*.example.com"}}, "example.com", "443", verdict{reason: "example.com is not in this session's allowlist"}},
		{"wildcard suffix trick", Policy{Allow: []string{"*.example.com"}}, "evilexample.com", "443", verdict{reason: "evilexample.com is not in this session's allowlist"}},
		{"star", Policy{Allow: []string{"*"}}, "anything.test", "22", verdict{allowed: true, rule: "*"}},
		{"exact wins over star", Policy{Allow: []string{"*", "127.0.0.1:9"}}, "127.0.0.1", "9", verdict{allowed: true, exact: true, rule: "127.0.0.1:9"}},
		{"deny wins", Policy{Allow: []string{"*"}, Deny: []string{"evil.test"}}, "evil.test", "8080", verdict{rule: "evil.test", reason: "evil.test:8080 is in this session's denylist (evil.test)"}},
		{"deny wildcard", Policy{Allow: []string{"*.example.com"}, Deny: []string{"*.ads.example.com"}}, "x.ads.example.com", "443", verdict{rule: "*.ads.example.com", reason: "x.ads.example.com is in this session's denylist (*.ads.example.com)"}},
		{"deny other port", Policy{Allow: []string{"*"}, Deny: []string{"evil.test:25"}}, "evil.test", "443", verdict{allowed: true, rule: "*"}},
		{"ipv6", Policy{Allow: []string{"[::1]:3000"}}, "::1", "3000", verdict{allowed: true, exact: true, rule: "[::1]:3000"}},
		{"ipv6 refused", Policy{}, "::1", "443", verdict{reason: "[::1] is not in this session's allowlist"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.pol.compile()
			if err != nil {
				t.Fatalf("compile(%+v) = %v", tt.pol, err)
			}
			got := r.decide("", tt.host, tt.port)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("decide(%q, %q) with %+v (-want +got):\n%s", tt.host, tt.port, tt.pol, diff)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		pol     Policy
		wantErr string
	}{
		{Policy{Allow: []string{"example.com", "*.example.com", "*", "localhost:8080", "[::1]", "bücher.example"}}, ""},
		{Policy{Allow: []string{"http://example.com"}}, `allow: host pattern "http://example.com"`},
		{Policy{Allow: []string{"*.1.2.3.4"}}, "an IP address has no subdomains"},
		{Policy{Allow: []string{"example.com:0"}}, `bad port "0"`},
		{Policy{Allow: []string{"example.com:http"}}, `bad port "http"`},
		{Policy{Deny: []string{""}}, "deny: host pattern"},
		{Policy{Deny: []string{"a b"}}, "deny: host pattern"},
	}
	for _, tt := range tests {
		err := tt.pol.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("Validate(%+v) = %v, want nil", tt.pol, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("Validate(%+v) = %v, want an error containing %q", tt.pol, err, tt.wantErr)
		}
	}
}

// harness runs a proxy on loopback and records its decisions.
type harness struct {
	proxy *url.URL
	mu    sync.Mutex
	got   []Decision
}

func startProxy(t *testing.T, pol Policy) *harness {
	t.Helper()
	h := &harness{}
	p, err := New(Config{
		Policy: pol,
		OnDecision: func(d Decision) {
			h.mu.Lock()
			h.got = append(h.got, d)
			h.mu.Unlock()
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve() = %v, want nil after cancel", err)
		}
	})
	h.proxy = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	return h
}

func (h *harness) decisions() []Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Decision(nil), h.got...)
}

func (h *harness) client(tlsCfg *tls.Config) *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(h.proxy), TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
}

var ignoreTime = cmpopts.IgnoreFields(Decision{}, "Time")

func TestProxyHTTP(t *testing.T) {
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		if r.Header.Get("Proxy-Connection") != "" || r.Header.Get("X-Forwarded-For") != "" {
			http.Error(w, "proxy headers leaked", 500)
			return
		}
		fmt.Fprint(w, "hello from ", r.URL.Path)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	tests := []struct {
		name     string
		pol      Policy
		url      string
		wantCode int
		wantBody string
		want     Decision
	}{
		{
			name: "allowed exact address", pol: Policy{Allow: []string{"127.0.0.1:" + port}},
			url: "http://127.0.0.1:" + port + "/a", wantCode: 200, wantBody: "hello from /a",
			want: Decision{Method: "GET", Host: "127.0.0.1", Port: port, Allowed: true, Rule: "127.0.0.1:" + port},
		},
		{
			name: "allowed localhost", pol: Policy{Allow: []string{"localhost:" + port}},
			url: "http://localhost:" + port + "/b", wantCode: 200, wantBody: "hello from /b",
			want: Decision{Method: "GET", Host: "localhost", Port: port, Allowed: true, Rule: "localhost:" + port},
		},
		{
			name: "not in allowlist", pol: Policy{Allow: []string{"example.com"}},
			url: "http://127.0.0.1:" + port + "/c", wantCode: 403,
			wantBody: "spotter egress: 127.0.0.1:" + port + " is not in this session&#39;s allowlist",
			want:     Decision{Method: "GET", Host: "127.0.0.1", Port: port, Reason: "127.0.0.1:" + port + " is not in this session's allowlist"},
		},
		{
			name: "denied", pol: Policy{Allow: []string{"127.0.0.1:" + port}, Deny: []string{"127.0.0.1"}},
			url: "http://127.0.0.1:" + port + "/d", wantCode: 403, wantBody: "denylist",
			want: Decision{Method: "GET", Host: "127.0.0.1", Port: port, Rule: "127.0.0.1", Reason: "127.0.0.1:" + port + " is in this session's denylist (127.0.0.1)"},
		},
		{
			name: "star does not reach loopback", pol: Policy{Allow: []string{"*"}},
			url: "http://localhost:" + port + "/e", wantCode: 403, wantBody: "an internal address",
			want: Decision{Method: "GET", Host: "localhost", Port: port, Rule: "*", Reason: "localhost resolves to 127.0.0.1, an internal address, which only an exact allowlist entry reaches (not \"*\" or \"*.domain\")"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startProxy(t, tt.pol)
			resp, err := h.client(nil).Get(tt.url)
			if err != nil {
				t.Fatalf("GET %s via proxy: %v", tt.url, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.wantCode || !strings.Contains(string(body), tt.wantBody) {
				t.Errorf("GET %s via proxy = %d %q, want %d containing %q", tt.url, resp.StatusCode, body, tt.wantCode, tt.wantBody)
			}
			if diff := cmp.Diff([]Decision{tt.want}, h.decisions(), ignoreTime); diff != "" {
				t.Errorf("GET %s: decisions (-want +got):\n%s", tt.url, diff)
			}
			path := strings.TrimPrefix(tt.url, "http://")
			path = path[strings.Index(path, "/"):]
			if _, hit := hits.Load(path); hit != (tt.wantCode == 200) {
				t.Errorf("GET %s: server hit = %v, want %v", tt.url, hit, tt.wantCode == 200)
			}
		})
	}
}

func TestProxyConnect(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "secure hello")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tlsCfg := srv.Client().Transport.(*http.Transport).TLSClientConfig

	t.Run("allowed", func(t *testing.T) {
		h := startProxy(t, Policy{Allow: []string{"127.0.0.1:" + port}})
		resp, err := h.client(tlsCfg).Get(srv.URL)
		if err != nil {
			t.Fatalf("GET %s via proxy: %v", srv.URL, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "secure hello" {
			t.Errorf("GET %s via proxy = %q, want %q", srv.URL, body, "secure hello")
		}
		want := []Decision{{Method: "CONNECT", Host: "127.0.0.1", Port: port, Allowed: true, Rule: "127.0.0.1:" + port}}
		if diff := cmp.Diff(want, h.decisions(), ignoreTime); diff != "" {
			t.Errorf("decisions (-want +got):\n%s", diff)
		}
	})
	t.Run("refused", func(t *testing.T) {
		h := startProxy(t, Policy{Allow: []string{"example.com"}})
		_, err := h.client(tlsCfg).Get(srv.URL)
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("GET %s via proxy = %v, want a Forbidden CONNECT", srv.URL, err)
		}
		want := []Decision{{Method: "CONNECT", Host: "127.0.0.1", Port: port, Reason: "127.0.0.1:" + port + " is not in this session's allowlist"}}
		if diff := cmp.Diff(want, h.decisions(), ignoreTime); diff != "" {
			t.Errorf("decisions (-want +got):\n%s", diff)
		}
	})
}

func TestProxyRefusesNonProxyRequests(t *testing.T) {
	h := startProxy(t, Policy{Allow: []string{"*"}})
	resp, err := http.Get(h.proxy.String() + "/direct")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(body), "is not a proxy request") {
		t.Errorf("GET /direct on the proxy = %d %q, want 400 naming a non-proxy request", resp.StatusCode, body)
	}
}

func TestServeEndsTunnels(t *testing.T) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := New(Config{Policy: Policy{Allow: []string{echo.Addr().String()}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, ln) }()

	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %[1]s\r\n\r\n", echo.Addr())
	buf := make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))
	if _, err := io.ReadFull(c, buf); err != nil || !strings.HasPrefix(string(buf), "HTTP/1.1 200") {
		t.Fatalf("CONNECT answer = %q, %v; want 200", buf, err)
	}
	fmt.Fprint(c, "ping")
	if _, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("echo through tunnel = %q, %v; want ping", buf[:4], err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve() = %v, want nil", err)
	}
	if _, err := c.Read(buf); !errors.Is(err, io.EOF) {
		t.Errorf("read on tunnel after Serve returned = %v, want EOF", err)
	}
}

func FuzzDecide(f *testing.F) {
	f.Add("*.example.com", "evil.test", "a.example.com", "443")
	f.Add("localhost:8080", "", "LOCALHOST.", "8080")
	f.Add("[::1]:3000", "*", "::ffff:127.0.0.1", "3000")
	f.Add("bücher.example", "x", "xn--bcher-kva.example", "80")
	f.Fuzz(func(t *testing.T, allow, deny, host, port string) {
		p := Policy{Allow: []string{allow}, Deny: []string{deny}}
		r, err := p.compile()
		if err != nil {
			return
		}
		v := r.decide("", host, port)
		if v.allowed == (v.reason != "") {
			t.Errorf("decide(%q, %q) with %+v = %+v: allowed and reason disagree", host, port, p, v)
		}
		if v.allowed && deny != "" {
			if d, err := parsePattern(deny); err == nil && d.denies(host, port) {
				t.Errorf("decide(%q, %q) with %+v allowed a denied host", host, port, p)
			}
		}
	})
}
