package web

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/spotter-harness/spotter/actions"
	"github.com/spotter-harness/spotter/internal/session"
)

// Health, readiness and draining (docs/API.md, "Health, readiness and
// draining"): /healthz says the process answers; /readyz says it should
// be sent work: its database answers, a browser can be started, and it is
// not draining. Drain stops taking new sessions.

// DefaultBrowserCheck is how often /readyz's browser check starts a
// browser when no session has started one since.
const DefaultBrowserCheck = 10 * time.Minute

// browserCheck is the cached answer to "can a browser be started here?":
// a browser is started in the background at the first probe and then
// whenever the last answer is older than every; sessions that open
// displays refresh it for free. A probe never waits for a browser.
type browserCheck struct {
	every time.Duration
	open  func(context.Context) error // starts and closes a browser
	kick  chan struct{}

	mu    sync.Mutex
	at    time.Time // when the answer was had; zero: none yet
	err   error
	asked bool // a probe asked for the first check
}

func newBrowserCheck(every time.Duration, open func(context.Context) error) *browserCheck {
	return &browserCheck{every: every, open: open, kick: make(chan struct{}, 1)}
}

// ok records that a browser started now.
func (b *browserCheck) ok() {
	b.mu.Lock()
	b.at, b.err = time.Now(), nil
	b.mu.Unlock()
}

// again asks the background loop for a new check (at most one every
// minGap).
func (b *browserCheck) again() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// first asks for the first check, once.
func (b *browserCheck) first() {
	b.mu.Lock()
	asked := b.asked
	b.asked = true
	b.mu.Unlock()
	if !asked {
		b.again()
	}
}

// state returns the last answer: ok, or why not.
func (b *browserCheck) state() (bool, string) {
	if b.every < 0 {
		return true, "not checked (disabled)"
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.at.IsZero():
		return false, "not checked yet"
	case b.err != nil:
		return false, "cannot start a browser"
	}
	return true, "ok"
}

// run checks when first asked (again: the first probe), then whenever
// the last answer is older than every; after a failure, or when asked,
// every minGap at most. It returns when ctx is done.
func (b *browserCheck) run(ctx context.Context, log func(msg string, args ...any)) {
	if b.every < 0 {
		return
	}
	const minGap = 30 * time.Second
	// The first check waits for the first probe (or a session's display
	// that failed): a server nobody probes starts no browser of its own.
	select {
	case <-ctx.Done():
		return
	case <-b.kick:
	}
	for {
		// A browser start is not cut short when ctx ends (chromedp can
		// hang when its start is cancelled midway): it is bounded, and ctx
		// is looked at once it is over.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		err := b.open(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			log("readiness: cannot start a browser", "err", err)
		}
		last := time.Now()
		b.mu.Lock()
		b.at, b.err = last, err
		b.mu.Unlock()
		asked := false
		for {
			b.mu.Lock()
			due := b.at.Add(b.every)
			if soon := last.Add(minGap); (b.err != nil || asked) && soon.Before(due) {
				due = soon
			}
			b.mu.Unlock()
			wait := time.Until(due)
			if wait <= 0 {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-b.kick:
				asked = true
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// checkedOpener wraps the sessions' display opener: each browser that
// starts (or fails to) answers the readiness check.
func (s *Server) checkedOpener(open func(context.Context, session.Spec) (session.Display, error)) func(context.Context, session.Spec) (session.Display, error) {
	return func(ctx context.Context, sp session.Spec) (session.Display, error) {
		d, err := open(ctx, sp)
		if err == nil {
			s.browser.ok()
		} else if ctx.Err() == nil {
			s.browser.again() // maybe the session's fault, maybe the machine's: look
		}
		return d, err
	}
}

// probeBrowser starts a browser on about:blank and closes it.
func probeBrowser(open func(context.Context, session.Spec) (session.Display, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		d, err := open(ctx, session.Spec{Display: session.DisplaySpec{Width: 800, Height: 600, DPR: 1},
			StartURL: "about:blank", Policy: &actions.Policy{}})
		if err != nil {
			return err
		}
		return d.Close(context.WithoutCancel(ctx))
	}
}

// healthz says the process answers.
func (s *Server) healthz(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"ok": true}) }

// readyz says whether this server should be sent work: 200 when its
// database answers, a browser can be started (the cached check) and it
// is not draining; 503 otherwise. The answer says which check failed, in
// words that name no path or address.
func (s *Server) readyz(c *gin.Context) {
	checks := gin.H{}
	ready := true
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	if err := s.st.Ping(ctx); err != nil {
		s.log.Warn("readiness: database", "err", err)
		checks["database"], ready = "unreachable", false
	} else {
		checks["database"] = "ok"
	}
	s.browser.first()
	ok, why := s.browser.state()
	checks["browser"], ready = why, ready && ok
	if s.draining.Load() {
		checks["draining"], ready = true, false
	}
	if n, size := s.cfg.Sandboxes.Warm(); size > 0 {
		// Informational: an empty pool makes starts slower, not impossible.
		checks["warm_sandboxes"] = gin.H{"ready": n, "size": size}
	}
	if s.cluster != nil {
		if why := s.cluster.unfit(); why != "" {
			checks["replica"], ready = why, false
		} else {
			checks["replica"] = "ok"
		}
	}
	code := http.StatusOK
	metricReady.Set(1)
	if !ready {
		code = http.StatusServiceUnavailable
		metricReady.Set(0)
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(code, gin.H{"ready": ready, "checks": checks})
}

// Drain stops taking new sessions: from now on PUT /session, POST
// /executor/sessions and new MCP sessions are answered 503 with
// Retry-After (or, among replicas, placed on another one), and /readyz
// answers 503. It then waits until no session of this server is in a
// turn (sessions waiting for a human or for their client do not hold it
// up), or ctx is done, which it returns. Close then hands the sessions
// over: to the other replicas at once, or to this server's next start.
func (s *Server) Drain(ctx context.Context) error {
	if !s.draining.Swap(true) {
		s.log.Info("draining: no new sessions", "running", s.mgr.Running())
		if s.cluster != nil {
			s.cluster.wake() // tell the others now, not at the next renewal
		}
	}
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for s.mgr.Running() > 0 {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-t.C:
		}
	}
	return nil
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

// errUnavailable marks answers 503 with Retry-After.
var errUnavailable = errors.New("unavailable")

// unavailable answers 503 with Retry-After (whole seconds, at least 1).
func unavailable(c *gin.Context, retry time.Duration, msg string) {
	secs := max(1, int((retry+time.Second-1)/time.Second))
	c.Header("Retry-After", strconv.Itoa(secs))
	abort(c, http.StatusServiceUnavailable, msg)
}
