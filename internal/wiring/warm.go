package wiring

import (
	"context"
	"errors"
	"expvar"
	"log/slog"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// The warm pool's counters, published with expvar.
var (
	metricWarmReady  = expvar.NewInt("spotter_warm_ready")  // sandboxes waiting in warm pools now
	metricWarmTaken  = expvar.NewInt("spotter_warm_taken")  // sessions that took a warm sandbox
	metricWarmMissed = expvar.NewInt("spotter_warm_missed") // sessions that found none that fit, and started one
)

// warmRetryMax bounds the wait between failed starts of a warm sandbox.
const warmRetryMax = 30 * time.Second

// spare is a sandbox started ahead of demand, with a browser and a blank
// page of the pool's display in it, and no session: no egress proxy yet.
type spare struct {
	sb *containerd.Sandbox
	d  *isolate.Display
}

func (w spare) close(ctx context.Context) error {
	return errors.Join(w.d.Close(ctx), w.sb.Close(ctx))
}

// warmPool keeps Size containerd sandboxes started, each with a browser of
// the default display, for sessions to take. Each is taken once: the
// session that takes it claims it (its egress proxy starts with the
// session's policy) and closes it at its end; nothing goes back to the
// pool. One goroutine, owned by the pool, refills it, one sandbox at a
// time, until close.
type warmPool struct {
	rt    *containerd.Runtime
	limit isolate.Config // the sandboxes' limits and flags
	view  cdp.Config     // their displays
	log   *slog.Logger
	ready chan spare // buffered to the pool's size
	kick  chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

func newWarmPool(rt *containerd.Runtime, size int, limit isolate.Config, view cdp.Config, log *slog.Logger) *warmPool {
	ctx, cancel := context.WithCancel(context.Background())
	p := &warmPool{rt: rt, limit: limit, view: view, log: log.With("component", "warm"),
		ready: make(chan spare, size), kick: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go p.fill(ctx)
	return p
}

// fill starts sandboxes until the pool is full, and again each time one is
// taken, until ctx ends. A failed start is tried again after a growing
// wait, so a daemon that is down costs a log line, not a busy loop.
func (p *warmPool) fill(ctx context.Context) {
	defer close(p.done)
	wait := time.Second
	for {
		for len(p.ready) < cap(p.ready) {
			w, err := p.start(ctx)
			if ctx.Err() != nil {
				if err == nil {
					w.close(context.Background())
				}
				return
			}
			if err != nil {
				p.log.Warn("start a warm sandbox", "err", err, "retry_in", wait)
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
				wait = min(2*wait, warmRetryMax)
				continue
			}
			wait = time.Second
			p.ready <- w // only fill adds, so there is room
			metricWarmReady.Add(1)
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		}
	}
}

// start starts one sandbox and its browser, on a blank page.
func (p *warmPool) start(ctx context.Context) (spare, error) {
	sb, err := p.rt.StartSpare(ctx, p.limit)
	if err != nil {
		return spare{}, err
	}
	d, err := isolate.Open(ctx, sb, p.view)
	if err != nil {
		return spare{}, errors.Join(err, sb.Close(context.WithoutCancel(ctx)))
	}
	// The first frame a browser draws costs it most: draw it now.
	if _, err := d.Capture(ctx, screen.CaptureOptions{Size: p.view.Viewport, Format: screen.PNG}); err != nil {
		return spare{}, errors.Join(err, d.Close(ctx), sb.Close(context.WithoutCancel(ctx)))
	}
	return spare{sb: sb, d: d}, nil
}

// take returns a warm sandbox claimed for the session of sc, and its
// display, when one is ready and fits sc and view; ok is false otherwise
// (the caller starts one). It never waits for a start.
func (p *warmPool) take(ctx context.Context, sc isolate.Config, view cdp.Config) (d *isolate.Display, sb isolate.Sandbox, ok bool) {
	// A session whose config is bad (its allowlist) gets its error from a
	// cold start, instead of failing every warm sandbox's claim in turn.
	if sc.Validate() != nil || !containerd.Fits(p.limit, sc) || view.Viewport != p.view.Viewport || max(view.DPR, 1) != max(p.view.DPR, 1) ||
		view.Mode != p.view.Mode {
		metricWarmMissed.Add(1)
		return nil, nil, false
	}
	for {
		var w spare
		select {
		case w = <-p.ready:
		default:
			metricWarmMissed.Add(1)
			return nil, nil, false
		}
		metricWarmReady.Add(-1)
		select {
		case p.kick <- struct{}{}:
		default:
		}
		// A sandbox may have died while it waited (the memory limit, a
		// kill): it is closed, and the next one tried.
		err := w.sb.Health(ctx)
		if err == nil {
			err = w.sb.Claim(ctx, sc)
		}
		if err != nil {
			p.log.Warn("a warm sandbox could not be used", "sandbox", w.sb.ID(), "err", err)
			w.close(context.WithoutCancel(ctx))
			if ctx.Err() != nil {
				return nil, nil, false
			}
			continue
		}
		metricWarmTaken.Add(1)
		return w.d, w.sb, true
	}
}

// counts returns how many sandboxes are ready and the pool's size.
func (p *warmPool) counts() (ready, size int) { return len(p.ready), cap(p.ready) }

// close stops the refill, waits for a start in progress to end, and closes
// every sandbox still in the pool. Taken sandboxes are their sessions'.
func (p *warmPool) close(ctx context.Context) error {
	p.cancel()
	<-p.done
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for {
		select {
		case w := <-p.ready:
			metricWarmReady.Add(-1)
			wg.Go(func() {
				err := w.close(ctx)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			})
			continue
		default:
		}
		break
	}
	wg.Wait()
	return errors.Join(errs...)
}
