package actions

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	at := func(x, y float64) Action { return Action{Kind: Click, At: Pt(x, y), HasAt: true} }
	tests := []struct {
		name string
		a    Action
		l    Limits
		want string // "" for valid
	}{
		{"screenshot", Action{Kind: Screenshot}, Limits{}, ""},
		{"click", at(10, 20), Limits{}, ""},
		{"click at cursor", Action{Kind: Click}, Limits{}, ""},
		{"right double click", Action{Kind: DoubleClick, At: Pt(1, 1), HasAt: true, Button: Right}, Limits{}, ""},
		{"ctrl click", Action{Kind: Click, At: Pt(1, 1), HasAt: true, Modifiers: Chord{Control, Shift}}, Limits{}, ""},
		{"mouse down at cursor", Action{Kind: MouseDown}, Limits{}, ""},
		{"mouse up at origin", Action{Kind: MouseUp, HasAt: true}, Limits{}, ""},
		{"move", Action{Kind: Move, At: Pt(5, 5), HasAt: true}, Limits{}, ""},
		{"drag", Action{Kind: Drag, Path: []Point{{X: 1, Y: 1}, {X: 2, Y: 2}, {X: 3, Y: 3}}}, Limits{}, ""},
		{"scroll", Action{Kind: Scroll, At: Pt(1, 1), HasAt: true, DeltaY: -300}, Limits{}, ""},
		{"type", Action{Kind: Type, Text: "héllo\n"}, Limits{}, ""},
		{"type at the limit", Action{Kind: Type, Text: strings.Repeat("x", 10000)}, Limits{}, ""},
		{"keypress", Action{Kind: Keypress, Keys: Chord{Control, "c"}}, Limits{}, ""},
		{"keypress shift", Action{Kind: Keypress, Keys: Chord{Shift}}, Limits{}, ""},
		{"hold key", Action{Kind: HoldKey, Keys: Chord{Shift}, Duration: time.Second}, Limits{}, ""},
		{"hold key at the limit", Action{Kind: HoldKey, Keys: Chord{"a"}, Duration: 30 * time.Second}, Limits{}, ""},
		{"wait zero", Action{Kind: Wait}, Limits{}, ""},
		{"wait", Action{Kind: Wait, Duration: 2 * time.Second}, Limits{}, ""},
		{"zoom", Action{Kind: Zoom, Region: Rect{Pt(0, 0), Pt(10, 10)}}, Limits{}, ""},
		{"navigate", Action{Kind: Navigate, URL: "https://example.com/a?b#c"}, Limits{}, ""},
		{"navigate blank", Action{Kind: Navigate, URL: "about:blank"}, Limits{}, ""},
		{"go back", Action{Kind: GoBack}, Limits{}, ""},
		{"cursor position", Action{Kind: CursorPosition}, Limits{}, ""},

		{"invalid kind", Action{}, Limits{}, "invalid: unknown kind"},
		{"kind out of range", Action{Kind: 200}, Limits{}, "kind(200): unknown kind"},
		{"text on click", Action{Kind: Click, Text: "x"}, Limits{}, "click: text is not used by click"},
		{"at on screenshot", Action{Kind: Screenshot, HasAt: true}, Limits{}, "screenshot: at is not used by screenshot"},
		{"url on type", Action{Kind: Type, Text: "a", URL: "http://x"}, Limits{}, "type: url is not used by type"},
		{"button on move", Action{Kind: Move, At: Pt(1, 1), HasAt: true, Button: Right}, Limits{}, "move: button is not used by move"},
		{"keys on wait", Action{Kind: Wait, Keys: Chord{"a"}}, Limits{}, "wait: keys is not used by wait"},
		{"at on drag", Action{Kind: Drag, At: Pt(1, 1), HasAt: true, Path: []Point{{X: 1, Y: 1}, {X: 2, Y: 2}}}, Limits{}, "drag: at is not used by drag"},
		{"at without has_at", Action{Kind: Click, At: Pt(3, 4)}, Limits{}, "click: at (3,4) is set but has_at is false"},
		{"move without at", Action{Kind: Move}, Limits{}, "move: at is required"},
		{"NaN at", at(nan, 1), Limits{}, "click: at (NaN,1) is not a finite point"},
		{"Inf at", at(1, inf), Limits{}, "click: at (1,+Inf) is not a finite point"},
		{"unknown button", Action{Kind: Click, Button: 9}, Limits{}, "click: unknown button button(9)"},
		{"non-modifier held", Action{Kind: Click, Modifiers: Chord{"a"}}, Limits{}, "click: modifiers: a is not a modifier key"},
		{"modifier twice", Action{Kind: Click, Modifiers: Chord{Shift, Shift}}, Limits{}, "click: modifiers: Shift appears twice"},
		{"modifier not canonical", Action{Kind: Scroll, DeltaY: 1, Modifiers: Chord{"ctrl"}}, Limits{}, `scroll: modifiers: "ctrl" is not a canonical key name, want "Control"`},
		{"drag one point", Action{Kind: Drag, Path: []Point{{X: 1, Y: 1}}}, Limits{}, "drag: path needs at least 2 points, it has 1"},
		{"drag long path", Action{Kind: Drag, Path: make([]Point, 513)}, Limits{}, "drag: path has 513 points, the limit is 512"},
		{"drag NaN", Action{Kind: Drag, Path: []Point{{X: 1, Y: 1}, {X: nan, Y: 2}}}, Limits{}, "drag: path[1] (NaN,2) is not a finite point"},
		{"scroll zero", Action{Kind: Scroll, At: Pt(1, 1), HasAt: true}, Limits{}, "scroll: dx and dy are both zero"},
		{"scroll NaN", Action{Kind: Scroll, DeltaX: nan}, Limits{}, "scroll: scroll delta (NaN,0) is not finite"},
		{"type empty", Action{Kind: Type}, Limits{}, "type: text is empty"},
		{"type 10 MB", Action{Kind: Type, Text: strings.Repeat("x", 10<<20)}, Limits{}, "type: text is 10485760 bytes, the limit is 10000"},
		{"type over a custom limit", Action{Kind: Type, Text: "abcd"}, Limits{MaxText: 3}, "type: text is 4 bytes, the limit is 3"},
		{"type bad UTF-8", Action{Kind: Type, Text: "a\xffb"}, Limits{}, "type: text is not valid UTF-8"},
		{"keypress empty", Action{Kind: Keypress}, Limits{}, "keypress: keys are empty"},
		{"keypress empty slice", Action{Kind: Keypress, Keys: Chord{}}, Limits{}, "keypress: keys are empty"},
		{"keypress unknown", Action{Kind: Keypress, Keys: Chord{"Pgdwn"}}, Limits{}, `keypress: keys: unknown key "Pgdwn" (closest: PageDown, ArrowDown, PageUp)`},
		{"keypress main first", Action{Kind: Keypress, Keys: Chord{"c", Control}}, Limits{}, "keypress: keys: main key c must come last"},
		{"keypress two mains", Action{Kind: Keypress, Keys: Chord{"a", "b"}}, Limits{}, "keypress: keys: two main keys, a and b"},
		{"hold key no duration", Action{Kind: HoldKey, Keys: Chord{"a"}}, Limits{}, "hold_key: duration is required"},
		{"hold key too long", Action{Kind: HoldKey, Keys: Chord{"a"}, Duration: time.Minute}, Limits{}, "hold_key: duration 1m0s is over the limit of 30s"},
		{"wait negative", Action{Kind: Wait, Duration: -time.Second}, Limits{}, "wait: duration -1s is negative"},
		{"wait over a custom limit", Action{Kind: Wait, Duration: 2 * time.Second}, Limits{MaxDuration: time.Second}, "wait: duration 2s is over the limit of 1s"},
		{"zoom empty", Action{Kind: Zoom, Region: Rect{Pt(5, 5), Pt(5, 9)}}, Limits{}, "zoom: region [(5,5)-(5,9)] is empty"},
		{"zoom NaN", Action{Kind: Zoom, Region: Rect{Pt(0, 0), Pt(inf, 9)}}, Limits{}, "zoom: region [(0,0)-(+Inf,9)] is not finite"},
		{"navigate empty", Action{Kind: Navigate}, Limits{}, "navigate: url is required"},
		{"navigate relative", Action{Kind: Navigate, URL: "/path"}, Limits{}, `navigate: url "/path": want an absolute http or https URL, or about:blank`},
		{"navigate file", Action{Kind: Navigate, URL: "file:///etc/passwd"}, Limits{}, `navigate: url "file:///etc/passwd": want an absolute http or https URL, or about:blank`},
		{"navigate javascript", Action{Kind: Navigate, URL: "javascript:alert(1)"}, Limits{}, `navigate: url "javascript:alert(1)": want an absolute http or https URL, or about:blank`},
		{"navigate no host", Action{Kind: Navigate, URL: "http:///x"}, Limits{}, `navigate: url "http:///x" has no host`},
		{"navigate bad", Action{Kind: Navigate, URL: "http://a b/"}, Limits{}, `navigate: url "http://a b/" does not parse`},
		{"navigate long", Action{Kind: Navigate, URL: "http://x/" + strings.Repeat("a", 2048)}, Limits{}, "navigate: url is 2057 bytes, the limit is 2048"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate(tt.l)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate(%v) = %v, want nil", tt.a.LogValue(), err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid)):
				t.Errorf("Validate(%v) = %v, want %q wrapping ErrInvalid", tt.a.LogValue(), err, tt.want)
			}
		})
	}
}

