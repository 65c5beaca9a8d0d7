package actions

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gopkg.in/yaml.v3"
)

// sample returns a valid action of every kind.
func sample() []Action {
	return []Action{
		{Kind: Screenshot},
		{Kind: Click, At: Pt(1, 1), HasAt: true},
		{Kind: DoubleClick, At: Pt(1, 1), HasAt: true},
		{Kind: TripleClick, At: Pt(1, 1), HasAt: true},
		{Kind: MouseDown},
		{Kind: MouseUp},
		{Kind: Move, At: Pt(1, 1), HasAt: true},
		{Kind: Drag, Path: []Point{{X: 1, Y: 1}, {X: 2, Y: 2}}},
		{Kind: Scroll, At: Pt(1, 1), HasAt: true, DeltaY: 100},
		{Kind: Type, Text: "hi"},
		{Kind: Keypress, Keys: Chord{"Enter"}},
		{Kind: HoldKey, Keys: Chord{Shift}, Duration: 1e9},
		{Kind: Wait},
		{Kind: Zoom, Region: Rect{Pt(0, 0), Pt(5, 5)}},
		{Kind: CursorPosition},
		{Kind: Navigate, URL: "about:blank"},
		{Kind: GoBack},
		{Kind: GoForward},
		{Kind: ListTabs},
		{Kind: SwitchTab, Tab: 1},
		{Kind: CloseTab},
		{Kind: Dialog, Accept: true, Text: "yes"},
		{Kind: Upload, Files: []string{"report.pdf"}},
	}
}

func TestSampleCoversKinds(t *testing.T) {
	var got []Kind
	for _, a := range sample() {
		if err := a.Validate(Limits{}); err != nil {
			t.Errorf("sample: %v", err)
		}
		got = append(got, a.Kind)
	}
	if diff := cmp.Diff(Kinds(), got); diff != "" {
		t.Errorf("sample kinds (-want +got):\n%s", diff)
	}
}

func TestZeroPolicy(t *testing.T) {
	for _, a := range sample() {
		err := Policy{}.Check(a)
		if a.Kind == Screenshot {
			if err != nil {
				t.Errorf("Policy{}.Check(%v) = %v, want nil", a.Kind, err)
			}
			continue
		}
		want := a.Kind.String() + " is not allowed (allowed: screenshot)"
		if err == nil || err.Error() != want || !errors.Is(err, ErrNotAllowed) {
			t.Errorf("Policy{}.Check(%v) = %v, want %q wrapping ErrNotAllowed", a.Kind, err, want)
		}
	}
	if err := (Policy{}).CheckBatch([]Action{{Kind: Screenshot}}); err != nil {
		t.Errorf("Policy{}.CheckBatch(screenshot) = %v, want nil", err)
	}
}

func TestStandard(t *testing.T) {
	p := Standard()
	p.Files = []string{"report.pdf"} // Standard makes no file available
	for _, a := range sample() {
		if err := p.Check(a); err != nil {
			t.Errorf("Standard().Check(%v) = %v, want nil", a.Kind, err)
		}
	}
	for _, c := range p.ForbidKeys {
		if err := checkChord(c, false); err != nil {
			t.Errorf("Standard() forbids %v, not canonical: %v", c, err)
		}
	}
}

