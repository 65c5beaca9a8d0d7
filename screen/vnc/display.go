package vnc

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"io"
	"math"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/screen"
)

// ErrAuth marks a server that refused the password, or that asked for a kind
// of security this client does not speak.
var ErrAuth = errors.New("vnc authentication failed")

// Defaults of Config.
const (
	DefaultSettleTimeout = 3 * time.Second
	DefaultQuietWindow   = 50 * time.Millisecond
	DefaultReactionTime  = 300 * time.Millisecond
	DefaultTimeout       = 10 * time.Second
	DefaultWheelStep     = 120
)

// Config configures a Display. Each zero field is a documented default.
type Config struct {
	// Password is for VNC authentication; empty means the server must
	// offer security type None. Only its first 8 bytes count, as in every
	// VNC implementation.
	Password string
	// Exclusive asks the server to disconnect its other clients. By
	// default the desktop is shared, so a person can watch with a viewer.
	Exclusive bool
	// Encodings are the pixel encodings to ask for, most preferred first,
	// from Raw, CopyRect and ZRLE. Nil means CopyRect and Raw for a unix
	// socket or a loopback address, where bytes are free and Raw is the
	// fastest to decode, and CopyRect, ZRLE and Raw elsewhere. Servers
	// can always send Raw.
	Encodings []Encoding
	// SettleTimeout bounds the wait for the screen to stop changing
	// before a capture; 0 means DefaultSettleTimeout.
	SettleTimeout time.Duration
	// QuietWindow is how long the screen must go without an update to
	// count as settled, at least: twice the longest of the latest gaps
	// between the frames of an animation if that is longer (at most half
	// a second; an animation on a loaded machine draws its frames further
	// apart). 0 means DefaultQuietWindow.
	QuietWindow time.Duration
	// ReactionTime is how long after an input a capture waits at least
	// for the screen to start changing; an input whose effects have not
	// begun by then, or by twice the longest of the desktop's latest
	// reactions to input if that is longer (a loaded machine reacts
	// late), is taken to have none. 0 means DefaultReactionTime.
	ReactionTime time.Duration
	// Timeout bounds the handshake (unless ctx ends sooner), the writing
	// of each message and the wait for the server to confirm that it has
	// handled input; 0 means DefaultTimeout.
	Timeout time.Duration
	// WheelStep is how far, in screen pixels, one step of the mouse wheel
	// scrolls the desktop's applications: a Scroll by a distance is sent
	// as that distance divided by WheelStep wheel steps, rounded (at
	// least one). 0 means DefaultWheelStep, the 120 px that Chromium on X
	// scrolls per step; GTK applications scroll less (about the cube root
	// of the page height, squared), xterm a few lines.
	WheelStep float64
}

func (c Config) withDefaults(network, addr string) Config {
	if c.Encodings == nil {
		c.Encodings = []Encoding{CopyRect, Raw}
		if !local(network, addr) {
			c.Encodings = []Encoding{CopyRect, ZRLE, Raw}
		}
	}
	c.SettleTimeout = cmp.Or(c.SettleTimeout, DefaultSettleTimeout)
	c.QuietWindow = cmp.Or(c.QuietWindow, DefaultQuietWindow)
	c.ReactionTime = cmp.Or(c.ReactionTime, DefaultReactionTime)
	c.Timeout = cmp.Or(c.Timeout, DefaultTimeout)
	c.WheelStep = cmp.Or(c.WheelStep, DefaultWheelStep)
	return c
}

func (c Config) validate() error {
	for _, e := range c.Encodings {
		if e != Raw && e != CopyRect && e != ZRLE {
			return fmt.Errorf("encoding %v: want Raw, CopyRect or ZRLE", e)
		}
	}
	if c.SettleTimeout < 0 || c.QuietWindow < 0 || c.ReactionTime < 0 || c.Timeout < 0 {
		return errors.New("negative timeout")
	}
	if !(c.WheelStep > 0) || math.IsInf(c.WheelStep, 0) {
		return fmt.Errorf("wheel step %g: want a positive number of pixels", c.WheelStep)
	}
	return nil
}

