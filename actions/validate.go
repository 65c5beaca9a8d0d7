package actions

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits bounds what one action, or one batch, may ask for. The zero value
// of each field means its default.
type Limits struct {
	MaxText     int           // bytes of Type text; default 10000
	MaxBatch    int           // actions in one batch; default 32
	MaxDuration time.Duration // HoldKey and Wait; default 30s
	MaxPath     int           // Drag points; default 512
	MaxURL      int           // bytes of a Navigate URL; default 2048
}

func (l Limits) orDefaults() Limits {
	return Limits{
		MaxText:     cmp.Or(l.MaxText, 10000),
		MaxBatch:    cmp.Or(l.MaxBatch, 32),
		MaxDuration: cmp.Or(l.MaxDuration, 30*time.Second),
		MaxPath:     cmp.Or(l.MaxPath, 512),
		MaxURL:      cmp.Or(l.MaxURL, 2048),
	}
}

// Validate reports whether a is well formed and within l. The error wraps
// ErrInvalid and names the field and the reason, with numbers:
// "type: text is 10485760 bytes, the limit is 10000".
//
// Validate checks what a kind needs, and rejects any field the kind does
// not use (Text on a click is an error, not ignored), so that an adapter's
// mistake cannot pass silently. In particular:
//   - Move needs At; the clicks, MouseDown, MouseUp and Scroll act at the
//     pointer's current position when HasAt is false. At without HasAt is an
//     error. Drag needs a Path of at least two points and no At.
//   - Coordinates must be finite; whether they lie on the display is for
//     package screen to decide.
//   - Modifiers hold modifier keys only; Keys is one canonical chord
//     (see ParseChord), possibly of modifiers alone.
//   - HoldKey's Duration is in (0, MaxDuration], Wait's in [0, MaxDuration].
//   - Type's Text is non-empty UTF-8; Scroll moves by a nonzero delta; Zoom's
//     Region is finite and non-empty.
//   - Navigate's URL is "about:blank" or an absolute http or https URL
//     with a host.
func (a Action) Validate(l Limits) error {
	if err := a.validate(l.orDefaults()); err != nil {
		return fmt.Errorf("%s: %w", a.Kind, err)
	}
	return nil
}

// ValidateBatch validates every action of a batch, and the batch's length.
// An error names the action: "action 3 (click): at is required".
func ValidateBatch(batch []Action, l Limits) error {
	l = l.orDefaults()
	switch {
	case len(batch) == 0:
		return invalidf("empty batch")
	case len(batch) > l.MaxBatch:
		return invalidf("batch has %d actions, the limit is %d", len(batch), l.MaxBatch)
	}
	for i, a := range batch {
		if err := a.validate(l); err != nil {
			return fmt.Errorf("action %d (%s): %w", i, a.Kind, err)
		}
	}
	return nil
}

// fields is a set of Action fields, to say which ones a kind uses.
type fields uint16

const (
	fAt fields = 1 << iota
	fPath
	fButton
	fModifiers
	fDelta
	fText
	fKeys
	fDuration
	fRegion
	fURL
	fTab
	fAccept
	fFiles
)

var fieldNames = [...]string{"at", "path", "button", "modifiers", "dx/dy", "text", "keys", "duration", "region", "url", "tab", "accept", "files"}

var kindFields = [kindEnd]fields{
	Click:       fAt | fButton | fModifiers,
	DoubleClick: fAt | fButton | fModifiers,
	TripleClick: fAt | fButton | fModifiers,
	MouseDown:   fAt | fButton | fModifiers,
	MouseUp:     fAt | fButton | fModifiers,
	Move:        fAt | fModifiers,
	Drag:        fPath | fButton | fModifiers,
	Scroll:      fAt | fModifiers | fDelta,
	Type:        fText,
	Keypress:    fKeys,
	HoldKey:     fKeys | fDuration,
	Wait:        fDuration,
	Zoom:        fRegion,
	Navigate:    fURL,
	SwitchTab:   fTab,
	CloseTab:    fTab,
	Dialog:      fAccept | fText,
	Upload:      fFiles,
	// Screenshot, CursorPosition, GoBack, GoForward and ListTabs use no field.
}

