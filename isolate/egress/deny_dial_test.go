package egress

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// A Deny entry that is an IP address refuses a name that resolves to it,
// over plain HTTP and CONNECT alike: the check runs on the address dialed.
// (spotter serve denies its own public addresses to sessions' browsers so.)
func TestDenyAddressRefusesNamesOfIt(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	// localhost names the server exactly, so only the Deny entry can refuse it.
	h := startProxy(t, Policy{Allow: []string{"localhost:" + port}, Deny: []string{"127.0.0.1:" + port}})

	resp, err := h.client(nil).Get("http://localhost:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "denylist (127.0.0.1:"+port+")") {
		t.Errorf("GET http://localhost:%s/ via proxy = %d %q, want 403 naming the denylist entry", port, resp.StatusCode, body)
	}
	c, err := net.Dial("tcp", h.proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT localhost:"+port+" HTTP/1.1\r\nHost: localhost:"+port+"\r\n\r\n")
	line := make([]byte, 12)
	if _, err := io.ReadFull(c, line); err != nil || string(line) != "HTTP/1.1 403" {
		t.Errorf("CONNECT localhost:%s = %q %v, want 403", port, line, err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the denied server was reached %d times", n)
	}
	for _, d := range h.decisions() {
		if d.Allowed || !strings.Contains(d.Reason, "denylist") {
			t.Errorf("decision %+v, want a refusal naming the denylist", d)
		}
	}

	// Another port of the same address is not denied.
	r, _ := Policy{Deny: []string{"127.0.0.1:9", "[2001:db8::1]:443", "example.com"}}.compile()
	for _, tt := range []struct {
		ap   string
		want bool
	}{
		{"127.0.0.1:9", true}, {"127.0.0.1:10", false}, {"[2001:db8::1]:443", true}, {"[::ffff:127.0.0.1]:9", true},
	} {
		if _, got := r.deniesAddr(netip.MustParseAddrPort(tt.ap)); got != tt.want {
			t.Errorf("deniesAddr(%s) = %v, want %v", tt.ap, got, tt.want)
		}
	}
}