func TestValidateBatch(t *testing.T) {
	click := Action{Kind: Click, At: Pt(1, 1), HasAt: true}
	tests := []struct {
		name  string
		batch []Action
		l     Limits
		want  string
	}{
		{"one", []Action{click}, Limits{}, ""},
		{"at the limit", make32(click), Limits{}, ""},
		{"empty", nil, Limits{}, "empty batch"},
		{"over the limit", append(make32(click), click), Limits{}, "batch has 33 actions, the limit is 32"},
		{"over a custom limit", []Action{click, click}, Limits{MaxBatch: 1}, "batch has 2 actions, the limit is 1"},
		{"bad action", []Action{click, click, click, {Kind: Click, Text: "x"}}, Limits{}, "action 3 (click): text is not used by click"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateBatch(tt.batch, tt.l)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ValidateBatch(%d actions) = %v, want nil", len(tt.batch), err)
			case tt.want != "" && (err == nil || err.Error() != tt.want || !errors.Is(err, ErrInvalid)):
				t.Errorf("ValidateBatch(%d actions) = %v, want %q wrapping ErrInvalid", len(tt.batch), err, tt.want)
			}
		})
	}
}

func make32(a Action) []Action {
	b := make([]Action, 32)
	for i := range b {
		b[i] = a
	}
	return b
}

