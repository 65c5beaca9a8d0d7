// Package chromeflags is the command line that keeps every Chromium
// Spotter launches (screen/cdp's, screen/playwright's, the sandbox agent's,
// a desktop's) from reaching out on its own: no update checks, account
// lookups, autofill or optimization hints, network time or media router
// discovery. Behind an egress proxy those requests would be refused and
// fill the trace with refusals; without one they would leave the machine.
// Pages still load whatever they load: only the browser's own traffic
// stops.
package chromeflags

import (
	"slices"
	"strings"
)

// switches are the quiet switches. The two URL switches send what the
// others leave (on-demand components such as the on-device model
// manifest, and the account lookup a profile makes at start) to port 0,
// which Chromium refuses before any connection is made, proxy or not.
var switches = []string{
	"--disable-background-networking",
	"--disable-component-update",
	"--component-updater=url-source=http://localhost:0/",
	"--gaia-url=http://localhost:0/",
	"--disable-sync",
	"--disable-default-apps",
	"--disable-client-side-phishing-detection",
	"--disable-domain-reliability",
	"--no-pings",
	"--metrics-recording-only",
	"--no-first-run",
	"--no-default-browser-check",
}

// features are the features that call Google's servers from a full
// Chromium (the headless shell has none of them): autofill's field
// types, network time, optimization hints and models, the media router's
// discovery, the translate bar's languages.
var features = []string{
	"Translate",
	"AutofillServerCommunication",
	"NetworkTimeServiceQuerying",
	"OptimizationHints",
	"OptimizationHintsFetching",
	"OptimizationGuideModelDownloading",
	"OptimizationGuideOnDeviceModel",
	"MediaRouter",
	"DialMediaRouteProvider",
}

// Switches returns the quiet switches, without --disable-features.
func Switches() []string { return slices.Clone(switches) }

// DisableFeatures returns one --disable-features flag with the quiet
// features and more, each once. Chromium reads only the last
// --disable-features of its command line: a launcher that has a list of
// its own passes it here instead.
func DisableFeatures(more ...string) string {
	all := slices.Clone(features)
	for _, f := range more {
		for _, f := range strings.Split(f, ",") {
			if f = strings.TrimSpace(f); f != "" && !slices.Contains(all, f) {
				all = append(all, f)
			}
		}
	}
	return "--disable-features=" + strings.Join(all, ",")
}

// Args returns the quiet switches and DisableFeatures(more...).
func Args(more ...string) []string { return append(Switches(), DisableFeatures(more...)) }

// SplitFeatures takes the --disable-features flags out of flags and
// returns the rest and the features they named, so that a launcher can
// merge them into one (DisableFeatures).
func SplitFeatures(flags []string) (rest, disabled []string) {
	for _, f := range flags {
		if v, ok := strings.CutPrefix(f, "--disable-features="); ok {
			disabled = append(disabled, v)
			continue
		}
		rest = append(rest, f)
	}
	return rest, disabled
}
