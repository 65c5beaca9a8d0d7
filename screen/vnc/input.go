package vnc

import (
	"context"
	"errors"
	"fmt"
	"image"
	"math"
	"strings"
	"time"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/screen"
)

// maxWheelSteps bounds the wheel steps of one Scroll along each axis.
const maxWheelSteps = 200

// RFB button mask bits: bit n is X button n+1.
const (
	buttonLeft       = 1 << 0
	buttonMiddle     = 1 << 1
	buttonRight      = 1 << 2
	buttonWheelUp    = 1 << 3
	buttonWheelDown  = 1 << 4
	buttonWheelLeft  = 1 << 5
	buttonWheelRight = 1 << 6
)

// Perform runs one mapped action; its coordinates are screen pixels. It
// returns once the server has handled the input (with a server that does
// fences, as TigerVNC does; otherwise once the input is written to it),
// not when the screen has settled (Capture waits for that). Modifier keys of a pointer
// action are held around it, and every key and button an action presses
// is released before it returns, unless the action is a MouseDown.
//
// Navigate, GoBack and GoForward fail with an error wrapping
// screen.ErrUnsupported: a desktop has no URL. So do the back and forward
// mouse buttons, which RFB and Xvnc lack, and Screenshot, Wait, Zoom and
// CursorPosition, which are the harness's own business. A point outside the
// screen gives an error wrapping screen.ErrOutOfBounds, and a malformed
// action one wrapping actions.ErrInvalid; either way nothing is sent.
func (d *Display) Perform(ctx context.Context, m screen.Mapped) error {
	d.op.Lock()
	defer d.op.Unlock()
	if err := d.gone(); err != nil {
		return fmt.Errorf("%s: %w", m.Kind, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", m.Kind, context.Cause(ctx))
	}
	err := d.perform(ctx, m.Action)
	if err == nil || !errors.Is(err, actions.ErrInvalid) && !errors.Is(err, screen.ErrUnsupported) && !errors.Is(err, screen.ErrOutOfBounds) {
		// Input went out (actions are checked whole before any of
		// it is sent): the next capture waits for its effects, from
		// when the server has handled it, which a loaded server may
		// do late.
		if _, serr := d.sync(ctx); err == nil {
			err = serr
		}
		d.markInput()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.Kind, err)
	}
	return nil
}

func (d *Display) perform(ctx context.Context, a actions.Action) error {
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick,
		actions.MouseDown, actions.MouseUp, actions.Move, actions.Drag, actions.Scroll:
		return d.pointerAction(ctx, a)
	case actions.Type:
		if err := d.send(func(b []byte) []byte { return d.appendLocks(b, false) }); err != nil {
			return err
		}
		return d.withModifiers(a.Modifiers, func(shift bool) error {
			return d.typeText(a.Text, shift)
		})
	case actions.Keypress:
		return d.chord(ctx, a.Keys, 0)
	case actions.HoldKey:
		return d.chord(ctx, a.Keys, a.Duration)
	case actions.Navigate, actions.GoBack, actions.GoForward:
		return fmt.Errorf("a desktop has no URL or history of its own (use a browser window on it instead): %w", screen.ErrUnsupported)
	}
	return screen.ErrUnsupported
}

// buttonBit returns the RFB mask bit of a mouse button.
func buttonBit(b actions.Button) (uint8, error) {
	switch b {
	case actions.Left:
		return buttonLeft, nil
	case actions.Middle:
		return buttonMiddle, nil
	case actions.Right:
		return buttonRight, nil
	case actions.Back, actions.Forward:
		// X calls them buttons 8 and 9. An RFB button mask has 8 bits,
		// so 9 cannot be sent at all, and TigerVNC's Xvnc has a pointer
		// of 7 buttons and drops button 8 without a word.
		return 0, fmt.Errorf("the %v mouse button cannot be sent to a VNC desktop (use a keyboard shortcut such as Alt+Left instead): %w", b, screen.ErrUnsupported)
	}
	return 0, fmt.Errorf("%w: mouse button %v", actions.ErrInvalid, b)
}