// local reports whether addr is a unix socket or a loopback address.
func local(network, addr string) bool {
	switch network {
	case "unix", "unixpacket":
		return true
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// Display is one RFB connection to a desktop. It keeps a live copy of the
// screen: a goroutine of its own reads every update the server sends into
// it and asks for the next one at once, so a capture of a screen that has
// not changed costs no round trip. Capture and Perform may be called from
// several goroutines; they run one at a time. The caller must call Close.
type Display struct {
	cfg  Config
	conn net.Conn
	name string // the desktop's name, from the server
	dec  *decoder

	wmu  sync.Mutex // serializes writes to conn
	wbuf []byte

	op     sync.Mutex // serializes Capture and Perform
	seq    int        // frames captured
	cached struct {   // the latest encoded capture
		key  captureKey
		data []byte
	}
	pointer image.Point
	moved   bool     // the pointer has been put at pointer
	buttons uint8    // RFB button mask held down
	keys    []uint32 // keysyms held down, in the order pressed

	mu        sync.Mutex // guards the fields below
	live      *image.RGBA
	gen       int       // changes of the live image
	updates   int       // framebuffer updates that changed pixels, after the first
	damagedAt time.Time // when the latest of them arrived
	inputAt   time.Time // when the server had handled the latest input
	// reactions are how long the desktop took to change after the
	// latest inputs that changed it (a ring of the latest ones).
	reactions  [8]time.Duration
	nreactions int
	// gaps are the latest gaps between consecutive updates less than
	// maxQuietWindow/2 apart, with no input between them (a ring).
	gaps      [16]time.Duration
	ngaps     int
	changed   chan struct{} // closed and replaced at every update
	events    []string      // things to tell the model at the next capture
	err       error         // why the display is gone; nil while it works
	leds      int           // the lock keys' LED state the server sent, or -1
	fences    bool          // the server does fences (it sent one)
	fenceSent uint32        // the latest fence this client sent
	fenceDone uint32        // the latest fence the server answered

	ready     chan struct{} // closed when the first update has arrived
	readyOnce sync.Once
	dead      chan struct{} // closed when the connection ends
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// Dial connects to the RFB server at addr on network ("tcp" or "unix", as
// for net.Dial), authenticates, waits for the first full picture of the
// screen, and takes the pointer and the lock keys: it puts the pointer at
// the centre of the screen, and turns NumLock on and CapsLock off (see the
// package documentation). ctx bounds all of that. The display runs one goroutine of its own,
// which reads from the server until Close. A refused password wraps
// ErrAuth.
func Dial(ctx context.Context, network, addr string, cfg Config) (*Display, error) {
	cfg = cfg.withDefaults(network, addr)
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dial vnc %s: %w", addr, err)
	}
	var nd net.Dialer
	conn, err := nd.DialContext(ctx, network, addr)
	if err != nil {
		return nil, fmt.Errorf("dial vnc: %w", err)
	}
	d, err := newDisplay(ctx, conn, cfg)
	if err != nil {
		return nil, fmt.Errorf("dial vnc %s: %w", addr, err)
	}
	return d, nil
}

// Connect is Dial over a connection that dial makes, such as a unix socket
// that a sandbox's agent bridges to its desktop. The connection counts as
// local (see Config.Encodings). ctx bounds the dial, the handshake and the
// first picture.
func Connect(ctx context.Context, dial func(context.Context) (net.Conn, error), cfg Config) (*Display, error) {
	cfg = cfg.withDefaults("unix", "")
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("connect vnc: %w", err)
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect vnc: %w", err)
	}
	d, err := newDisplay(ctx, conn, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect vnc: %w", err)
	}
	return d, nil
}

// newDisplay runs the handshake on conn and starts the display. It closes
// conn if it fails.
func newDisplay(ctx context.Context, conn net.Conn, cfg Config) (*Display, error) {
	deadline := time.Now().Add(cfg.Timeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	fail := func(err error) (*Display, error) {
		stop()
		conn.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (%v)", context.Cause(ctx), err)
		}
		return nil, err
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	si, err := handshake(r, conn, cfg.Password, !cfg.Exclusive)
	if err != nil {
		return fail(err)
	}
	var b []byte
	b = appendSetPixelFormat(b, clientFormat)
	b = appendSetEncodings(b, encodings(cfg))
	b = appendUpdateRequest(b, false, 0, 0, si.W, si.H)
	if _, err := conn.Write(b); err != nil {
		return fail(fmt.Errorf("send setup: %w", err))
	}
	if !stop() {
		return fail(errors.New("canceled"))
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}

	d := &Display{
		cfg:     cfg,
		conn:    conn,
		name:    si.Name,
		dec:     newDecoder(r, si.W, si.H),
		live:    image.NewRGBA(image.Rect(0, 0, si.W, si.H)),
		changed: make(chan struct{}),
		ready:   make(chan struct{}),
		dead:    make(chan struct{}),
		leds:    -1,
	}
	d.wg.Go(d.readLoop)

	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-d.ready:
		if err = d.start(ctx); err == nil {
			return d, nil
		}
		d.Close()
		return nil, err
	case <-d.dead:
		err = d.gone()
	case <-ctx.Done():
		err = context.Cause(ctx)
	case <-t.C:
		err = fmt.Errorf("no picture of the screen within %v", cfg.Timeout)
	}
	d.Close()
	return nil, fmt.Errorf("wait for the first screen update: %w", err)
}

// Name returns the desktop's name, as the server gave it.
func (d *Display) Name() string { return d.name }

// readLoop reads server messages into the live image until the
// connection ends, asking for the next update after each one.
func (d *Display) readLoop() {
	for {
		m, err := d.dec.next()
		if err != nil {
			d.fail(readError(err))
			return
		}
		if m.typ == msgServerFence {
			if d.fence(m) != nil {
				return
			}
			continue
		}
		if m.typ != msgFramebufferUpdate {
			continue
		}
		d.commit(m)
		fb := d.dec.fb.Rect
		// After a resize, ask for the whole screen (RFC 6143 section
		// 7.8.2); otherwise for whatever changes next.
		if d.send(func(b []byte) []byte {
			return appendUpdateRequest(b, !m.resized, 0, 0, fb.Dx(), fb.Dy())
		}) != nil {
			return
		}
	}
}

// commit copies what an update changed into the live image and wakes
// anyone waiting for the screen to change.
func (d *Display) commit(m serverMsg) {
	fb := d.dec.fb
	d.mu.Lock()
	defer d.mu.Unlock()
	// The display is ready at the first update with pixels: a server may
	// send pseudo-encodings (the cursor's shape, the LED state) first.
	first := false
	if len(m.dirty) > 0 {
		d.readyOnce.Do(func() { first = true; close(d.ready) })
	}
	if d.live.Rect != fb.Rect {
		d.live = image.NewRGBA(fb.Rect)
		copyPixels(d.live, fb, fb.Rect, image.Point{})
		d.events = append(d.events, fmt.Sprintf("the screen size changed to %dx%d", fb.Rect.Dx(), fb.Rect.Dy()))
	} else {
		for _, r := range m.dirty {
			copyPixels(d.live, fb, r, r.Min)
		}
	}
	if m.hasLEDs {
		d.leds = int(m.leds)
	}
	if len(m.dirty) > 0 {
		d.gen++
		if !first {
			now := time.Now()
			if d.inputAt.After(d.damagedAt) {
				// The first change since the latest input: how long
				// the desktop took to react to it.
				d.reactions[d.nreactions%len(d.reactions)] = now.Sub(d.inputAt)
				d.nreactions++
			} else if gap := now.Sub(d.damagedAt); gap < maxQuietWindow/2 {
				// Another frame of what is changing the screen.
				d.gaps[d.ngaps%len(d.gaps)] = gap
				d.ngaps++
			}
			d.updates++
			d.damagedAt = now
		}
	}
	d.wakeLocked()
}

// wakeLocked wakes everyone waiting for a change of the display's state.
// d.mu must be held.
func (d *Display) wakeLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// readError says why reading from the server stopped.
func readError(err error) error {
	switch {
	case errors.Is(err, net.ErrClosed):
		return errors.New("display closed")
	case errors.Is(err, io.EOF):
		return errors.New("the VNC server closed the connection")
	}
	return fmt.Errorf("read from the VNC server: %v", err)
}

// fail marks the display gone for cause and closes the connection. The
// first cause is kept.
func (d *Display) fail(cause error) {
	d.mu.Lock()
	if d.err == nil {
		d.err = fmt.Errorf("%v: %w", cause, screen.ErrGone)
		close(d.dead)
	}
	d.mu.Unlock()
	d.conn.Close()
}

// gone returns an error wrapping screen.ErrGone if the display no longer
// works, or nil.
func (d *Display) gone() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// send writes one or more client messages, built by appending to b. A
// failed write ends the connection and returns an error wrapping
// screen.ErrGone.
func (d *Display) send(build func(b []byte) []byte) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.gone(); err != nil {
		return err
	}
	d.wbuf = build(d.wbuf[:0])
	if err := d.conn.SetWriteDeadline(time.Now().Add(d.cfg.Timeout)); err != nil {
		d.fail(fmt.Errorf("write to the VNC server: %v", err))
		return d.gone()
	}
	if _, err := d.conn.Write(d.wbuf); err != nil {
		d.fail(fmt.Errorf("write to the VNC server: %v", err))
		return d.gone()
	}
	return nil
}

