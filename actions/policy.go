package actions

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spotter-harness/spotter/internal/yamldoc"
)

// Policy is a declarative allowlist: what it does not allow is refused.
// The zero Policy allows Screenshot alone. In YAML, with wire names:
//
//	allow: [click, type, keypress, navigate]
//	forbid_keys: ["ctrl+w", "Alt+F4"]
//	max_batch: 16
//	hosts: [localhost:8080, "*.example.com"]
//	files: [/srv/session/report.pdf]
type Policy struct {
	// Allow lists the kinds that may run. Screenshot always may.
	Allow []Kind `yaml:"allow,omitempty" json:"allow,omitempty"`

	// ForbidKeys lists chords that Keypress and HoldKey may not press, in
	// any dialect ParseChord reads. A chord matches when it has the same
	// modifiers and the same physical key ("Control+W" is "ctrl+w"); a key
	// that needs Shift on a US layout matches both with and without Shift
	// ("ctrl++" is also "ctrl+shift+="). A chord of modifiers alone ("Meta")
	// forbids every keypress, hold_key and pointer action that holds at
	// least those modifiers.
	ForbidKeys []Chord `yaml:"forbid_keys,omitempty" json:"forbid_keys,omitempty"`

	// MaxBatch is the most actions one call may carry; 0 means the
	// Limits default (32).
	MaxBatch int `yaml:"max_batch,omitempty" json:"max_batch,omitempty"`

	// Hosts lists where Navigate may go: "example.com" (that host on the
	// scheme's default port), "localhost:8080" (that port), "*.example.com"
	// (every subdomain, not example.com itself) or "*" (anywhere). Each
	// entry is a HostPattern and follows its rules: names match without
	// regard to surrounding whitespace, case, a trailing dot or IDNA form
	// ("bücher.example" is "xn--bcher-kva.example"); an address with a zone
	// is refused. Navigate to about:blank is always allowed. Hosts govern
	// Navigate only, not links the model clicks.
	Hosts []string `yaml:"hosts,omitempty" json:"hosts,omitempty"`

	// Files lists the paths Upload may hand to a file chooser, as the
	// model must name them. A path matches when it is the same after
	// cleaning ("a/../b.txt" is "b.txt"); nothing else is available.
	Files []string `yaml:"files,omitempty" json:"files,omitempty"`
}

// Standard is a preset for a supervised browser session: every kind may
// run, at most 16 actions a call, no host may be navigated to, and the
// chords that close a tab, a window or the browser are forbidden (ctrl+w,
// ctrl+shift+w, ctrl+q, ctrl+shift+q, ctrl+F4, alt+F4, and meta+w,
// meta+shift+w, meta+q, meta+shift+q for macOS). Add Hosts before use.
func Standard() Policy {
	return Policy{
		Allow: Kinds(),
		ForbidKeys: []Chord{
			{Control, "w"}, {Control, Shift, "w"}, {Control, "q"}, {Control, Shift, "q"},
			{Control, "F4"}, {Alt, "F4"},
			{Meta, "w"}, {Shift, Meta, "w"}, {Meta, "q"}, {Shift, Meta, "q"},
		},
		MaxBatch: 16,
	}
}

