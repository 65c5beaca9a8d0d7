package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/store"
)

// The live section measures the panel's live view as an operator's browser
// gets it: the server of `spotter serve` on loopback, an executor session
// on a page that shows a clock, and a client that follows GET
// /session/:id/live as the panel does. In each display mode:
//   - frames per second while the page changes at every animation frame,
//     with the session idle and while it steps (executor calls back to
//     back), against the target of 10;
//   - frames sent while the page does not change (after the first, which
//     shows it), against the target of none;
//   - the latency from a change of the page to the panel: the page paints
//     the time of each change into itself (every 250 ms), and each frame
//     that shows a change for the first time counts from that time to its
//     arrival at the client, decoded and all.

const (
	liveWindow     = 4 * time.Second // how long a rate is counted over
	liveStillFor   = 3 * time.Second // how long a still page is watched
	liveChangeEach = 250 * time.Millisecond
)

// liveClient follows one session's live view.
type liveClient struct {
	mu     sync.Mutex
	frames []liveArrival
	done   chan error
	cancel context.CancelFunc
	once   sync.Once
	err    error
}

type liveArrival struct {
	at   time.Time
	data []byte
}

// followLive follows the live view of session id until stop.
func (c *apiClient) followLive(ctx context.Context, id string) (*liveClient, error) {
	ctx, cancel := context.WithCancel(ctx)
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/session/"+id+"/live", nil)
	if err != nil {
		cancel()
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := c.http.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("GET live = %d", resp.StatusCode)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	l := &liveClient{done: make(chan error, 1), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 32<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			at := time.Now()
			var f struct{ Data []byte }
			if err := json.Unmarshal([]byte(data), &f); err != nil {
				if ctx.Err() != nil {
					break // a line cut short by stop
				}
				l.done <- err
				return
			}
			l.mu.Lock()
			l.frames = append(l.frames, liveArrival{at: at, data: f.Data})
			l.mu.Unlock()
		}
		l.done <- sc.Err()
	}()
	return l, nil
}

// stop ends the stream; a second stop returns what the first did.
func (l *liveClient) stop() error {
	l.once.Do(func() {
		l.cancel()
		if err := <-l.done; err != nil && !errors.Is(err, context.Canceled) {
			l.err = err
		}
	})
	return l.err
}

func (l *liveClient) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.frames)
}

func (l *liveClient) since(n int) []liveArrival {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]liveArrival(nil), l.frames[n:]...)
}