// Close releases any buttons and keys that actions left held, closes the
// connection and waits for the display's goroutine to end. It does not
// block on a Perform in progress. Close is idempotent; Capture and Perform
// fail with an error wrapping screen.ErrGone after it.
func (d *Display) Close() error {
	d.closeOnce.Do(func() {
		if d.op.TryLock() {
			if d.gone() == nil {
				d.releaseAll()
			}
			d.op.Unlock()
		}
		d.fail(errors.New("display closed"))
		d.wg.Wait()
	})
	return nil
}

// Size returns the size of the server's screen (its framebuffer), as the
// server last said.
func (d *Display) Size() screen.Size { return d.size() }

// size returns the current framebuffer size.
func (d *Display) size() screen.Size {
	d.mu.Lock()
	defer d.mu.Unlock()
	return screen.Size{W: d.live.Rect.Dx(), H: d.live.Rect.Dy()}
}

// markInput records that input was just sent, so that the next capture
// waits for its effects.
func (d *Display) markInput() {
	d.mu.Lock()
	d.inputAt = time.Now()
	d.mu.Unlock()
}

// encodings returns the encodings and pseudo-encodings a Display declares:
// cfg's encodings, DesktopSize, Cursor (so that the server leaves the
// pointer out of the pixels), Fence and LEDState.
func encodings(cfg Config) []Encoding {
	return append(slices.Clip(cfg.Encodings), encDesktopSize, encCursor, encFence, encLEDState)
}

