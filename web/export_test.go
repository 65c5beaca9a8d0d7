package web

import "time"

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