// waitFrames waits until the client has n frames, within d.
func (l *liveClient) waitFrames(ctx context.Context, n int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for l.count() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d live frames in %v", l.count(), n, d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// endExecutor ends an executor session, closing its display; a failure
// leaves it to the server's close.
func (c *apiClient) endExecutor(ctx context.Context, id string) {
	_, _, _ = c.do(context.WithoutCancel(ctx), "DELETE", "/executor/sessions/"+id, "", nil)
}

// live runs the live section in each display mode.
func (r *runner) live(ctx context.Context) error {
	for _, mode := range []cdp.Mode{cdp.FrameControl, cdp.Screencast} {
		b, err := r.browser(ctx, mode)
		if err != nil {
			return err
		}
		err = r.liveMode(ctx, b, mode)
		err = errors.Join(err, b.Close(context.WithoutCancel(ctx)))
		if err != nil {
			return fmt.Errorf("%v: %w", mode, err)
		}
	}
	return nil
}

func (r *runner) liveMode(ctx context.Context, b *cdp.Browser, mode cdp.Mode) (err error) {
	c, closeServer, err := startServer(ctx, b, func(st store.Store) store.Store { return st }, r.o.Logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeServer()) }()
	name := func(s string) string { return fmt.Sprintf("%v: %s", mode, s) }

	// Frames per second of a page that changes at every frame, idle and
	// while the session steps.
	rate := func(steps bool) (float64, int, error) {
		id, err := c.executor(ctx, r.site.url("live")+"?every=0")
		if err != nil {
			return 0, 0, err
		}
		defer c.endExecutor(ctx, id)
		l, err := c.followLive(ctx, id)
		if err != nil {
			return 0, 0, err
		}
		defer l.stop()
		if err := l.waitFrames(ctx, 2, time.Minute); err != nil {
			return 0, 0, err
		}
		n, start := l.count(), time.Now()
		calls := 0
		for time.Since(start) < liveWindow {
			if !steps {
				select {
				case <-ctx.Done():
					return 0, 0, ctx.Err()
				case <-time.After(liveWindow - time.Since(start)):
				}
				continue
			}
			calls++
			call := fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":"computer","input":{"action":"left_click","coordinate":[%d,%d]}}`,
				calls, int(buttonAt.X), int(buttonAt.Y))
			if _, _, err := c.call(ctx, id, call); err != nil {
				return 0, 0, fmt.Errorf("executor call: %w", err)
			}
		}
		took := time.Since(start)
		return float64(l.count()-n) / took.Seconds(), calls, l.stop()
	}
	idle, _, err := rate(false)
	if err != nil {
		return fmt.Errorf("live view of a changing page: %w", err)
	}
	f := Figure{Section: "live", Name: name("frames/s of a page changing at every frame, session idle"), Unit: "frames/s", Value: idle,
		Note: "load average " + loadAverage()}
	f.target(">= 10 frames/s while the page changes", idle >= 10)
	r.report(f)
	stepping, calls, err := rate(true)
	if err != nil {
		return fmt.Errorf("live view while the session steps: %w", err)
	}
	f = Figure{Section: "live", Name: name("frames/s of a page changing at every frame, session stepping"), Unit: "frames/s", Value: stepping,
		Note: fmt.Sprintf("%d executor calls in %v, each capture waiting out its settle timeout on the endless change", calls, liveWindow)}
	f.target(">= 10 frames/s while the page changes", stepping >= 10)
	r.report(f)

	// A still page: the first frames show it (the session's screenshot,
	// then the display's view of the page as it is), and nothing follows.
	id, err := c.executor(ctx, r.site.url("live"))
	if err != nil {
		return err
	}
	defer c.endExecutor(ctx, id)
	l, err := c.followLive(ctx, id)
	if err != nil {
		return err
	}
	if err := l.waitFrames(ctx, 2, time.Minute); err != nil {
		l.stop()
		return fmt.Errorf("live view of a still page: %w", err)
	}
	n := l.count()
	select {
	case <-ctx.Done():
	case <-time.After(liveStillFor):
	}
	still := l.count() - n
	if err := l.stop(); err != nil {
		return err
	}
	f = Figure{Section: "live", Name: name(fmt.Sprintf("frames of a still page over %v, after the first", liveStillFor)), Unit: "frames", Value: float64(still)}
	f.target("none while the page is idle", still == 0)
	r.report(f)

	// What watching costs a step: two sessions on the static page, one
	// watched and one not, stepping in turn.
	if err := r.liveStepCost(ctx, c, name); err != nil {
		return fmt.Errorf("step cost: %w", err)
	}

	// Latency: a change every 250 ms, each with its time painted in.
	lat, err := r.liveLatency(ctx, c)
	if err != nil {
		return fmt.Errorf("latency: %w", err)
	}
	f = latency("live", name("a page change to the panel (change, frame, SSE, client)"), lat)
	r.report(f)
	return nil
}

