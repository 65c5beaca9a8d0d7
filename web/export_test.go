package web

import (
	"context"
	"time"

	"github.com/spotter-harness/spotter/store"
)

// RetentionPass is what one pass of retention did.
type RetentionPass = passResult

// RetainNow runs one round of retention r on s at now, as s's background
// loop does every Retention.Every, under the same lease: the tests choose
// the limits and the clock. It forgets every deletion it finds.
func RetainNow(ctx context.Context, s *Server, r Retention, now time.Time) (RetentionPass, error) {
	rt := newRetainer(s, r)
	rt.seen = time.Time{}
	return rt.round(ctx, now)
}

// Holds reports whether s holds session id in memory.
func Holds(s *Server, id string) bool { return s.mgr.Has(id) }

// SpecViolations returns the requests and answers of s that broke
// docs/openapi.yaml (openapi_test.go), and forgets them.
func SpecViolations(s *Server) []string { return takeViolations(s) }

// LeftSpecViolations returns every violation no test reported yet.
func LeftSpecViolations() []string { return leftViolations() }

// StopRateLimitClock stops the clock of s's rate limits: no bucket refills,
// however slowly the test's requests go.
func StopRateLimitClock(s *Server) {
	t := time.Now()
	s.limits.mu.Lock()
	s.limits.now = func() time.Time { return t }
	s.limits.mu.Unlock()
}

// WrapClusterStore makes s's cluster use wrap(its store): called between
// New and Start, before the cluster's loop reads it.
func WrapClusterStore(s *Server, wrap func(store.Store) store.Store) {
	s.cluster.st = wrap(s.cluster.st)
}
