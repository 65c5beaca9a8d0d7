// Package actions is Spotter's canonical action model: the UI actions a model
// may propose, their validation, key-name normalization across dialects, and
// the allowlist Policy that decides which of them may run at all.
//
// An Action is plain data. It is decoded from a provider's wire format,
// validated, checked against a Policy, logged, shown to a human for approval,
// mapped from model coordinates to display pixels (package screen) and finally
// performed by a display backend. It never carries behaviour.
//
// This package imports nothing from the rest of the module.
package actions

import (
	"fmt"
	"log/slog"
	"time"
)

// Kind says what an Action does. Kinds are stored and sent over the wire by
// name; add new ones at the end and never reorder.
type Kind uint8

const (
	KindInvalid    Kind = iota
	Screenshot          // capture the display; no side effect
	Click               // press and release Button at At
	DoubleClick         // two clicks at At
	TripleClick         // three clicks at At
	MouseDown           // press Button at At (or at the cursor if At is unset)
	MouseUp             // release Button at At (or at the cursor)
	Move                // move the pointer to At
	Drag                // press at Path[0], move through Path, release at the last point
	Scroll              // wheel at At by (DeltaX, DeltaY) image pixels
	Type                // type Text
	Keypress            // press and release one chord, Keys
	HoldKey             // hold the chord Keys for Duration
	Wait                // wait for Duration
	Zoom                // capture Region at full resolution
	CursorPosition      // report where the pointer is
	Navigate            // load URL
	GoBack              // history back
	GoForward           // history forward
	ListTabs            // report the open tabs (browsers)
	SwitchTab           // make tab Tab (0-based, as ListTabs numbers them) the active one
	CloseTab            // close tab Tab; the session always keeps one page open
	Dialog              // answer the open JavaScript dialog: Accept or dismiss, with Text for a prompt
	Upload              // answer the open file chooser with Files (paths the Policy makes available)
	kindEnd
)

var kindNames = [...]string{
	KindInvalid:    "invalid",
	Screenshot:     "screenshot",
	Click:          "click",
	DoubleClick:    "double_click",
	TripleClick:    "triple_click",
	MouseDown:      "mouse_down",
	MouseUp:        "mouse_up",
	Move:           "move",
	Drag:           "drag",
	Scroll:         "scroll",
	Type:           "type",
	Keypress:       "keypress",
	HoldKey:        "hold_key",
	Wait:           "wait",
	Zoom:           "zoom",
	CursorPosition: "cursor_position",
	Navigate:       "navigate",
	GoBack:         "go_back",
	GoForward:      "go_forward",
	ListTabs:       "list_tabs",
	SwitchTab:      "switch_tab",
	CloseTab:       "close_tab",
	Dialog:         "dialog",
	Upload:         "upload",
}

// String returns the wire name of k, such as "double_click".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Kinds returns every valid kind, in order.
func Kinds() []Kind {
	ks := make([]Kind, 0, kindEnd-1)
	for k := KindInvalid + 1; k < kindEnd; k++ {
		ks = append(ks, k)
	}
	return ks
}

// ParseKind returns the Kind whose wire name is s.
func ParseKind(s string) (Kind, error) {
	for k := KindInvalid + 1; k < kindEnd; k++ {
		if kindNames[k] == s {
			return k, nil
		}
	}
	return KindInvalid, fmt.Errorf("%w: unknown action kind %q", ErrInvalid, s)
}

