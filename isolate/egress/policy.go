package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// Policy says which hosts a sandbox may reach. The zero Policy allows
// nothing.
//
// Entries use the syntax of actions.Policy.Hosts, so one list can serve
// both: "example.com" (that host on ports 80 and 443), "localhost:8080"
// (that port only), "*.example.com" (every subdomain on ports 80 and 443,
// not example.com itself) or "*" (every host on every port). Names match
// without regard to case, a trailing dot or IDNA form.
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
type pattern struct {
	raw  string
	any  bool   // "*"
	wild bool   // "*.example.com"
	host string // normalized, see normHost
	port string // "" for ports 80 and 443 (Allow) or every port (Deny)
}

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
	pat := pattern{raw: s}
	if s == "*" {
		pat.any = true
		return pat, nil
	}
	rest, wild := strings.CutPrefix(s, "*.")
	pat.wild = wild
	if rest == "" || strings.ContainsAny(rest, "/*@?# \t") {
		return pat, fmt.Errorf("host pattern %q: want a host such as \"example.com\", \"localhost:8080\", \"*.example.com\" or \"*\"", clip(s))
	}
	host := rest
	switch {
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]"):
		host = rest[1 : len(rest)-1]
	case strings.HasPrefix(rest, "[") || strings.Count(rest, ":") == 1:
		h, port, err := net.SplitHostPort(rest)
		if err != nil {
			return pat, fmt.Errorf("host pattern %q: %v", clip(s), err)
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return pat, fmt.Errorf("host pattern %q: bad port %q", clip(s), clip(port))
		}
		host, pat.port = h, strconv.Itoa(n)
	}
	h, err := normHost(host)
	if err != nil {
		return pat, fmt.Errorf("host pattern %q: %v", clip(s), err)
	}
	if _, err := netip.ParseAddr(h); err == nil && wild {
		return pat, fmt.Errorf("host pattern %q: an IP address has no subdomains", clip(s))
	}
	pat.host = h
	return pat, nil
}

// matchHost reports whether pat names host, whatever the port.
func (pat pattern) matchHost(host string) bool {
	switch {
	case pat.any:
		return true
	case pat.wild:
		return strings.HasSuffix(host, "."+pat.host)
	}
	return host == pat.host
}

// allows reports whether pat, as an Allow entry, admits host on port.
func (pat pattern) allows(host, port string) bool {
	if pat.any {
		return true
	}
	if pat.port == "" {
		if port != "80" && port != "443" {
			return false
		}
	} else if pat.port != port {
		return false
	}
	return pat.matchHost(host)
}

// denies reports whether pat, as a Deny entry, refuses host on port.
func (pat pattern) denies(host, port string) bool {
	if pat.port != "" && !pat.any && pat.port != port {
		return false
	}
	return pat.matchHost(host)
}

// verdict is the policy's answer for one host and port.
type verdict struct {
	allowed bool
	exact   bool   // the Allow entry names the host itself, so internal addresses are fine
	rule    string // the entry that decided; "" when none matched
	reason  string // why it is refused
}

// decide applies the rules to a normalized host and a port.
func (r rules) decide(host, port string) verdict {
	shown := hostPort(host, port)
	for _, pat := range r.deny {
		if pat.denies(host, port) {
			return verdict{rule: pat.raw, reason: fmt.Sprintf("%s is in this session's denylist (%s)", shown, pat.raw)}
		}
	}
	var v verdict
	for _, pat := range r.allow {
		if !pat.allows(host, port) {
			continue
		}
		exact := !pat.any && !pat.wild
		if !v.allowed || (exact && !v.exact) {
			v = verdict{allowed: true, exact: exact, rule: pat.raw}
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
		if _, err := netip.ParseAddr(pat.host); err == nil && !pat.any && pat.denies(host, port) {
			return pat.raw, true
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

// normHost returns the form of a host name that patterns compare: an IP
// address in its canonical form, or a lower-case ASCII (IDNA) name without
// a trailing dot.
func normHost(h string) (string, error) {
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("address %q has a zone", clip(h))
		}
		return a.Unmap().String(), nil
	}
	ascii, err := idna.Lookup.ToASCII(strings.TrimSuffix(h, "."))
	if err != nil || ascii == "" {
		return "", fmt.Errorf("bad host name %q", clip(h))
	}
	return strings.TrimSuffix(ascii, "."), nil
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
