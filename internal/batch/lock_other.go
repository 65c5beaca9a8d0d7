//go:build !unix

package batch

// lock is a no-op where flock(2) is missing: two processes must not run
// the same batch at once.
func lock(string) (func(), error) { return func() {}, nil }