// ParsePolicy reads a Policy from YAML. Unknown fields, unknown kinds,
// unknown keys and malformed host patterns are errors. An empty document
// is the zero Policy.
func ParsePolicy(b []byte) (Policy, error) {
	p, err := parsePolicy(b)
	if err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

// LoadPolicy reads a Policy from a YAML file, as ParsePolicy does.
func LoadPolicy(path string) (Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, err // *fs.PathError names the file
	}
	p, err := parsePolicy(b)
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

func parsePolicy(b []byte) (Policy, error) {
	var p Policy
	if err := yamldoc.Decode(b, &p); errors.Is(err, yamldoc.ErrEmpty) {
		return Policy{}, nil
	} else if err != nil {
		return Policy{}, err
	}
	return p, p.Validate()
}

// Validate reports whether p is well formed, as ParsePolicy checks it: a
// batch cap of 0 or more, no empty chord, host patterns that some host
// can match (ParseHostPattern), usable file paths. Entry points check a
// Policy that did not come from ParsePolicy (a task file's, a session's)
// with it.
func (p Policy) Validate() error {
	if p.MaxBatch < 0 {
		return fmt.Errorf("max_batch %d is negative", p.MaxBatch)
	}
	for i, c := range p.ForbidKeys {
		if len(c) == 0 { // a null item skips UnmarshalYAML
			return fmt.Errorf("forbid_keys[%d] is empty", i)
		}
	}
	for i, h := range p.Hosts {
		if _, err := ParseHostPattern(h); err != nil {
			return fmt.Errorf("hosts[%d]: %v", i, err)
		}
	}
	for i, f := range p.Files {
		if f == "" || strings.ContainsRune(f, 0) {
			return fmt.Errorf("files[%d] is not a usable path", i)
		}
	}
	return nil
}

// Check reports whether p allows a. The error wraps ErrNotAllowed and says
// why in words a model can act on:
// "navigate to evil.test is not allowed (allowed hosts: localhost, *.example.com)".
// Call Action.Validate first: Check judges what a valid action would do.
func (p Policy) Check(a Action) error {
	switch {
	case a.Kind == KindInvalid || a.Kind >= kindEnd:
		return notAllowedf("%s is not a known action", a.Kind)
	case a.Kind != Screenshot && !slices.Contains(p.Allow, a.Kind):
		return notAllowedf("%s is not allowed (allowed: %s)", a.Kind, p.allowed())
	case a.Kind == Keypress || a.Kind == HoldKey:
		if f, ok := p.forbids(a.Keys); ok {
			return notAllowedf("%s %s is not allowed (forbidden: %s)", a.Kind, a.Keys, f)
		}
	case a.Kind.IsPointer() && len(a.Modifiers) > 0:
		if f, ok := p.forbids(a.Modifiers); ok {
			return notAllowedf("%s with %s held is not allowed (forbidden: %s)", a.Kind, a.Modifiers, f)
		}
	case a.Kind == Navigate:
		return p.checkNavigate(a.URL)
	case a.Kind == Upload:
		return p.checkFiles(a.Files)
	}
	return nil
}

// checkFiles reports whether every one of files is in p.Files.
func (p Policy) checkFiles(files []string) error {
	for _, f := range files {
		if !slices.ContainsFunc(p.Files, func(g string) bool { return g != "" && filepath.Clean(g) == filepath.Clean(f) }) {
			if len(p.Files) == 0 {
				return notAllowedf("upload of %q is not allowed (no files are available)", clip(f))
			}
			return notAllowedf("upload of %q is not allowed (available files: %s)", clip(f), strings.Join(p.Files, ", "))
		}
	}
	return nil
}

// CheckBatch checks the batch's length against MaxBatch, then every action.
func (p Policy) CheckBatch(batch []Action) error {
	if n := cmp.Or(p.MaxBatch, Limits{}.orDefaults().MaxBatch); len(batch) > n {
		return notAllowedf("a batch of %d actions is over the limit of %d", len(batch), n)
	}
	for i, a := range batch {
		if err := p.Check(a); err != nil {
			return fmt.Errorf("action %d: %w", i, err)
		}
	}
	return nil
}

// allowed lists the kinds p allows, in kind order.
func (p Policy) allowed() string {
	var names []string
	for _, k := range Kinds() {
		if k == Screenshot || slices.Contains(p.Allow, k) {
			names = append(names, k.String())
		}
	}
	return strings.Join(names, ", ")
}

// forbids returns the first of p.ForbidKeys that c matches.
func (p Policy) forbids(c Chord) (Chord, bool) {
	got := pressings(c)
	for _, f := range p.ForbidKeys {
		for _, fp := range pressings(f) {
			if fp == (pressing{}) {
				continue // an empty chord forbids nothing
			}
			for _, g := range got {
				if fp.key == "" && g.mods&fp.mods == fp.mods ||
					fp.key != "" && g == fp {
					return f, true
				}
			}
		}
	}
	return nil, false
}

// pressing is what a chord does to a keyboard: the modifiers held, as a
// bit set in modifierRank order, and the physical key pressed ("" for none).
type pressing struct {
	mods uint8
	key  string
}

// pressings returns the ways c may be pressed: as written and, if its main
// key needs Shift on a US layout, with Shift. Names that are not canonical
// are normalized first, so a chord that skipped ParseChord still matches.
func pressings(c Chord) []pressing {
	var p pressing
	shift := false
	for _, k := range c {
		if _, ok := LookupKey(k); !ok {
			if n, err := ParseKey(string(k)); err == nil {
				k = n
			}
		}
		if r := modifierRank(k); r >= 0 {
			p.mods |= 1 << r
			continue
		}
		p.key = "?" + string(k) // an unknown key still matches itself
		if i, ok := LookupKey(k); ok {
			p.key, shift = i.Code, i.Shift
		}
	}
	if shift {
		return []pressing{p, {p.mods | 1<<modifierRank(Shift), p.key}}
	}
	return []pressing{p}
}

func (p Policy) checkNavigate(raw string) error {
	if raw == "about:blank" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return notAllowedf("navigate to %q is not allowed (want an http or https URL)", clip(raw))
	}
	host, err := NormalizeHost(u.Hostname())
	if err != nil {
		return notAllowedf("navigate to %q is not allowed (%v)", clip(raw), err)
	}
	for _, h := range p.Hosts {
		if pat, err := ParseHostPattern(h); err == nil && pat.Match(host, u.Port(), u.Scheme) {
			return nil
		}
	}
	shown := host
	if u.Port() != "" {
		shown = net.JoinHostPort(host, u.Port())
	} else if strings.Contains(host, ":") {
		shown = "[" + host + "]"
	}
	if len(p.Hosts) == 0 {
		return notAllowedf("navigate to %s is not allowed (no hosts are allowed)", shown)
	}
	return notAllowedf("navigate to %s is not allowed (allowed hosts: %s)", shown, strings.Join(p.Hosts, ", "))
}