// X keysyms of the lock keys.
const (
	keysymNumLock  = 0xff7f
	keysymCapsLock = 0xffe5
)

// start makes the desktop ready for a model's input, once the first
// update has arrived.
//
// It puts the pointer at the centre of the screen, where X servers start
// it: TigerVNC draws the pointer into the pixels even for a client that
// draws it itself (Cursor pseudo-encoding) until that client has put it
// somewhere, and again a second after something else moved it. Captures
// show no pointer from then on.
//
// If the server tells the lock keys' state (LEDState), it turns NumLock
// on and CapsLock off (see appendLocks): otherwise the first keypad key
// would reach the application after a NumLock key press that no action
// asked for.
//
// It waits until the server has handled all of that (a fence), so that
// the first capture waits for its effects.
func (d *Display) start(ctx context.Context) error {
	d.op.Lock()
	defer d.op.Unlock()
	d.mu.Lock()
	centre := image.Pt(d.live.Rect.Dx()/2, d.live.Rect.Dy()/2)
	d.mu.Unlock()
	err := d.send(func(b []byte) []byte {
		return d.appendLocks(d.appendMove(b, centre), true)
	})
	if err != nil {
		return fmt.Errorf("take the pointer and lock keys: %w", err)
	}
	if _, err := d.sync(ctx); err != nil {
		return fmt.Errorf("take the pointer and lock keys: %w", err)
	}
	d.markInput()
	return nil
}