// pixel converts a point in screen pixels (CSS px at DPR 1) to the pixel
// that contains it. A point beyond the screen's far edge by less than a
// pixel is clamped to the last pixel; anything further out is an error
// wrapping screen.ErrOutOfBounds.
func (d *Display) pixel(p actions.Point) (image.Point, error) {
	if !finite(p.X, p.Y) {
		return image.Point{}, fmt.Errorf("%w: point %v", actions.ErrInvalid, p)
	}
	s := d.size()
	if p.X < 0 || p.Y < 0 || p.X > float64(s.W) || p.Y > float64(s.H) {
		return image.Point{}, fmt.Errorf("point %v is outside the %dx%d screen: %w", p, s.W, s.H, screen.ErrOutOfBounds)
	}
	return image.Pt(min(int(math.Floor(p.X)), s.W-1), min(int(math.Floor(p.Y)), s.H-1)), nil
}

// Pacing of multiple clicks and drags. X stamps each input event with the
// server's time in milliseconds, and applications read multiple clicks and
// motion from those times:
//
//   - Chromium counts a press as the next click of a double or triple click
//     only if its time differs from the previous press's (and is within 500
//     ms); presses handled in the same millisecond are separate clicks. So
//     the clicks of a multiple click go out clickGap apart, each after the
//     server confirmed the previous one (a fence), which puts them in
//     distinct milliseconds even when the server reads them late, and
//     still within Xt's 200 ms multi-click time.
//   - Chromium and GTK merge the motion events that are queued together
//     (Chromium into one mousemove per frame). So a drag stops at every
//     point of its path, once the server has handled the moves that lead
//     there, for dragDwell (a few frames) or the longest of the desktop's
//     latest reactions to input if that is longer (a loaded machine
//     handles input late), at most half a second: the application sees
//     the pointer at each point the action named. The interpolated moves
//     between them go out together, for applications that follow every
//     motion event.
const (
	clickGap  = 20 * time.Millisecond
	dragDwell = 50 * time.Millisecond
)

// dwell returns how long a drag stops at each point of its path (see
// dragDwell).
func (d *Display) dwell() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	wait := dragDwell
	for _, r := range d.reactions {
		wait = max(wait, min(r, maxReactionWait/2))
	}
	return wait
}