// MarshalText encodes k by name, so that stored kinds survive renumbering.
func (k Kind) MarshalText() ([]byte, error) {
	if k == KindInvalid || k >= kindEnd {
		return nil, fmt.Errorf("%w: kind %d", ErrInvalid, uint8(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText decodes a kind by name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// IsPointer reports whether k acts at a point on the display.
func (k Kind) IsPointer() bool {
	switch k {
	case Click, DoubleClick, TripleClick, MouseDown, MouseUp, Move, Drag, Scroll:
		return true
	}
	return false
}

// Button is a mouse button.
type Button uint8

const (
	Left Button = iota // the zero Button is the left one
	Right
	Middle
	Back
	Forward
)

var buttonNames = [...]string{Left: "left", Right: "right", Middle: "middle", Back: "back", Forward: "forward"}

func (b Button) String() string {
	if int(b) < len(buttonNames) {
		return buttonNames[b]
	}
	return fmt.Sprintf("button(%d)", uint8(b))
}

// ParseButton accepts the button names of every provider dialect
// ("left", "right", "middle", "wheel", "back", "forward").
func ParseButton(s string) (Button, error) {
	switch s {
	case "", "left", "LEFT", "primary":
		return Left, nil
	case "right", "RIGHT", "secondary":
		return Right, nil
	case "middle", "MIDDLE", "wheel", "WHEEL", "auxiliary":
		return Middle, nil
	case "back", "BACK":
		return Back, nil
	case "forward", "FORWARD":
		return Forward, nil
	}
	return Left, fmt.Errorf("%w: unknown mouse button %q (want left, right, middle, back or forward)", ErrInvalid, s)
}

// MarshalText encodes b by name.
func (b Button) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText decodes a button by name.
func (b *Button) UnmarshalText(t []byte) error {
	v, err := ParseButton(string(t))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// Point is a position in some coordinate space; which one depends on where
// the Point travels (model space in an Action, CSS pixels in a screen.Mapped).
//
// Ref, when set, names an element of a page's snapshot instead (an MCP
// client's {"ref": "e12"}): the executor resolves it to the element's
// visible centre on the current screenshot before anything else looks at
// the action, and keeps the ref beside the point it resolved to, for the
// record. A display never receives a point whose ref is unresolved.
type Point struct {
	X   float64 `json:"x"`
	Y   float64 `json:"y"`
	Ref string  `json:"ref,omitempty"`
}

// Pt is shorthand for Point{x, y}.
func Pt(x, y float64) Point { return Point{X: x, Y: y} }

func (p Point) String() string {
	if p.Ref != "" {
		return fmt.Sprintf("%s(%g,%g)", p.Ref, p.X, p.Y)
	}
	return fmt.Sprintf("(%g,%g)", p.X, p.Y)
}

// Rect is an axis-aligned rectangle from Min (inclusive) to Max (exclusive).
type Rect struct {
	Min Point `json:"min"`
	Max Point `json:"max"`
}

// Dx returns the width of r.
func (r Rect) Dx() float64 { return r.Max.X - r.Min.X }

// Dy returns the height of r.
func (r Rect) Dy() float64 { return r.Max.Y - r.Min.Y }

// Empty reports whether r has no area.
func (r Rect) Empty() bool { return r.Max.X <= r.Min.X || r.Max.Y <= r.Min.Y }

func (r Rect) String() string { return fmt.Sprintf("[%v-%v]", r.Min, r.Max) }

// Action is one step requested by a model. Coordinates are in the model's
// coordinate space (see screen.Space) until package screen maps them.
type Action struct {
	Kind Kind `json:"kind"`

	// Pointer actions.
	At        Point   `json:"at,omitzero"`     // Click, DoubleClick, TripleClick, MouseDown, MouseUp, Move, Scroll
	HasAt     bool    `json:"has_at,omitzero"` // At was given; MouseDown/MouseUp/clicks without it act at the cursor
	Path      []Point `json:"path,omitempty"`  // Drag: two or more points
	Button    Button  `json:"button,omitzero"`
	Modifiers Chord   `json:"modifiers,omitempty"` // modifier keys held during a pointer action
	DeltaX    float64 `json:"dx,omitzero"`         // Scroll: pixels right (negative: left), in the model's space
	DeltaY    float64 `json:"dy,omitzero"`         // Scroll: pixels down (negative: up)

	// Keyboard actions.
	Text string `json:"text,omitempty"` // Type; may be a secret, so LogValue never shows it
	Keys Chord  `json:"keys,omitempty"` // Keypress, HoldKey: one chord, modifiers first

	Duration time.Duration `json:"duration,omitzero"` // HoldKey, Wait
	Region   Rect          `json:"region,omitzero"`   // Zoom
	URL      string        `json:"url,omitempty"`     // Navigate

	Tab    int      `json:"tab,omitzero"`    // SwitchTab, CloseTab
	Accept bool     `json:"accept,omitzero"` // Dialog: accept (OK) rather than dismiss (Cancel)
	Files  []string `json:"files,omitempty"` // Upload: paths, as the Policy names them

	// Secret marks an action whose Text must never be shown: typing into
	// a password, one-time-code or payment field, a secret placeholder.
	// The executor decides it before anything about the action is
	// recorded; every record then shows Masked().
	Secret bool `json:"secret,omitzero"`
}

// SecretMask is what a secret action's text is recorded as.
const SecretMask = "[secret]"

// Masked returns a with its text replaced by SecretMask when it is secret:
// the form in which every record, stream and screen shows it.
func (a Action) Masked() Action {
	if a.Secret && a.Text != "" {
		a.Text = SecretMask
	}
	return a
}

// LogValue keeps typed text out of logs: only its length is shown.
func (a Action) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("kind", a.Kind.String())}
	switch {
	case a.Kind == Drag:
		attrs = append(attrs, slog.Int("points", len(a.Path)))
	case a.Kind.IsPointer() && a.HasAt:
		attrs = append(attrs, slog.String("at", a.At.String()))
	}
	if len(a.Keys) > 0 {
		attrs = append(attrs, slog.String("keys", a.Keys.String()))
	}
	if a.Text != "" {
		attrs = append(attrs, slog.Int("text_len", len(a.Text)))
	}
	if a.URL != "" {
		attrs = append(attrs, slog.String("url", a.URL))
	}
	return slog.GroupValue(attrs...)
}