// FuzzValidate checks that Validate and Policy.Check never panic, and that
// an action Validate accepts respects the limits.
func FuzzValidate(f *testing.F) {
	f.Add(uint8(Click), 1.0, 2.0, 0.0, 0.0, true, uint8(0), "", "", "", int64(0), 0)
	f.Add(uint8(Type), 0.0, 0.0, 0.0, 0.0, false, uint8(0), "hello", "", "", int64(0), 0)
	f.Add(uint8(Keypress), 0.0, 0.0, 0.0, 0.0, false, uint8(0), "", "Control+w", "", int64(0), 0)
	f.Add(uint8(HoldKey), 0.0, 0.0, 0.0, 0.0, false, uint8(0), "", "Shift", "", int64(time.Second), 0)
	f.Add(uint8(Drag), 1.0, 1.0, 5.0, 5.0, false, uint8(1), "", "", "", int64(0), 3)
	f.Add(uint8(Scroll), 1.0, 1.0, 0.0, -3.0, true, uint8(0), "", "Meta", "", int64(0), 0)
	f.Add(uint8(Navigate), 0.0, 0.0, 0.0, 0.0, false, uint8(0), "", "", "http://localhost@evil.test/", int64(0), 0)
	f.Add(uint8(Zoom), 0.0, 0.0, 10.0, 10.0, false, uint8(0), "", "", "", int64(0), 0)
	pol := Standard()
	pol.Hosts = []string{"localhost:8080", "*.example.com"}
	f.Fuzz(func(t *testing.T, kind uint8, x, y, dx, dy float64, hasAt bool, button uint8, text, keys, url string, dur int64, n int) {
		a := Action{Kind: Kind(kind), At: Pt(x, y), HasAt: hasAt, Button: Button(button), DeltaX: dx, DeltaY: dy,
			Text: text, URL: url, Duration: time.Duration(dur), Region: Rect{Pt(x, y), Pt(dx, dy)}}
		if n = n % 600; n > 0 {
			a.Path = make([]Point, n)
			for i := range a.Path {
				a.Path[i] = Pt(x+float64(i)*dx, y+float64(i)*dy)
			}
		}
		for _, k := range strings.Split(keys, "+") {
			if k != "" {
				a.Keys = append(a.Keys, Key(k))
			}
		}
		if a.Kind.IsPointer() {
			a.Modifiers, a.Keys = a.Keys, nil
		}
		err := a.Validate(Limits{})
		_ = pol.Check(a)
		_ = Policy{}.Check(a)
		_ = ValidateBatch([]Action{a, a}, Limits{})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("Validate(%v) = %v, want an error wrapping ErrInvalid", a.LogValue(), err)
			}
			return
		}
		switch {
		case a.Kind == KindInvalid || a.Kind >= kindEnd:
			t.Errorf("Validate accepted kind %v", a.Kind)
		case len(a.Text) > 10000, len(a.Path) > 512, a.Duration > 30*time.Second, a.Duration < 0:
			t.Errorf("Validate accepted %v over its limits", a.LogValue())
		case a.HasAt && !finite(a.At):
			t.Errorf("Validate accepted a point that is not finite: %v", a.At)
		}
	})
}
