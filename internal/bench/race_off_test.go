//go:build !race

package bench

// raceDetector is whether the tests run under -race (make test runs every
// package once with it and once, with SPOTTER_INTEGRATION=1, without).
const raceDetector = false