// liveStepCost measures the executor API's step (a click on the static
// page, a settled screenshot back) on a session someone watches and on one
// nobody does, in turn, round by round: while watched, a capture's settle
// takes a live frame when one is due, and a step may wait for a live frame
// the display was taking.
func (r *runner) liveStepCost(ctx context.Context, c *apiClient, name func(string) string) error {
	watched, err := c.executor(ctx, r.site.url(pageStatic))
	if err != nil {
		return err
	}
	defer c.endExecutor(ctx, watched)
	plain, err := c.executor(ctx, r.site.url(pageStatic))
	if err != nil {
		return err
	}
	defer c.endExecutor(ctx, plain)
	l, err := c.followLive(ctx, watched)
	if err != nil {
		return err
	}
	defer l.stop()
	if err := l.waitFrames(ctx, 2, time.Minute); err != nil {
		return err
	}
	var on, off []time.Duration
	n := l.count()
	for round := -1; round < r.o.Rounds; round++ {
		call := fmt.Sprintf(`{"type":"tool_use","id":"toolu_c%d","name":"computer","input":{"action":"left_click","coordinate":[%d,%d]}}`,
			round+1, int(buttonAt.X), int(buttonAt.Y))
		ids := []string{watched, plain}
		if round%2 == 0 {
			ids = []string{plain, watched}
		}
		for _, id := range ids {
			_, took, err := c.call(ctx, id, call)
			if err != nil {
				return fmt.Errorf("executor call: %w", err)
			}
			if round < 0 {
				continue // warm-up
			}
			if id == watched {
				on = append(on, took)
			} else {
				off = append(off, took)
			}
		}
	}
	fOff := latency("live", name("a step nobody watches (executor API, static page)"), off)
	fOn := latency("live", name("the same step while its live view is watched"), on)
	fOn.against(fOff)
	fOn.Note = fmt.Sprintf("%d live frames during the %d watched steps", l.count()-n, len(on))
	r.report(fOff)
	r.report(fOn)
	return nil
}

// liveLatency measures, over r.o.Rounds changes of the clock page, the time
// from each change to the first frame that shows it at the client.
func (r *runner) liveLatency(ctx context.Context, c *apiClient) ([]time.Duration, error) {
	id, err := c.executor(ctx, r.site.url("live")+fmt.Sprintf("?every=%d", liveChangeEach.Milliseconds()))
	if err != nil {
		return nil, err
	}
	defer c.endExecutor(ctx, id)
	l, err := c.followLive(ctx, id)
	if err != nil {
		return nil, err
	}
	defer l.stop()
	// The first frame is the session's screenshot, of a change made
	// before anyone watched: it does not count.
	if err := l.waitFrames(ctx, 1, time.Minute); err != nil {
		return nil, err
	}
	n := l.count()
	// A frame shows the newest change: on a slow machine, fewer frames
	// than changes.
	wait := time.Duration(r.o.Rounds)*liveChangeEach + 2*time.Minute
	deadline := time.Now().Add(wait)
	var out []time.Duration
	seen := map[int64]bool{}
	undecoded := 0
	for len(out) < r.o.Rounds && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(liveChangeEach):
		}
		fresh := l.since(n)
		n += len(fresh)
		for _, a := range fresh {
			ms, ok := readClock(a.data)
			if !ok {
				undecoded++
				continue
			}
			if seen[ms] {
				continue
			}
			seen[ms] = true
			out = append(out, a.at.Sub(time.UnixMilli(ms)))
		}
	}
	if len(out) < r.o.Rounds {
		return nil, fmt.Errorf("%d of %d changes seen in %v (%d frames could not be read)", len(out), r.o.Rounds, wait, undecoded)
	}
	return out[:r.o.Rounds], nil
}

// readClock reads the time live.html paints, from a frame of its whole
// 1280x800 viewport at any size: both rows must say the same.
func readClock(data []byte) (int64, bool) {
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		return 0, false
	}
	b := img.Bounds()
	sx, sy := float64(b.Dx())/viewportPt.X, float64(b.Dy())/viewportPt.Y
	var rows [2]int64
	for r := range rows {
		y := b.Min.Y + int((640+24*float64(r)+12)*sy)
		for i := range 48 {
			x := b.Min.X + int((40+20*float64(i)+10)*sx)
			cr, cg, cb, _ := img.At(x, y).RGBA()
			rows[r] <<= 1
			if (cr+cg+cb)/3>>8 < 128 {
				rows[r] |= 1
			}
		}
	}
	ok := rows[0] == rows[1] && rows[0] > 0
	return rows[0], ok
}

// loadAverage is the machine's load average over the last minute, as
// /proc/loadavg says, or "unknown": a frame rate means little without it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
