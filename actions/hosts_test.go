package actions

import (
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	tests := []struct {
		in, want string // want "" for an error
	}{
		{"example.com", "example.com"},
		{"EXAMPLE.Com.", "example.com"},
		{"Bücher.example", "xn--bcher-kva.example"},
		{"127.0.0.1", "127.0.0.1"},
		{"127.0.0.1.", "127.0.0.1"},
		{"::FFFF:127.0.0.1", "127.0.0.1"},
		{"2001:DB8::0001", "2001:db8::1"},
		{"fe80::1%eth0", ""},
		{"exa%6Dple.com", ""},
		{"[::1]", ""},
		{"example.com..", ""},
		{".example.com", ""},
		{"a b", ""},
		{" example.com", ""},
		{"", ""},
		{".", ""},
	}
	for _, tt := range tests {
		got, err := NormalizeHost(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("NormalizeHost(%q) = %q, want an error", tt.in, got)
		case tt.want != "" && (err != nil || got != tt.want):
			t.Errorf("NormalizeHost(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestHostPattern(t *testing.T) {
	tests := []struct {
		in    string
		str   string
		port  string
		exact bool
		addr  string
	}{
		{" example.com ", "example.com", "", true, ""},
		{"localhost:08080", "localhost:08080", "8080", true, ""},
		{"*.example.com", "*.example.com", "", false, ""},
		{"*", "*", "", false, ""},
		{"[::1]:3000", "[::1]:3000", "3000", true, "::1"},
		{"10.0.0.1", "10.0.0.1", "", true, "10.0.0.1"},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.in)
		if err != nil {
			t.Fatalf("ParseHostPattern(%q) = %v", tt.in, err)
		}
		a, ok := p.Addr()
		addr := ""
		if ok {
			addr = a.String()
		}
		if p.String() != tt.str || p.Port() != tt.port || p.Exact() != tt.exact || addr != tt.addr {
			t.Errorf("ParseHostPattern(%q) = String %q, Port %q, Exact %v, Addr %q; want %q, %q, %v, %q",
				tt.in, p.String(), p.Port(), p.Exact(), addr, tt.str, tt.port, tt.exact, tt.addr)
		}
	}
}

func TestHostPatternMatch(t *testing.T) {
	tests := []struct {
		pattern, host, port, scheme string
		want                        bool
	}{
		{"example.com", "example.com", "", "http", true},
		{"example.com", "example.com", "", "https", true},
		{"example.com", "example.com", "80", "ws", true},
		{"example.com", "example.com", "443", "wss", true},
		{"example.com", "example.com", "443", "WSS", true},
		{"example.com", "example.com", "80", "wss", false},
		{"example.com", "example.com", "80", "", true},
		{"example.com", "example.com", "443", "", true},
		{"example.com", "example.com", "8080", "", false},
		{"example.com", "example.com", "21", "ftp", false},
		{"example.com", "example.com", "", "ftp", false},
		{"example.com:21", "example.com", "21", "ftp", true},
		{"example.com:8080", "example.com", "", "http", false},
		{"example.com:8080", "example.com", "08080", "http", true},
		{"example.com", "example.com", "x", "", false},
		{"*", "anything.test", "1", "", true},
		{"*", "anything.test", "0", "", false},
		{"*", "a b", "80", "http", false},
		{"*.example.com", "A.EXAMPLE.COM.", "443", "https", true},
	}
	for _, tt := range tests {
		p, err := ParseHostPattern(tt.pattern)
		if err != nil {
			t.Fatalf("ParseHostPattern(%q) = %v", tt.pattern, err)
		}
		if got := p.Match(tt.host, tt.port, tt.scheme); got != tt.want {
			t.Errorf("ParseHostPattern(%q).Match(%q, %q, %q) = %v, want %v", tt.pattern, tt.host, tt.port, tt.scheme, got, tt.want)
		}
	}
	var zero HostPattern
	if zero.Match("example.com", "80", "http") || zero.MatchHost("") {
		t.Errorf("HostPattern{}.Match matched, want nothing")
	}
}

func TestParseHostPatternErrors(t *testing.T) {
	for _, s := range []string{
		"", " ", "*.", "*:80", "a.*.com", "*.10.0.0.1", "*.[::1]",
		"http://example.com", "example.com/", "u@example.com", "example.com?", "example.com#", `a\b`,
		"example.com:", "example.com:0", "example.com:65536", "example.com:+80", "example.com:http", "a:1:2:x",
		"[::1", "[::1]x", "[::1]:", "[::1]:x", "[::1]:0", "[example.com]", "[127.0.0.1]", "[127.0.0.1]:80",
		"fe80::1%eth0", "[fe80::1%eth0]", "[fe80::1%25eth0]:80", "exa mple.com", "a..b", "_x.example",
	} {
		if p, err := ParseHostPattern(s); err == nil {
			t.Errorf("ParseHostPattern(%q) = %+v, want an error", s, p)
		}
	}
}