func TestStandardYAML(t *testing.T) {
	got, err := LoadPolicy(filepath.Join("testdata", "standard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Standard(), got); diff != "" {
		t.Errorf("testdata/standard.yaml (-Standard() +file):\n%s", diff)
	}
}

func TestForbidKeys(t *testing.T) {
	p := Standard()
	p.ForbidKeys = append(p.ForbidKeys, Chord{Control, "+"}, Chord{Meta}, Chord{Alt, Shift})
	key := func(s string) Action {
		c, err := ParseChord(s)
		if err != nil {
			t.Fatal(err)
		}
		return Action{Kind: Keypress, Keys: c}
	}
	tests := []struct {
		name string
		a    Action
		want string
	}{
		{"ctrl+w", key("ctrl+w"), "keypress Control+w is not allowed (forbidden: Control+w)"},
		{"OpenAI CTRL W", Action{Kind: Keypress, Keys: Chord{"CTRL", "W"}}, "keypress CTRL+W is not allowed (forbidden: Control+w)"},
		{"capital W", Action{Kind: Keypress, Keys: Chord{Control, "W"}}, "keypress Control+W is not allowed (forbidden: Control+w)"},
		{"ctrl+shift+w", key("Control+Shift+W"), "keypress Control+Shift+w is not allowed (forbidden: Control+Shift+w)"},
		{"alt+F4", key("alt+F4"), "keypress Alt+F4 is not allowed (forbidden: Alt+F4)"},
		{"hold ctrl+q", Action{Kind: HoldKey, Keys: Chord{Control, "q"}, Duration: 1e9}, "hold_key Control+q is not allowed (forbidden: Control+q)"},
		{"unordered modifiers", Action{Kind: Keypress, Keys: Chord{Shift, Control, "w"}}, "keypress Shift+Control+w is not allowed (forbidden: Control+Shift+w)"},
		{"cmd+q", key("cmd+q"), "keypress Meta+q is not allowed (forbidden: Meta+q)"},
		{"plus", key("ctrl++"), "keypress Control++ is not allowed (forbidden: Control++)"},
		{"plus as shift+equal", key("ctrl+shift+="), "keypress Control+Shift+= is not allowed (forbidden: Control++)"},
		{"plus via equal", key("ctrl+="), "keypress Control+= is not allowed (forbidden: Control++)"},
		{"modifiers alone", key("super"), "keypress Meta is not allowed (forbidden: Meta)"},
		{"modifiers in a chord", key("super+l"), "keypress Meta+l is not allowed (forbidden: Meta)"},
		{"held on click", Action{Kind: Click, Modifiers: Chord{Control, Meta}}, "click with Control+Meta held is not allowed (forbidden: Meta)"},
		{"held on scroll", Action{Kind: Scroll, DeltaY: 1, Modifiers: Chord{Alt, Shift}}, "scroll with Alt+Shift held is not allowed (forbidden: Alt+Shift)"},

		{"w", key("w"), ""},
		{"W", key("W"), ""},
		{"ctrl+alt+w", key("ctrl+alt+w"), ""},
		{"ctrl+c", key("ctrl+c"), ""},
		{"ctrl+NumpadAdd", key("ctrl+KP_Add"), ""},
		{"F4", key("F4"), ""},
		{"alt", key("alt"), ""},
		{"shift click", Action{Kind: Click, Modifiers: Chord{Shift}}, ""},
		{"ctrl click", Action{Kind: Click, Modifiers: Chord{Control}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := p.Check(tt.a)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check(%v %v) = %v, want nil", tt.a.Kind, tt.a.Keys, err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrNotAllowed)):
				t.Errorf("Check(%v %v) = %v, want %q wrapping ErrNotAllowed", tt.a.Kind, tt.a.Keys, err, tt.want)
			}
		})
	}
	// An empty forbidden chord forbids nothing.
	if err := (Policy{Allow: []Kind{Keypress}, ForbidKeys: []Chord{{}}}).Check(key("a")); err != nil {
		t.Errorf("Check(keypress a) with an empty forbidden chord = %v, want nil", err)
	}
}

