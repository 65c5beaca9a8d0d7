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
// browser each (about 100 MB).
type Pool struct {
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
	p := &Pool{}
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
// Browser.NewDisplay).
func (p *Pool) NewDisplay(ctx context.Context, cfg DisplayConfig) (*Display, error) {
	p.mu.Lock()
	if len(p.browsers) == 0 {
		p.mu.Unlock()
		return nil, errors.New("new display: the pool is closed")
	}
	b := p.browsers[p.next%len(p.browsers)]
	p.next++
	p.mu.Unlock()
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
