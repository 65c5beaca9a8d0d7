package actions

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/net/idna"
)

// A HostPattern is one entry of a host allowlist: Policy.Hosts, and the
// egress proxy's allow and deny lists (isolate/egress), which share these
// rules so that one list can serve both.
//
// An entry is one of
//
//	example.com       that host, on the scheme's default port
//	localhost:8080    that host on that port only
//	*.example.com     every subdomain of example.com (not example.com itself), on the default port
//	*                 every host on every port
//
// and is read by these rules:
//   - Whitespace around an entry is ignored; whitespace inside one is an error.
//   - Names compare without regard to case, one trailing dot (the DNS root)
//     or IDNA form: "Bücher.Example." is "xn--bcher-kva.example". An empty
//     label ("a..b") is an error.
//   - An IP address compares in its canonical form: "::FFFF:127.0.0.1" is
//     127.0.0.1, "[2001:DB8::0001]" is 2001:db8::1. An IPv6 address may be
//     written with or without brackets, but with a port it needs them
//     ("[::1]:3000"). Brackets hold only an IPv6 address. An IP address has no
//     subdomains ("*.10.0.0.1" is an error).
//   - An address with a zone ("fe80::1%eth0") is an error, and so is a
//     request for one: a zone names an interface of one machine, which no
//     entry can name.
//   - A port is a decimal number 1..65535. An entry without a port admits
//     the default port of the request's scheme: 80 for http and ws, 443 for
//     https and wss, either for a request whose scheme the caller cannot
//     see (scheme ""; a proxy's CONNECT tunnel), none for other schemes.
//   - Anything else (a scheme, a path, "@", "?", "#", "%", a "*" that is not
//     the first label) is an error.
//
// The zero HostPattern matches nothing.
type HostPattern struct {
	raw  string // the entry, trimmed
	any  bool   // "*"
	wild bool   // "*.example.com"
	host string // normalized, see NormalizeHost
	port string // "" when the entry names none
}

// ParseHostPattern parses one allowlist entry by the rules of HostPattern.
func ParseHostPattern(s string) (HostPattern, error) {
	raw := strings.TrimSpace(s)
	if raw == "*" {
		return HostPattern{raw: raw, any: true}, nil
	}
	pat := HostPattern{raw: raw}
	rest, wild := strings.CutPrefix(raw, "*.")
	pat.wild = wild
	if rest == "" || strings.ContainsAny(rest, "/*@?#\\") {
		return HostPattern{}, fmt.Errorf("host pattern %q: want a host such as \"example.com\", \"localhost:8080\", \"*.example.com\" or \"*\"", clip(s))
	}
	host, port, err := splitHostPattern(rest)
	if err != nil {
		return HostPattern{}, fmt.Errorf("host pattern %q: %v", clip(s), err)
	}
	if pat.host, err = NormalizeHost(host); err != nil {
		return HostPattern{}, fmt.Errorf("host pattern %q: %v", clip(s), err)
	}
	if _, err := netip.ParseAddr(pat.host); err == nil && wild {
		return HostPattern{}, fmt.Errorf("host pattern %q: an IP address has no subdomains", clip(s))
	}
	pat.port = port
	return pat, nil
}

// splitHostPattern splits an entry (without "*.") into its host and its
// normalized port ("" when it names none).
func splitHostPattern(s string) (host, port string, err error) {
	if strings.HasPrefix(s, "[") {
		host, port = s, ""
		if !strings.HasSuffix(s, "]") {
			if host, port, err = net.SplitHostPort(s); err != nil {
				return "", "", err
			}
			host = "[" + host + "]"
			if port, err = normPort(port); err != nil {
				return "", "", err
			}
		}
		host = host[1 : len(host)-1]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", "", fmt.Errorf("brackets hold an IPv6 address, not %q", clip(host))
		}
		return host, port, nil
	}
	if strings.Count(s, ":") != 1 {
		return s, "", nil // a name, an IPv4 address or an IPv6 address without a port
	}
	host, port, err = net.SplitHostPort(s)
	if err != nil {
		return "", "", err
	}
	port, err = normPort(port)
	return host, port, err
}