// present returns the fields of a that are set.
func (a Action) present() fields {
	var f fields
	set := func(b bool, x fields) {
		if b {
			f |= x
		}
	}
	set(a.HasAt || a.At != Point{}, fAt)
	set(len(a.Path) > 0, fPath)
	set(a.Button != Left, fButton)
	set(len(a.Modifiers) > 0, fModifiers)
	set(a.DeltaX != 0 || a.DeltaY != 0, fDelta)
	set(a.Text != "", fText)
	set(len(a.Keys) > 0, fKeys)
	set(a.Duration != 0, fDuration)
	set(a.Region != Rect{}, fRegion)
	set(a.URL != "", fURL)
	set(a.Tab != 0, fTab)
	set(a.Accept, fAccept)
	set(len(a.Files) > 0, fFiles)
	return f
}

func (a Action) validate(l Limits) error {
	if a.Kind == KindInvalid || a.Kind >= kindEnd {
		return invalidf("unknown kind")
	}
	if err := a.checkUnused(); err != nil {
		return err
	}
	if err := a.checkPointer(l); err != nil {
		return err
	}
	if err := a.checkKeys(); err != nil {
		return err
	}
	if err := a.checkDuration(l); err != nil {
		return err
	}
	return a.checkKind(l)
}

// checkUnused rejects the first field a sets that its kind does not use.
func (a Action) checkUnused() error {
	extra := a.present() &^ kindFields[a.Kind]
	for i, name := range fieldNames {
		if extra&(1<<i) != 0 {
			return invalidf("%s is not used by %s", name, a.Kind)
		}
	}
	return nil
}

// checkPointer checks the pointer's fields: where it acts (At, a drag's
// Path), the button and held modifiers.
func (a Action) checkPointer(l Limits) error {
	uses := kindFields[a.Kind]
	if uses&fAt != 0 {
		switch {
		case !a.HasAt && a.At != Point{}:
			return invalidf("at %v is set but has_at is false", a.At)
		case !a.HasAt && a.Kind == Move:
			return invalidf("at is required")
		case !finite(a.At):
			return invalidf("at %v is not a finite point", a.At)
		}
	}
	if a.Kind == Drag {
		if err := checkPath(a.Path, l.MaxPath); err != nil {
			return err
		}
	}
	if uses&fButton != 0 && a.Button > Forward {
		return invalidf("unknown button %v", a.Button)
	}
	if len(a.Modifiers) > 0 {
		if err := checkChord(a.Modifiers, true); err != nil {
			return fmt.Errorf("modifiers: %w", err)
		}
	}
	return nil
}

// checkPath checks a drag's path: 2..limit finite points.
func checkPath(path []Point, limit int) error {
	if len(path) < 2 {
		return invalidf("path needs at least 2 points, it has %d", len(path))
	}
	if len(path) > limit {
		return invalidf("path has %d points, the limit is %d", len(path), limit)
	}
	for i, p := range path {
		if !finite(p) {
			return invalidf("path[%d] %v is not a finite point", i, p)
		}
	}
	return nil
}

// checkKeys checks the chord of a kind that presses keys.
func (a Action) checkKeys() error {
	if kindFields[a.Kind]&fKeys == 0 {
		return nil
	}
	if len(a.Keys) == 0 {
		return invalidf("keys are empty")
	}
	if err := checkChord(a.Keys, false); err != nil {
		return fmt.Errorf("keys: %w", err)
	}
	return nil
}

// checkDuration checks HoldKey's and Wait's duration.
func (a Action) checkDuration(l Limits) error {
	if kindFields[a.Kind]&fDuration == 0 {
		return nil
	}
	switch {
	case a.Duration < 0:
		return invalidf("duration %v is negative", a.Duration)
	case a.Duration == 0 && a.Kind == HoldKey:
		return invalidf("duration is required")
	case a.Duration > l.MaxDuration:
		return invalidf("duration %v is over the limit of %v", a.Duration, l.MaxDuration)
	}
	return nil
}