func TestHosts(t *testing.T) {
	tests := []struct {
		hosts []string
		url   string
		want  string // "" for allowed
	}{
		{nil, "about:blank", ""},
		{nil, "http://localhost/", "navigate to localhost is not allowed (no hosts are allowed)"},
		{[]string{"example.com"}, "https://example.com/x", ""},
		{[]string{"example.com"}, "http://example.com/", ""},
		{[]string{"example.com"}, "HTTPS://EXAMPLE.COM/", ""},
		{[]string{"EXAMPLE.com"}, "https://example.com/", ""},
		{[]string{"example.com"}, "https://example.com./", ""},
		{[]string{"example.com."}, "https://example.com/", ""},
		{[]string{"example.com"}, "https://example.com:443/", ""},
		{[]string{"example.com"}, "http://example.com:80/", ""},
		{[]string{"example.com"}, "http://example.com:0080/", ""},
		{[]string{"example.com"}, "https://exa%6Dple.com/", `navigate to "https://exa%6Dple.com/" is not allowed (want an http or https URL)`},
		{[]string{"example.com"}, "https://example。com/", ""},
		{[]string{"example.com"}, "https://example.com:8443/", "navigate to example.com:8443 is not allowed (allowed hosts: example.com)"},
		{[]string{"example.com"}, "http://example.com:443/", "navigate to example.com:443 is not allowed (allowed hosts: example.com)"},
		{[]string{"example.com"}, "https://www.example.com/", "navigate to www.example.com is not allowed (allowed hosts: example.com)"},
		{[]string{"example.com"}, "https://example.com.evil.test/", "navigate to example.com.evil.test is not allowed (allowed hosts: example.com)"},
		{[]string{"localhost:8080"}, "http://localhost:8080/app", ""},
		{[]string{"localhost:8080"}, "http://localhost/", "navigate to localhost is not allowed (allowed hosts: localhost:8080)"},
		{[]string{"localhost:8080"}, "http://localhost:8081/", "navigate to localhost:8081 is not allowed (allowed hosts: localhost:8080)"},
		{[]string{"localhost:80"}, "http://localhost/", ""},
		{[]string{"localhost", "*.example.com"}, "http://evil.test/", "navigate to evil.test is not allowed (allowed hosts: localhost, *.example.com)"},
		{[]string{"*.example.com"}, "https://a.example.com/", ""},
		{[]string{"*.example.com"}, "https://a.b.EXAMPLE.com./", ""},
		{[]string{"*.example.com"}, "https://example.com/", "navigate to example.com is not allowed (allowed hosts: *.example.com)"},
		{[]string{"*.example.com"}, "https://evilexample.com/", "navigate to evilexample.com is not allowed (allowed hosts: *.example.com)"},
		{[]string{"*.example.com:8080"}, "http://a.example.com:8080/", ""},
		{[]string{"*"}, "https://anything.test:9999/", ""},
		{[]string{"*"}, "file:///etc/passwd", `navigate to "file:///etc/passwd" is not allowed (want an http or https URL)`},
		{[]string{"*"}, "javascript:alert(1)", `navigate to "javascript:alert(1)" is not allowed (want an http or https URL)`},
		// Userinfo and other tricks: the host is what the browser would load.
		{[]string{"localhost"}, "http://localhost@evil.test/", "navigate to evil.test is not allowed (allowed hosts: localhost)"},
		{[]string{"localhost"}, "http://localhost:80@evil.test/", "navigate to evil.test is not allowed (allowed hosts: localhost)"},
		{[]string{"localhost"}, "http://localhost%2F@evil.test/", "navigate to evil.test is not allowed (allowed hosts: localhost)"},
		{[]string{"localhost"}, "http://evil.test#@localhost/", "navigate to evil.test is not allowed (allowed hosts: localhost)"},
		{[]string{"localhost"}, "http://evil.test?@localhost/", "navigate to evil.test is not allowed (allowed hosts: localhost)"},
		{[]string{"localhost"}, `http://evil.test\@localhost/`, `navigate to "http://evil.test\\@localhost/" is not allowed (want an http or https URL)`},
		{[]string{"localhost"}, "http://user:pw@localhost/", ""},
		// IDN: either form on either side.
		{[]string{"bücher.example"}, "https://xn--bcher-kva.example/", ""},
		{[]string{"xn--bcher-kva.example"}, "https://bücher.example/", ""},
		{[]string{"xn--bcher-kva.example"}, "https://BÜCHER.example/", ""},
		{[]string{"bucher.example"}, "https://bücher.example/", "navigate to xn--bcher-kva.example is not allowed (allowed hosts: bucher.example)"},
		// IP addresses.
		{[]string{"127.0.0.1"}, "http://127.0.0.1/", ""},
		{[]string{"127.0.0.1"}, "http://[::ffff:127.0.0.1]/", ""},
		{[]string{"127.0.0.1"}, "http://0x7f.1/", "navigate to 0x7f.1 is not allowed (allowed hosts: 127.0.0.1)"},
		{[]string{"[::1]:3000"}, "http://[::1]:3000/", ""},
		{[]string{"::1"}, "http://[::1]/", ""},
		{[]string{"[::1]"}, "http://[0:0::1]/", ""},
		{[]string{"[::1]"}, "http://[::2]/", "navigate to [::2] is not allowed (allowed hosts: [::1])"},
	}
	for _, tt := range tests {
		p := Policy{Allow: []Kind{Navigate}, Hosts: tt.hosts}
		err := p.Check(Action{Kind: Navigate, URL: tt.url})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(navigate %q) with hosts %q = %v, want nil", tt.url, tt.hosts, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrNotAllowed)):
			t.Errorf("Check(navigate %q) with hosts %q = %v, want %q wrapping ErrNotAllowed", tt.url, tt.hosts, err, tt.want)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	got, err := LoadPolicy(filepath.Join("testdata", "dialects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := Policy{
		Allow:      []Kind{Click, Type, Keypress, Navigate},
		ForbidKeys: []Chord{{Control, "w"}, {Control, Shift, "w"}, {Alt, "F4"}, {Control, "+"}, {Meta}},
		MaxBatch:   8,
		Hosts:      []string{"localhost:8080", "*.example.com", "bücher.example", "[::1]:3000"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoadPolicy(testdata/dialects.yaml) (-want +got):\n%s", diff)
	}

	for _, in := range []string{"", "# nothing\n", "---\n"} {
		got, err := ParsePolicy([]byte(in))
		if err != nil || !cmp.Equal(Policy{}, got, cmpopts.EquateEmpty()) {
			t.Errorf("ParsePolicy(%q) = %+v, %v; want the zero Policy", in, got, err)
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"allow: [click]\nallowed: [type]\n", "policy: allowed (line 2): unknown field; the fields here are allow, files, forbid_keys, hosts, max_batch"},
		{"allow: [clik]\n", `policy: allow[0] (line 1): invalid action: unknown action kind "clik"`},
		{"allow: click\n", `policy: allow (line 1): want a list, got "click"`},
		{"forbid_keys: [ctrl+Pgdwn]\n", `policy: forbid_keys[0] (line 1): chord "ctrl+Pgdwn": unknown key "Pgdwn" (closest: PageDown, ArrowDown, PageUp)`},
		{"forbid_keys: [[ctrl, a, b]]\n", `policy: forbid_keys[0] (line 1): keys ["ctrl" "a" "b"]: two main keys, a and b`},
		{"forbid_keys: [{ctrl: w}]\n", `policy: forbid_keys[0] (line 1): a chord is a string such as "ctrl+w" or a list of key names`},
		{"forbid_keys: ['']\n", `policy: forbid_keys[0] (line 1): chord "": empty key name`},
		{"max_batch: -1\n", "policy: max_batch -1 is negative"},
		{"forbid_keys: [ctrl+w, ~]\n", "policy: forbid_keys[1] is empty"},
		{"max_batch: lots\n", `policy: max_batch (line 1): want a whole number, got "lots"`},
		{"hosts: [http://example.com]\n", `policy: hosts[0]: host pattern "http://example.com": want a host such as "example.com", "localhost:8080", "*.example.com" or "*"`},
		{"hosts: ['*.*.example.com']\n", `policy: hosts[0]: host pattern "*.*.example.com": want a host such as "example.com", "localhost:8080", "*.example.com" or "*"`},
		{"hosts: ['example.com:99999']\n", `policy: hosts[0]: host pattern "example.com:99999": bad port "99999"`},
		{"hosts: ['*.127.0.0.1']\n", `policy: hosts[0]: host pattern "*.127.0.0.1": an IP address has no subdomains`},
		{"hosts: ['exa mple.com']\n", `policy: hosts[0]: host pattern "exa mple.com": bad host name "exa mple.com"`},
		{"hosts: ['']\n", `policy: hosts[0]: host pattern "": want a host such as "example.com", "localhost:8080", "*.example.com" or "*"`},
		{"allow: [click]\n---\nallow: [type]\n", "policy: want one YAML document, found several"},
		{"allow: [click\n", "policy: not YAML: line 1: did not find expected ',' or ']'"},
		{"- click\n", "policy: line 1: want a mapping of fields (allow, files, forbid_keys, hosts, max_batch), got a list"},
		{"files: [a.txt, '']\n", "policy: files[1] is not a usable path"},
		// Patterns no host can match.
		{"hosts: [example.com, 'http://x']\n", `policy: hosts[1]: host pattern "http://x": want a host such as "example.com", "localhost:8080", "*.example.com" or "*"`},
		{"hosts: ['*:*']\n", `policy: hosts[0]: host pattern "*:*": want a host such as "example.com", "localhost:8080", "*.example.com" or "*"`},
		{"hosts: ['[::1%eth0]']\n", `policy: hosts[0]: host pattern "[::1%eth0]": address "::1%eth0" has a zone`},
	}
	for _, tt := range tests {
		got, err := ParsePolicy([]byte(tt.in))
		if err == nil || err.Error() != tt.want {
			t.Errorf("ParsePolicy(%q) = %+v, %v; want error %q", tt.in, got, err, tt.want)
		}
	}
}

func TestFiles(t *testing.T) {
	p, err := ParsePolicy([]byte("allow: [upload]\nfiles: [/srv/in/report.pdf, notes.txt]\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		files []string
		want  string // "" for allowed
	}{
		{[]string{"/srv/in/report.pdf"}, ""},
		{[]string{"notes.txt", "/srv/in/../in/report.pdf"}, ""},
		{[]string{"./notes.txt"}, ""},
		{[]string{"/etc/passwd"}, `upload of "/etc/passwd" is not allowed (available files: /srv/in/report.pdf, notes.txt)`},
		{[]string{"notes.txt", "report.pdf"}, `upload of "report.pdf" is not allowed (available files: /srv/in/report.pdf, notes.txt)`},
	}
	for _, tt := range tests {
		err := p.Check(Action{Kind: Upload, Files: tt.files})
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(upload %q) = %v, want nil", tt.files, err)
		case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrNotAllowed)):
			t.Errorf("Check(upload %q) = %v, want %q wrapping ErrNotAllowed", tt.files, err, tt.want)
		}
	}
	none := Policy{Allow: []Kind{Upload}}
	want := `upload of "a.txt" is not allowed (no files are available)`
	if err := none.Check(Action{Kind: Upload, Files: []string{"a.txt"}}); err == nil || err.Error() != want {
		t.Errorf("Policy without files: Check(upload a.txt) = %v, want %q", err, want)
	}
}

func TestLoadPolicyMissing(t *testing.T) {
	_, err := LoadPolicy(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadPolicy(missing) = %v, want fs.ErrNotExist", err)
	}
}

func TestPolicyYAMLRoundTrip(t *testing.T) {
	p := Standard()
	p.ForbidKeys = append(p.ForbidKeys, Chord{Control, "+"}, Chord{Shift}, Chord{"Space"})
	p.Hosts = []string{"localhost:8080", "*.example.com", "[::1]:3000", "*"}
	p.Files = []string{"/srv/in/report.pdf"}
	for _, want := range []Policy{{}, p, {Allow: []Kind{Click}}} {
		b, err := yaml.Marshal(want)
		if err != nil {
			t.Fatalf("yaml.Marshal(%+v) = %v", want, err)
		}
		got, err := ParsePolicy(b)
		if err != nil {
			t.Fatalf("ParsePolicy(%s) = %v", b, err)
		}
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParsePolicy(yaml.Marshal(p)) (-want +got):\n%s\nYAML:\n%s", diff, b)
		}
	}
}

