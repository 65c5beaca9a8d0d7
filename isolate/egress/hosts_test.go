package egress

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/url"
	"testing"

	"github.com/spotter-harness/spotter/actions"
)

// hostCases is one table of host patterns and URLs, run through both users
// of actions.HostPattern: actions.Policy (navigate) and this proxy.
var hostCases = []struct {
	name    string
	pattern string
	url     string // "" for a pattern that must not parse
	want    bool
}{
	// Whitespace around an entry is ignored; inside, it is an error.
	{"spaces around", " example.com ", "http://example.com/", true},
	{"tab and newline around", "\texample.com\n", "https://example.com/", true},
	{"space inside", "exa mple.com", "", false},
	{"only spaces", "   ", "", false},
	{"empty", "", "", false},
	// Case.
	{"upper-case entry", "EXAMPLE.com", "http://example.COM/", true},
	{"upper-case wildcard", "*.Example.COM", "https://A.example.com/", true},
	// Trailing dots.
	{"dot in entry", "example.com.", "http://example.com/", true},
	{"dot in URL", "example.com", "http://example.com./", true},
	{"dot after subdomain", "*.example.com", "http://a.example.com./", true},
	{"two dots in entry", "example.com..", "", false},
	{"two dots in URL", "example.com", "http://example.com../", false},
	{"empty label", "a..example.com", "", false},
	// Wildcards.
	{"wildcard subdomain", "*.example.com", "http://a.b.example.com/", true},
	{"wildcard not apex", "*.example.com", "http://example.com/", false},
	{"wildcard suffix trick", "*.example.com", "http://evilexample.com/", false},
	{"star any port", "*", "http://anything.test:8080/", true},
	{"two stars", "*.*.example.com", "", false},
	{"star inside", "a.*.com", "", false},
	{"wildcard IP", "*.10.0.0.1", "", false},
	{"star with port", "*:8080", "", false},
	// IDNA.
	{"unicode entry", "Bücher.example", "https://xn--bcher-kva.example/", true},
	{"unicode URL", "xn--bcher-kva.example", "https://bücher.example/", true},
	// IPv4 literals.
	{"IPv4", "127.0.0.1", "http://127.0.0.1/", true},
	{"IPv4 port", "127.0.0.1:8080", "http://127.0.0.1:8080/", true},
	{"IPv4 port, default port", "127.0.0.1:8080", "http://127.0.0.1/", false},
	{"IPv4 trailing dot", "127.0.0.1", "http://127.0.0.1./", true},
	{"IPv4-mapped IPv6", "127.0.0.1", "http://[::ffff:127.0.0.1]/", true},
	{"IPv4 other address", "127.0.0.1", "http://127.0.0.2/", false},
	// IPv6 literals, with and without brackets.
	{"IPv6 bare", "::1", "http://[::1]/", true},
	{"IPv6 brackets", "[::1]", "http://[::1]/", true},
	{"IPv6 port", "[::1]:3000", "http://[::1]:3000/", true},
	{"IPv6 port, default port", "[::1]:3000", "http://[::1]/", false},
	{"IPv6 canonical form", "[2001:DB8::0001]", "https://[2001:db8::1]/", true},
	{"IPv6 bare with a port is an address", "::1:3000", "http://[::1]:3000/", false},
	{"brackets around a name", "[example.com]", "", false},
	{"brackets around IPv4", "[127.0.0.1]", "", false},
	{"unclosed bracket", "[::1", "", false},
	// Zones.
	{"zone in entry", "fe80::1%eth0", "", false},
	{"zone in bracketed entry", "[fe80::1%eth0]:80", "", false},
	{"zone in URL", "fe80::1", "http://[fe80::1%25eth0]/", false},
	{"zone in URL, star", "*", "http://[fe80::1%25eth0]/", false},
	// Ports: an entry without one admits the scheme's default.
	{"http default", "example.com", "http://example.com/", true},
	{"http 80", "example.com", "http://example.com:80/", true},
	{"https default", "example.com", "https://example.com/", true},
	{"https 443", "example.com", "https://example.com:443/", true},
	{"http on 443", "example.com", "http://example.com:443/", false},
	{"https on 80", "example.com", "https://example.com:80/", false},
	{"other port", "example.com", "https://example.com:8443/", false},
	{"port entry", "example.com:443", "http://example.com:443/", true},
	{"port entry, default", "localhost:8080", "http://localhost/", false},
	{"leading zeros", "example.com:08080", "http://example.com:8080/", true},
	{"port 0", "example.com:0", "", false},
	{"port too large", "example.com:65536", "", false},
	{"port name", "example.com:http", "", false},
	{"port sign", "example.com:+80", "", false},
	{"port empty", "example.com:", "", false},
	// Not a host.
	{"scheme", "http://example.com", "", false},
	{"path", "example.com/a", "", false},
	{"userinfo", "user@example.com", "", false},
	{"percent", "exa%6Dple.com", "", false},
}

