package cdp

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Pool is several browsers that share their displays out, for many
// sessions on one machine: each display is a browser context of one of
// them, as with Browser.NewDisplay. Frames of one frame-controlled
// browser's displays run one at a time (they must not overlap), and its
// compositor draws them on one thread, so one browser draws about as many
// screenshots a second however many cores the machine has; a pool of one
// browser per core draws that many at once, for the memory of one more
// browser each (about 100 MB). A browser of the pool that exited (it
// crashed, or was killed) is launched again by the next NewDisplay that
// would open a display on it; its displays are gone with it.
type Pool struct {
	cfg      Config
	mu       sync.Mutex
	browsers []*Browser
	next     int
}

// LaunchPool launches n browsers with cfg (see Launch). The caller must
// call Close.
func LaunchPool(ctx context.Context, cfg Config, n int) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("launch pool: %d browsers: want at least 1", n)
	}
	p := &Pool{cfg: cfg}
	for range n {
		b, err := Launch(ctx, cfg)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("launch pool: %w", err), p.Close(context.WithoutCancel(ctx)))
		}
		p.browsers = append(p.browsers, b)
	}
	return p, nil
}

// Len returns how many browsers p has.
func (p *Pool) Len() int { return len(p.browsers) }

// NewDisplay opens a display on the pool's browsers in turn (see
// Browser.NewDisplay), launching again the one it turns to if that one
// exited.
func (p *Pool) NewDisplay(ctx context.Context, cfg DisplayConfig) (*Display, error) {
	p.mu.Lock()
	if len(p.browsers) == 0 {
		p.mu.Unlock()
		return nil, errors.New("new display: the pool is closed")
	}
	i := p.next % len(p.browsers)
	p.next++
	b := p.browsers[i]
	var dead *Browser
	if b.lost() {
		nb, err := Launch(ctx, p.cfg)
		if err != nil {
			p.mu.Unlock()
			return nil, fmt.Errorf("new display: launch again a browser of the pool that exited: %w", err)
		}
		dead, b, p.browsers[i] = b, nb, nb
	}
	p.mu.Unlock()
	if dead != nil {
		// Reap the process and remove its profile.
		if err := dead.Close(context.WithoutCancel(ctx)); err != nil {
			p.cfg.withDefaults().Logger.Warn("close a browser of the pool that exited", "err", err)
		}
	}
	return b.NewDisplay(ctx, cfg)
}

// Close closes every browser of the pool (see Browser.Close); the
// displays opened on them are gone with them.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	bs := p.browsers
	p.browsers = nil
	p.mu.Unlock()
	var err error
	for _, b := range bs {
		err = errors.Join(err, b.Close(ctx))
	}
	return err
}
