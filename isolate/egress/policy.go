package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/spotter-harness/spotter/actions"
)

// Policy says which hosts a sandbox may reach. The zero Policy allows
// nothing.
//
// Entries are actions.HostPattern entries, parsed and matched by the same
// code as actions.Policy.Hosts, so one list can serve both: "example.com"
// (that host on the default port), "localhost:8080" (that port only),
// "*.example.com" (every subdomain on the default port, not example.com
// itself) or "*" (every host on every port). Names match without regard to
// surrounding whitespace, case, one trailing dot or IDNA form; an address
// with a zone is refused. The default port is 80 for a plain HTTP request
// and 80 or 443 for a CONNECT tunnel, whose scheme the proxy cannot see
// (HTTPS, or a WebSocket over ws or wss).
//
// An internal address (loopback, private, link-local, unspecified,
// multicast or carrier-grade NAT) is reached only through an exact Allow
// entry: a name or address written out, not "*" or "*.example.com". So "*"
// opens the public internet but not the host's own services, and a wildcard
// name that resolves to 127.0.0.1 is refused; "127.0.0.1:8080" or
// "localhost:8080" in Allow reaches an app under test on the host.
type Policy struct {
	// Allow lists the hosts the sandbox may reach.
	Allow []string `yaml:"allow,omitempty" json:"allow,omitempty"`
	// Deny lists hosts refused even when Allow matches. An entry without
	// a port denies every port. An IP address also refuses every name that
	// resolves to it (the check runs on the address dialed).
	Deny []string `yaml:"deny,omitempty" json:"deny,omitempty"`
}

// pattern is one parsed entry of a Policy.
type pattern struct{ actions.HostPattern }

// rules is a compiled Policy.
type rules struct {
	allow, deny []pattern
}

func (p Policy) compile() (rules, error) {
	var r rules
	for _, s := range p.Allow {
		pat, err := parsePattern(s)
		if err != nil {
			return rules{}, fmt.Errorf("allow: %w", err)
		}
		r.allow = append(r.allow, pat)
	}
	for _, s := range p.Deny {
		pat, err := parsePattern(s)
		if err != nil {
			return rules{}, fmt.Errorf("deny: %w", err)
		}
		r.deny = append(r.deny, pat)
	}
	return r, nil
}

// Validate reports the first entry of p that is not a host pattern.
func (p Policy) Validate() error {
	_, err := p.compile()
	return err
}

func parsePattern(s string) (pattern, error) {
	pat, err := actions.ParseHostPattern(s)
	return pattern{pat}, err
}

// denies reports whether pat, as a Deny entry, refuses host on port: an
// entry without a port refuses every port.
func (pat pattern) denies(host, port string) bool {
	if pat.Port() != "" && pat.Port() != port {
		return false
	}
	return pat.MatchHost(host)
}

// verdict is the policy's answer for one host and port.
type verdict struct {
	allowed bool
	exact   bool   // the Allow entry names the host itself, so internal addresses are fine
	rule    string // the entry that decided; "" when none matched
	reason  string // why it is refused
}

// decide applies the rules to a normalized host and a port, reached by
// scheme: "http" for a plain HTTP request, "" for a CONNECT tunnel, whose
// scheme the proxy cannot see (an Allow entry without a port admits port 80
// for the first, 80 or 443 for the second; see actions.HostPattern).
func (r rules) decide(scheme, host, port string) verdict {
	shown := hostPort(host, port)
	for _, pat := range r.deny {
		if pat.denies(host, port) {
			return verdict{rule: pat.String(), reason: fmt.Sprintf("%s is in this session's denylist (%s)", shown, pat)}
		}
	}
	var v verdict
	for _, pat := range r.allow {
		if !pat.Match(host, port, scheme) {
			continue
		}
		exact := pat.Exact()
		if !v.allowed || (exact && !v.exact) {
			v = verdict{allowed: true, exact: exact, rule: pat.String()}
		}
	}
	if !v.allowed {
		v.reason = fmt.Sprintf("%s is not in this session's allowlist", shown)
	}
	return v
}

// deniesAddr returns the Deny entry that names the address a connection
// is about to reach, by IP address: a name that resolves to a denied
// address is refused like the address itself.
func (r rules) deniesAddr(ap netip.AddrPort) (string, bool) {
	host, port := ap.Addr().Unmap().String(), strconv.Itoa(int(ap.Port()))
	for _, pat := range r.deny {
		if _, ok := pat.Addr(); ok && pat.denies(host, port) {
			return pat.String(), true
		}
	}
	return "", false
}

// hostPort shows host with its port, leaving out ports 80 and 443.
func hostPort(host, port string) string {
	if port == "80" || port == "443" || port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

// Internal reports whether a is an internal address (loopback, private,
// link-local, unspecified, multicast or carrier-grade NAT), which only an
// exact Allow entry reaches.
func Internal(a netip.Addr) bool { return internal(a) }

// internal reports whether a is an address only an exact Allow entry may
// reach.
func internal(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() ||
		a.IsUnspecified() || cgnat.Contains(a) || !a.IsValid()
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// clip shortens s for an error message.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