// pause waits until the server has handled the input sent so far, then
// for d more.
func (d *Display) pause(ctx context.Context, wait time.Duration) error {
	if _, err := d.sync(ctx); err != nil {
		return err
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// pointerAction performs a mouse action with a.Modifiers held.
func (d *Display) pointerAction(ctx context.Context, a actions.Action) error {
	var bit uint8
	switch a.Kind {
	case actions.Click, actions.DoubleClick, actions.TripleClick, actions.MouseDown, actions.MouseUp, actions.Drag:
		var err error
		if bit, err = buttonBit(a.Button); err != nil {
			return err
		}
	}
	at := d.pointer
	if a.HasAt || a.Kind == actions.Move || a.Kind == actions.Scroll {
		var err error
		if at, err = d.pixel(a.At); err != nil {
			return err
		}
	}
	var path [][]image.Point
	if a.Kind == actions.Drag {
		if len(a.Path) < 2 {
			return fmt.Errorf("%w: a drag needs at least two points, got %d", actions.ErrInvalid, len(a.Path))
		}
		for _, seg := range dragPoints(a.Path) {
			var pxs []image.Point
			for _, p := range seg {
				px, err := d.pixel(p)
				if err != nil {
					return err
				}
				pxs = append(pxs, px)
			}
			path = append(path, pxs)
		}
	}
	var wheel []uint8
	if a.Kind == actions.Scroll {
		var err error
		if wheel, err = wheelSteps(a.DeltaX, a.DeltaY, d.cfg.WheelStep); err != nil {
			return err
		}
	}
	return d.withModifiers(a.Modifiers, func(bool) error {
		switch a.Kind {
		case actions.Click, actions.DoubleClick, actions.TripleClick:
			n := map[actions.Kind]int{actions.Click: 1, actions.DoubleClick: 2, actions.TripleClick: 3}[a.Kind]
			for i := range n {
				if i > 0 {
					if err := d.pause(ctx, clickGap); err != nil {
						return err
					}
				}
				err := d.send(func(b []byte) []byte {
					b = d.appendMove(b, at)
					b = appendPointerEvent(b, d.buttons|bit, at.X, at.Y)
					d.buttons &^= bit
					return appendPointerEvent(b, d.buttons, at.X, at.Y)
				})
				if err != nil {
					return err
				}
			}
			return nil
		case actions.MouseDown:
			return d.send(func(b []byte) []byte {
				b = d.appendMove(b, at)
				d.buttons |= bit
				return appendPointerEvent(b, d.buttons, at.X, at.Y)
			})
		case actions.MouseUp:
			return d.send(func(b []byte) []byte {
				b = d.appendMove(b, at)
				d.buttons &^= bit
				return appendPointerEvent(b, d.buttons, at.X, at.Y)
			})
		case actions.Move:
			return d.send(func(b []byte) []byte { return d.appendMove(b, at) })
		case actions.Scroll:
			return d.send(func(b []byte) []byte {
				b = d.appendMove(b, at)
				for _, w := range wheel {
					b = appendPointerEvent(b, d.buttons|w, at.X, at.Y)
					b = appendPointerEvent(b, d.buttons, at.X, at.Y)
				}
				return b
			})
		case actions.Drag:
			return d.drag(ctx, path, bit)
		}
		return screen.ErrUnsupported
	})
}

// appendMove appends a pointer event that moves to p with the buttons
// held, unless the pointer is there already.
func (d *Display) appendMove(b []byte, p image.Point) []byte {
	if p == d.pointer && d.moved {
		return b
	}
	d.pointer, d.moved = p, true
	return appendPointerEvent(b, d.buttons, p.X, p.Y)
}

// wheelSteps returns the wheel buttons to press, one per step of step
// pixels: vertical steps first, then horizontal ones.
func wheelSteps(dx, dy, step float64) ([]uint8, error) {
	if !finite(dx, dy) {
		return nil, fmt.Errorf("%w: scroll by (%g,%g)", actions.ErrInvalid, dx, dy)
	}
	var steps []uint8
	for _, axis := range [...]struct {
		delta      float64
		less, more uint8
	}{{dy, buttonWheelUp, buttonWheelDown}, {dx, buttonWheelLeft, buttonWheelRight}} {
		if axis.delta == 0 {
			continue
		}
		n := max(1, round(math.Abs(axis.delta)/step))
		if n > maxWheelSteps {
			return nil, fmt.Errorf("%w: a scroll of %g px is %d wheel steps, more than %d", actions.ErrInvalid, axis.delta, n, maxWheelSteps)
		}
		b := axis.more
		if axis.delta < 0 {
			b = axis.less
		}
		for range n {
			steps = append(steps, b)
		}
	}
	return steps, nil
}

// Drag interpolation: consecutive motion events are at most dragStep px
// apart, with at most dragMaxSteps of them per segment of the path.
const (
	dragStep     = 20
	dragMaxSteps = 25
)

// dragPoints returns the points a drag moves through: {path[0]}, then for
// each further path point the intermediate points on the way to it (on
// long segments) and the point itself.
func dragPoints(path []actions.Point) [][]actions.Point {
	segs := [][]actions.Point{{path[0]}}
	for i := 1; i < len(path); i++ {
		var pts []actions.Point
		from, to := path[i-1], path[i]
		dist := math.Hypot(to.X-from.X, to.Y-from.Y)
		n := min(max(int(math.Ceil(dist/dragStep)), 1), dragMaxSteps)
		if math.IsNaN(dist) {
			n = 1
		}
		for s := 1; s < n; s++ {
			f := float64(s) / float64(n)
			pts = append(pts, actions.Pt(from.X+(to.X-from.X)*f, from.Y+(to.Y-from.Y)*f))
		}
		segs = append(segs, append(pts, to))
	}
	return segs
}

// drag presses at segs[0][0], moves through the segments, stopping at the
// end of each (see dragDwell), and releases at the end of the last. It
// releases the button also when ctx ends on the way. If the connection
// fails on the way, the button stays down on the server, which then has no
// client to release it for.
func (d *Display) drag(ctx context.Context, segs [][]image.Point, bit uint8) error {
	start := segs[0][0]
	err := d.send(func(b []byte) []byte {
		b = d.appendMove(b, start)
		d.buttons |= bit
		return appendPointerEvent(b, d.buttons, start.X, start.Y)
	})
	if err != nil {
		return err
	}
	dwell := d.dwell()
	for _, seg := range segs[1:] {
		if err = d.pause(ctx, dwell); err != nil {
			break
		}
		err = d.send(func(b []byte) []byte {
			for _, p := range seg {
				d.pointer = p
				b = appendPointerEvent(b, d.buttons, p.X, p.Y)
			}
			return b
		})
		if err != nil {
			return err
		}
	}
	if err == nil {
		err = d.pause(ctx, dwell)
	}
	rerr := d.send(func(b []byte) []byte {
		d.buttons &^= bit
		return appendPointerEvent(b, d.buttons, d.pointer.X, d.pointer.Y)
	})
	return errors.Join(err, rerr)
}

// keysym returns the X keysym of a canonical key.
func keysym(k actions.Key) (actions.KeyInfo, error) {
	info, ok := actions.LookupKey(k)
	if !ok || info.Keysym == 0 {
		return info, fmt.Errorf("%w: unknown key %q", actions.ErrInvalid, k)
	}
	return info, nil
}

// withModifiers holds the modifier keys c down while f runs, telling f
// whether Shift is among them, and releases them afterwards even if f
// failed.
func (d *Display) withModifiers(c actions.Chord, f func(shift bool) error) error {
	var syms []uint32
	shift := false
	for _, k := range c {
		if !k.IsModifier() {
			return fmt.Errorf("%w: %q is not a modifier key", actions.ErrInvalid, k)
		}
		info, err := keysym(k)
		if err != nil {
			return err
		}
		syms = append(syms, info.Keysym)
		shift = shift || k == actions.Shift
	}
	return d.holdKeys(context.Background(), syms, 0, func() error { return f(shift) })
}

// holdKeys presses keysyms in order, runs f (after waiting hold from when
// the server handled the presses), and releases the keys in reverse order,
// even if f failed or ctx ended.
func (d *Display) holdKeys(ctx context.Context, syms []uint32, hold time.Duration, f func() error) (err error) {
	if len(syms) > 0 {
		if err := d.send(func(b []byte) []byte {
			for _, s := range syms {
				b = appendKeyEvent(b, true, s)
				d.keys = append(d.keys, s)
			}
			return b
		}); err != nil {
			return err
		}
		defer func() {
			rerr := d.send(func(b []byte) []byte {
				for i := len(syms) - 1; i >= 0; i-- {
					b = appendKeyEvent(b, false, syms[i])
					d.keys = d.keys[:len(d.keys)-1]
				}
				return b
			})
			err = errors.Join(err, rerr)
		}()
	}
	if hold > 0 {
		// The hold counts from when the server has handled the
		// presses, so that X sees the keys down for all of it.
		if err := d.pause(ctx, hold); err != nil {
			return err
		}
	}
	if f == nil {
		return nil
	}
	return f()
}

// chord presses a Keypress or HoldKey chord: the keys down in order, a wait
// of hold, the keys up in reverse order. With Shift in the chord, the main
// key is sent as the character Shift makes of it ("A" for Shift+a), as a
// keyboard would: an X server given "a" while Shift is down would release
// Shift to type it.
func (d *Display) chord(ctx context.Context, c actions.Chord, hold time.Duration) error {
	if len(c) == 0 {
		return fmt.Errorf("%w: no keys", actions.ErrInvalid)
	}
	syms := make([]uint32, 0, len(c))
	shift := false
	for i, k := range c {
		info, err := keysym(k)
		if err != nil {
			return err
		}
		switch {
		case k.IsModifier():
			shift = shift || k == actions.Shift
		case i != len(c)-1:
			return fmt.Errorf("%w: chord %v: only the last key may be a non-modifier", actions.ErrInvalid, c)
		case shift:
			info = shifted(info)
		}
		syms = append(syms, info.Keysym)
	}
	// Keep the lock keys in step, unless the chord presses one.
	locks, keypad := true, false
	for _, s := range syms {
		locks = locks && s != keysymNumLock && s != keysymCapsLock
		keypad = keypad || s >= 0xffb0 && s <= 0xffb9 || s == 0xffac || s == 0xffae // KP_0..KP_9, KP_Separator, KP_Decimal
	}
	if locks {
		if err := d.send(func(b []byte) []byte { return d.appendLocks(b, keypad) }); err != nil {
			return err
		}
	}
	return d.holdKeys(ctx, syms, hold, nil)
}

// shifted returns the key that k's physical key types with Shift on a US
// layout ("A" for "a", "!" for "1"), or k if there is none.
func shifted(k actions.KeyInfo) actions.KeyInfo {
	if k.Shift || len(k.Text) != 1 {
		return k
	}
	for r := rune('!'); r <= '~'; r++ {
		if s, ok := actions.KeyForRune(r); ok && s.Shift && s.Code == k.Code {
			return s
		}
	}
	return k
}

// typeText types text key by key. Characters of a US keyboard that need
// Shift are typed with Shift held (unless the caller holds it already);
// other characters are sent as their own keysyms (Latin-1 keysyms are the
// code points, the rest are 0x01000000 plus the code point), which
// TigerVNC's Xvnc maps to a spare key code on the fly.
func (d *Display) typeText(text string, shiftHeld bool) error {
	type key struct {
		sym   uint32
		shift bool
	}
	var keys []key
	for _, r := range strings.ReplaceAll(text, "\r\n", "\n") {
		info, ok := actions.KeyForRune(r)
		if ok {
			keys = append(keys, key{info.Keysym, info.Shift && !shiftHeld})
			continue
		}
		sym, err := runeKeysym(r)
		if err != nil {
			return err
		}
		keys = append(keys, key{sym, false})
	}
	shift, _ := actions.LookupKey(actions.Shift)
	for _, k := range keys {
		err := d.send(func(b []byte) []byte {
			if k.shift {
				b = appendKeyEvent(b, true, shift.Keysym)
			}
			b = appendKeyEvent(b, true, k.sym)
			b = appendKeyEvent(b, false, k.sym)
			if k.shift {
				b = appendKeyEvent(b, false, shift.Keysym)
			}
			return b
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// runeKeysym returns the X keysym that types r.
func runeKeysym(r rune) (uint32, error) {
	switch {
	case r == 0x7f || r < 0x20 || r >= 0x80 && r < 0xa0 || r == '\uFFFD' || r > 0x10ffff:
		return 0, fmt.Errorf("%w: character %U cannot be typed", actions.ErrInvalid, r)
	case r < 0x100:
		return uint32(r), nil // Latin-1 keysyms are the code points
	}
	return 0x01000000 | uint32(r), nil
}

// releaseAll releases the buttons and keys that actions left held.
func (d *Display) releaseAll() {
	if d.buttons == 0 && len(d.keys) == 0 {
		return
	}
	d.send(func(b []byte) []byte {
		if d.buttons != 0 {
			d.buttons = 0
			b = appendPointerEvent(b, 0, d.pointer.X, d.pointer.Y)
		}
		for i := len(d.keys) - 1; i >= 0; i-- {
			b = appendKeyEvent(b, false, d.keys[i])
		}
		d.keys = nil
		return b
	})
}
