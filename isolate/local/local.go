// Package local is the development backend of isolate: the session's
// browser is a Chromium process on the host, told to use the egress proxy
// (isolate/egress) for every request, loopback included.
//
// It isolates nothing. The policy holds only as far as Chromium honours its
// proxy flags, a page can reach whatever the host's user can, and no
// memory, CPU or pids limit applies. Use isolate/containerd for untrusted
// pages.
package local

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// Sandbox is an egress proxy on the host's loopback and the browsers that
// use it. It is safe for concurrent use; the caller must call Close.
type Sandbox struct {
	cfg   isolate.Config
	log   *slog.Logger
	proxy string // the proxy's address, 127.0.0.1:port

	cancel context.CancelFunc
	done   chan error

	mu       sync.Mutex
	closed   bool
	browsers []*cdp.Browser
}

var _ isolate.Sandbox = (*Sandbox)(nil)

// Start starts the session's egress proxy on a loopback port. Browsers
// start with Sandbox.Browser. The sandbox runs one goroutine, the proxy's,
// until Close.
func Start(ctx context.Context, cfg isolate.Config) (*Sandbox, error) {
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("start local sandbox: %w", err)
	}
	p, err := egress.New(egress.Config{Policy: cfg.Egress, OnDecision: cfg.OnDecision, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("start local sandbox: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start local sandbox: %w", err)
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &Sandbox{
		cfg:    cfg,
		log:    cfg.Logger.With("component", "sandbox", "session", cfg.Name),
		proxy:  ln.Addr().String(),
		cancel: cancel,
		done:   make(chan error, 1),
	}
	go func() { s.done <- p.Serve(pctx, ln) }()
	s.log.Info("local sandbox started: no isolation but the egress proxy", "proxy", s.proxy)
	return s, nil
}

// Browser launches a Chromium on the host (cfg.Exec, or the one on PATH)
// that sends every request through the sandbox's proxy. The sandbox's
// Config.Flags replace cfg.Flags. Closing the sandbox closes its browsers.
func (s *Sandbox) Browser(ctx context.Context, cfg cdp.Config) (*cdp.Browser, error) {
	if err := s.Health(ctx); err != nil {
		return nil, err
	}
	cfg.Flags = append(append([]string(nil), s.cfg.Flags...),
		"--proxy-server=http://"+s.proxy,
		"--proxy-bypass-list=<-loopback>",
		"--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
	)
	b, err := cdp.Launch(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.Join(errClosed, b.Close(ctx))
	}
	s.browsers = append(s.browsers, b)
	return b, nil
}

var errClosed = fmt.Errorf("local sandbox is closed: %w", isolate.ErrDead)

// Health returns nil until Close, then an error wrapping isolate.ErrDead.
func (s *Sandbox) Health(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	return nil
}

// ProxyAddr returns the loopback address of the sandbox's egress proxy.
func (s *Sandbox) ProxyAddr() string { return s.proxy }

// Close closes the sandbox's browsers and stops its proxy. It is
// idempotent.
func (s *Sandbox) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	bs := s.browsers
	s.mu.Unlock()
	var errs []error
	for _, b := range bs {
		errs = append(errs, b.Close(ctx))
	}
	s.cancel()
	errs = append(errs, <-s.done)
	return errors.Join(errs...)
}