// fence handles a Fence message from the server: it answers a request at
// once (the reader handles messages in order, which is what every flag
// but SyncNext asks for), and notes the answer to one of this client's.
func (d *Display) fence(m serverMsg) error {
	if m.fenceFlags&fenceRequest != 0 {
		d.mu.Lock()
		d.fences = true
		d.mu.Unlock()
		return d.send(func(b []byte) []byte {
			return appendFence(b, m.fenceFlags&(fenceBlockBefore|fenceBlockAfter), m.fencePayload)
		})
	}
	if len(m.fencePayload) != 4 {
		return nil // not one of this client's
	}
	id := binary.BigEndian.Uint32(m.fencePayload)
	d.mu.Lock()
	if int32(id-d.fenceDone) > 0 {
		d.fenceDone = id
	}
	d.wakeLocked()
	d.mu.Unlock()
	return nil
}

// sync waits until the server has handled every message sent before it,
// input included (X has then queued the input's events, with their
// times): it sends a Fence request and waits for the answer, at most
// Config.Timeout. It reports false, at once, if the server does not do
// fences.
func (d *Display) sync(ctx context.Context) (bool, error) {
	d.mu.Lock()
	ok := d.fences
	d.fenceSent++
	id := d.fenceSent
	d.mu.Unlock()
	if !ok {
		return false, nil
	}
	payload := binary.BigEndian.AppendUint32(nil, id)
	if err := d.send(func(b []byte) []byte { return appendFence(b, fenceRequest|fenceBlockBefore, payload) }); err != nil {
		return false, err
	}
	t := time.NewTimer(d.cfg.Timeout)
	defer t.Stop()
	for {
		d.mu.Lock()
		done, changed, err := int32(id-d.fenceDone) <= 0, d.changed, d.err
		d.mu.Unlock()
		switch {
		case err != nil:
			return false, err
		case done:
			return true, nil
		}
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case <-t.C:
			return false, fmt.Errorf("the VNC server did not confirm the input within %v", d.cfg.Timeout)
		case <-changed:
		case <-d.dead:
		}
	}
}

// appendLocks appends the key presses that put the lock keys in the state
// the client types in, if the server tells their state (LEDState): CapsLock
// off, so that letters come out as sent, and, if keypad, NumLock on, so
// that the keypad's digit keys type digits. A client that declares
// LEDState gets none of the server's own lock-key guesses (TigerVNC's
// Xvnc otherwise toggles NumLock or CapsLock around a key when it thinks
// them out of step with the client's keyboard), so it keeps them in step
// itself. A lock key that an action presses stays as the action left it
// until the next action that types.
func (d *Display) appendLocks(b []byte, keypad bool) []byte {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.leds < 0 {
		return b
	}
	toggle := func(sym uint32, led int) {
		b = appendKeyEvent(b, true, sym)
		b = appendKeyEvent(b, false, sym)
		d.leds ^= led // until the server tells the new state
	}
	if d.leds&ledCapsLock != 0 {
		toggle(keysymCapsLock, ledCapsLock)
	}
	if keypad && d.leds&ledNumLock == 0 {
		toggle(keysymNumLock, ledNumLock)
	}
	return b
}

// maxQuietWindow bounds the quiet window that a burst of updates with long
// gaps asks for (see quietWindow).
const maxQuietWindow = 500 * time.Millisecond

// quietWindow returns how long the screen must go without an update to
// count as settled: Config.QuietWindow, or twice the longest of the latest
// gaps between the frames of an animation (consecutive updates less than
// maxQuietWindow/2 apart) if that is longer, at most maxQuietWindow. An
// animation on a loaded machine draws its frames further apart than the
// quiet window, and must not count as settled between two of them.
// d.mu must be held.
func (d *Display) quietWindow() time.Duration {
	wait := d.cfg.QuietWindow
	for _, g := range d.gaps {
		wait = max(wait, min(2*g, maxQuietWindow))
	}
	return wait
}

// maxReactionWait bounds what the desktop's latest reactions add to the
// wait for a reaction: a change that came a second after an input was
// likely not its effect (a clock ticking, a window of its own accord).
const maxReactionWait = time.Second

// reactionTime returns how long a capture waits for the screen to react to
// an input: Config.ReactionTime, or twice the longest of the latest
// reactions if that is longer (at most maxReactionWait). d.mu must be
// held.
func (d *Display) reactionTime() time.Duration {
	wait := d.cfg.ReactionTime
	for _, r := range d.reactions {
		wait = max(wait, min(2*r, maxReactionWait))
	}
	return wait
}