// normPort returns a port number in decimal without leading zeros.
func normPort(p string) (string, error) {
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 || strings.TrimLeft(p, "0123456789") != "" {
		return "", fmt.Errorf("bad port %q", clip(p))
	}
	return strconv.Itoa(n), nil
}

// NormalizeHost returns the form of a host that host patterns compare: an
// IP address in its canonical form (an IPv4-mapped IPv6 address as IPv4), or
// a lower-case ASCII (IDNA) name without a trailing dot. A host is written
// without brackets, as url.URL.Hostname returns it. An address with a zone,
// a name with an empty label and anything IDNA refuses (whitespace, "_")
// are errors.
func NormalizeHost(h string) (string, error) {
	if addr, _, ok := strings.Cut(h, "%"); ok {
		if _, err := netip.ParseAddr(addr); err == nil {
			return "", fmt.Errorf("address %q has a zone", clip(h))
		}
		return "", fmt.Errorf("bad host name %q", clip(h))
	}
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String(), nil
	}
	if strings.ContainsFunc(h, unicode.IsSpace) {
		return "", fmt.Errorf("bad host name %q", clip(h))
	}
	name := strings.TrimSuffix(h, ".")
	if a, err := netip.ParseAddr(name); err == nil && a.Is4() {
		return a.String(), nil // "10.0.0.1." as a URL host is 10.0.0.1
	}
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil || ascii == "" || slices.Contains(strings.Split(ascii, "."), "") {
		return "", fmt.Errorf("bad host name %q", clip(h))
	}
	return ascii, nil
}

// String returns the entry as written, without surrounding whitespace.
func (p HostPattern) String() string { return p.raw }

// Port returns the port the entry names, or "" when it names none.
func (p HostPattern) Port() string { return p.port }

// Exact reports whether the entry names one host, not "*" or "*.domain".
func (p HostPattern) Exact() bool { return p.host != "" && !p.any && !p.wild }

// Addr returns the IP address the entry names, if it names one.
func (p HostPattern) Addr() (netip.Addr, bool) {
	a, err := netip.ParseAddr(p.host)
	return a, err == nil && !p.wild
}

// MatchHost reports whether the entry names host, whatever the port. A host
// that NormalizeHost refuses matches nothing.
func (p HostPattern) MatchHost(host string) bool {
	if !p.any && p.host == "" {
		return false // the zero HostPattern
	}
	h, err := NormalizeHost(host)
	switch {
	case err != nil:
		return false
	case p.any:
		return true
	case p.wild:
		return strings.HasSuffix(h, "."+p.host)
	}
	return h == p.host
}

// Match reports whether the entry admits host on port, reached by scheme
// ("http", "https", "ws", "wss", or "" when the caller cannot see it). An
// empty port is the scheme's default; see HostPattern for which ports an
// entry without one admits.
func (p HostPattern) Match(host, port, scheme string) bool {
	if !p.MatchHost(host) {
		return false
	}
	if p.any {
		return port == "" || validPort(port)
	}
	scheme = strings.ToLower(scheme)
	if port == "" {
		if scheme == "" {
			return p.port == "" // the default port, whichever it is
		}
		if port = defaultPort(scheme); port == "" {
			return false
		}
	}
	n, err := normPort(port)
	switch {
	case err != nil:
		return false
	case p.port != "":
		return n == p.port
	case scheme == "":
		return n == "80" || n == "443"
	}
	return n == defaultPort(scheme)
}

func validPort(p string) bool {
	_, err := normPort(p)
	return err == nil
}

// defaultPort returns the port a URL of scheme reaches when it names none;
// "" for schemes without one here.
func defaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	}
	return ""
}
