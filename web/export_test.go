package web

// SpecViolations returns the requests and answers of s that broke
// docs/openapi.yaml (openapi_test.go), and forgets them.
func SpecViolations(s *Server) []string { return takeViolations(s) }

// LeftSpecViolations returns every violation no test reported yet.
func LeftSpecViolations() []string { return leftViolations() }