// checkKind checks the fields only one or two kinds use.
func (a Action) checkKind(l Limits) error {
	switch a.Kind {
	case Scroll:
		switch {
		case math.IsNaN(a.DeltaX) || math.IsInf(a.DeltaX, 0) || math.IsNaN(a.DeltaY) || math.IsInf(a.DeltaY, 0):
			return invalidf("scroll delta (%g,%g) is not finite", a.DeltaX, a.DeltaY)
		case a.DeltaX == 0 && a.DeltaY == 0:
			return invalidf("dx and dy are both zero")
		}
	case SwitchTab, CloseTab:
		if a.Tab < 0 || a.Tab > 999 {
			return invalidf("tab %d is out of range", a.Tab)
		}
	case Dialog:
		if a.Text != "" {
			return checkText(a.Text, l.MaxText)
		}
	case Upload:
		return checkFiles(a.Files)
	case Type:
		if a.Text == "" {
			return invalidf("text is empty")
		}
		return checkText(a.Text, l.MaxText)
	case Zoom:
		switch {
		case !finite(a.Region.Min) || !finite(a.Region.Max):
			return invalidf("region %v is not finite", a.Region)
		case a.Region.Empty():
			return invalidf("region %v is empty", a.Region)
		}
	case Navigate:
		return checkURL(a.URL, l.MaxURL)
	}
	return nil
}

// checkText checks typed text, or a prompt dialog's answer: at most limit
// bytes of UTF-8.
func checkText(text string, limit int) error {
	switch {
	case len(text) > limit:
		return invalidf("text is %d bytes, the limit is %d", len(text), limit)
	case !utf8.ValidString(text):
		return invalidf("text is not valid UTF-8")
	}
	return nil
}

// checkFiles checks Upload's paths: 1..16 non-empty UTF-8 paths without
// NUL, each at most 4096 bytes.
func checkFiles(files []string) error {
	switch {
	case len(files) == 0:
		return invalidf("files are required")
	case len(files) > 16:
		return invalidf("%d files, the limit is 16", len(files))
	}
	for i, f := range files {
		if f == "" || len(f) > 4096 || !utf8.ValidString(f) || strings.ContainsRune(f, 0) {
			return invalidf("files[%d] is not a usable path", i)
		}
	}
	return nil
}

func checkURL(s string, limit int) error {
	switch {
	case s == "":
		return invalidf("url is required")
	case len(s) > limit:
		return invalidf("url is %d bytes, the limit is %d", len(s), limit)
	case s == "about:blank":
		return nil
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return invalidf("url %q does not parse", clip(s))
	case u.Scheme != "http" && u.Scheme != "https":
		return invalidf("url %q: want an absolute http or https URL, or about:blank", clip(s))
	case u.Hostname() == "":
		return invalidf("url %q has no host", clip(s))
	}
	return nil
}

func finite(p Point) bool {
	return !math.IsNaN(p.X) && !math.IsInf(p.X, 0) && !math.IsNaN(p.Y) && !math.IsInf(p.Y, 0)
}

// reasonError is an error whose text is the reason alone, "text is empty",
// and which matches its sentinel (ErrInvalid, ErrNotAllowed) with errors.Is.
// Its text goes back to the model, so it does not repeat the sentinel's.
type reasonError struct {
	msg      string
	sentinel error
}

func (e *reasonError) Error() string { return e.msg }
func (e *reasonError) Unwrap() error { return e.sentinel }

func invalidf(format string, args ...any) error {
	return &reasonError{fmt.Sprintf(format, args...), ErrInvalid}
}

func notAllowedf(format string, args ...any) error {
	return &reasonError{fmt.Sprintf(format, args...), ErrNotAllowed}
}

// clip shortens s for an error message.
func clip(s string) string {
	const n = 64
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