// TestHostPatternsAgree runs hostCases through actions.Policy and through
// the proxy: both must parse the same entries and admit the same URLs.
func TestHostPatternsAgree(t *testing.T) {
	for _, tt := range hostCases {
		t.Run(tt.name, func(t *testing.T) {
			_, aerr := actions.ParsePolicy(fmt.Appendf(nil, "hosts: [%q]\n", tt.pattern))
			eerr := Policy{Allow: []string{tt.pattern}}.Validate()
			if (aerr == nil) != (eerr == nil) {
				t.Fatalf("pattern %q: actions.ParsePolicy = %v, egress Validate = %v; want both nil or both errors", tt.pattern, aerr, eerr)
			}
			if tt.url == "" {
				if aerr == nil {
					t.Errorf("ParsePolicy(hosts: [%q]) = nil, want an error", tt.pattern)
				}
				return
			}
			if aerr != nil {
				t.Fatalf("ParsePolicy(hosts: [%q]) = %v, want nil", tt.pattern, aerr)
			}
			pol := actions.Policy{Allow: []actions.Kind{actions.Navigate}, Hosts: []string{tt.pattern}}
			err := pol.Check(actions.Action{Kind: actions.Navigate, URL: tt.url})
			if got := err == nil; got != tt.want {
				t.Errorf("actions: Check(navigate %q) with hosts [%q] = %v, want allowed %v", tt.url, tt.pattern, err, tt.want)
			}
			p, err := New(Config{Policy: Policy{Allow: []string{tt.pattern}}, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatalf("New(allow %q) = %v", tt.pattern, err)
			}
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			port := cmp.Or(u.Port(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
			d, _, got := p.decide("GET", u.Scheme, u.Hostname(), port)
			if got != tt.want {
				t.Errorf("egress: decide(%q, %q, %q) with allow [%q] = %+v, want allowed %v", u.Scheme, u.Hostname(), port, tt.pattern, d, tt.want)
			}
		})
	}
}

// TestProxyDefaultPorts checks which ports an entry without one admits as
// the proxy sees requests: port 80 for plain HTTP, 80 or 443 for CONNECT.
func TestProxyDefaultPorts(t *testing.T) {
	p, err := New(Config{Policy: Policy{Allow: []string{"example.com"}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		method, scheme, port string
		want                 bool
	}{
		{"GET", "http", "80", true},
		{"GET", "http", "443", false},
		{"GET", "http", "8080", false},
		{"CONNECT", "", "443", true},
		{"CONNECT", "", "80", true},
		{"CONNECT", "", "8443", false},
	}
	for _, tt := range tests {
		if d, _, got := p.decide(tt.method, tt.scheme, "example.com", tt.port); got != tt.want {
			t.Errorf("decide(%s, %q, example.com, %s) = %+v, want allowed %v", tt.method, tt.scheme, tt.port, d, tt.want)
		}
	}
}