func TestCheckBatch(t *testing.T) {
	click := Action{Kind: Click, At: Pt(1, 1), HasAt: true}
	p := Policy{Allow: []Kind{Click}, MaxBatch: 2}
	tests := []struct {
		name  string
		p     Policy
		batch []Action
		want  string
	}{
		{"ok", p, []Action{click, click}, ""},
		{"empty", p, nil, ""},
		{"too long", p, []Action{click, click, click}, "a batch of 3 actions is over the limit of 2"},
		{"default limit", Policy{}, make([]Action, 33), "a batch of 33 actions is over the limit of 32"},
		{"index", p, []Action{click, {Kind: Type, Text: "x"}}, "action 1: type is not allowed (allowed: screenshot, click)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.CheckBatch(tt.batch)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("CheckBatch(%d actions) = %v, want nil", len(tt.batch), err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrNotAllowed)):
				t.Errorf("CheckBatch(%d actions) = %v, want %q wrapping ErrNotAllowed", len(tt.batch), err, tt.want)
			}
		})
	}
}

func FuzzParsePolicy(f *testing.F) {
	for _, name := range []string{"standard.yaml", "dialects.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{"", "allow: [click]", "forbid_keys: [[CTRL, W]]", "hosts: ['*']", "max_batch: 3",
		"hosts: ['[::1]:80', 'xn--bcher-kva.example.']", "allow: [click]\n---\n", "{", "forbid_keys: ['ctrl++']"} {
		f.Add([]byte(s))
	}
	actions := sample()
	actions = append(actions,
		Action{Kind: Navigate, URL: "http://localhost@evil.test/"},
		Action{Kind: Navigate, URL: "https://a.example.com:8080/"},
		Action{Kind: Keypress, Keys: Chord{Control, "w"}},
		Action{Kind: Click, Modifiers: Chord{Meta}})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParsePolicy(b)
		if err != nil {
			return
		}
		for _, a := range actions {
			if err := p.Check(a); err != nil && !errors.Is(err, ErrNotAllowed) {
				t.Errorf("Check(%v) = %v, want nil or ErrNotAllowed", a.Kind, err)
			}
		}
		_ = p.CheckBatch(actions)
		out, err := yaml.Marshal(p)
		if err != nil {
			t.Fatalf("yaml.Marshal(%+v) = %v", p, err)
		}
		again, err := ParsePolicy(out)
		if err != nil {
			t.Fatalf("ParsePolicy(%q) = %+v; ParsePolicy(%q) = %v", b, p, out, err)
		}
		if diff := cmp.Diff(p, again, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("ParsePolicy(%q), marshalled and read back (-first +second):\n%s", b, diff)
		}
	})
}
