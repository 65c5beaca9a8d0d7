// Package matrix is the behaviour matrix of Spotter's displays: the
// conformance suite and the browser behaviours of screen/screentest, run on
// every display as users open it (runner.DisplayRequest and
// wiring.OpenDisplay, the path of `spotter run`, `test`, `batch` and
// `mcp`), under each isolation mode (none, local, containerd) and at device
// pixel ratios 1, 1.5 and 2. Its test prints the table of what passed and
// what was refused in words, and keeps docs/ISOLATION.md's copy of it
// true. It has no code but its tests.
package matrix
