package vnc

import (
	"context"
	"errors"
	"image"
	"image/color"
	"net"
	"sync"
	"time"
)

// Damage returns how many updates have changed d's screen since the first
// one, and when the latest arrived.
func Damage(d *Display) (int, time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.updates, d.damagedAt
}

// Rects returns how many rectangles d has decoded in each encoding.
func Rects(d *Display) map[Encoding]int {
	return map[Encoding]int{
		Raw:      int(d.dec.rects[0].Load()),
		CopyRect: int(d.dec.rects[1].Load()),
		ZRLE:     int(d.dec.rects[2].Load()),
	}
}

// ServeSolid serves RFB on l, as a w x h desktop painted c, to every client
// until l is closed. It stands in for a VNC server in examples. The
// returned function closes l and waits for the clients' connections to end.
func ServeSolid(l net.Listener, w, h int, c color.RGBA) (stop func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			conn, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			f := startFake(conn, fakeOptions{size: image.Pt(w, h), fill: c})
			wg.Go(func() { <-f.done })
		}
	})
	return func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}

// FullUpdate asks the server for the whole screen and waits until an update
// has arrived.
func FullUpdate(ctx context.Context, d *Display) error {
	d.mu.Lock()
	gen, changed, r := d.gen, d.changed, d.live.Rect
	d.mu.Unlock()
	if err := d.send(func(b []byte) []byte { return appendUpdateRequest(b, false, 0, 0, r.Dx(), r.Dy()) }); err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-d.dead:
			return d.gone()
		case <-changed:
		}
		d.mu.Lock()
		done := d.gen > gen
		changed = d.changed
		d.mu.Unlock()
		if done {
			return nil
		}
	}
}
