package trace

import (
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"html/template"
	"regexp"
	"slices"
	"time"
)

// viewerJS is the report's one script: the step-through viewer. It is
// static (no data from a trace is ever put into it), and the page's
// Content-Security-Policy allows exactly it, by its hash.
//
//go:embed viewer.js
var viewerJS string

var viewerHash = func() string {
	sum := sha256.Sum256([]byte(viewerJS))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}()

// ReportCSP is the Content-Security-Policy of a report: inline images and
// styles, the viewer's script by its hash, and nothing else: no network,
// no other script. The page carries it; a server that serves one sends it
// too.
func ReportCSP() string {
	return "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src " + viewerHash
}

// CSP is the page's Content-Security-Policy, ReportCSP.
func (r *report) CSP() string { return ReportCSP() }

// Script is the viewer's script.
func (r *report) Script() template.JS { return template.JS(viewerJS) }

// egressSummary folds the run's egress decisions (the notes a sandboxed
// run records for every connection its browser made) into counts per host
// and verdict.
type egressSummary struct {
	Total, Allowed, Refused int
	Hosts                   []*egressHost // refused first, then the busiest
	Decisions               []note        // every decision, in order
}

type egressHost struct {
	Host             string
	Allowed, Refused int
	Why              []string // distinct allow rules and refusal reasons, at most maxWhy
}

const maxWhy = 3

// The notes runner writes for egress decisions:
//
//	egress allowed: METHOD HOST:PORT (rule RULE)
//	egress refused: METHOD HOST:PORT: REASON
var (
	egressAllowed = regexp.MustCompile(`^egress allowed: (\S+) (\S+) \(rule (.*)\)$`)
	egressRefused = regexp.MustCompile(`^egress refused: (\S+) (\S+): (.*)$`)
)

// foldEgress takes the egress decisions out of notes and summarizes them;
// the other notes stay, in order. A run without decisions gets nil.
func foldEgress(notes []note) ([]note, *egressSummary) {
	var (
		rest  []note
		sum   egressSummary
		hosts = map[string]*egressHost{}
	)
	for _, n := range notes {
		var host, why string
		allowed := false
		if m := egressAllowed.FindStringSubmatch(n.Text); m != nil {
			host, why, allowed = m[2], "rule "+m[3], true
		} else if m := egressRefused.FindStringSubmatch(n.Text); m != nil {
			host, why = m[2], m[3]
		} else {
			rest = append(rest, n)
			continue
		}
		h := hosts[host]
		if h == nil {
			h = &egressHost{Host: host}
			hosts[host] = h
			sum.Hosts = append(sum.Hosts, h)
		}
		if allowed {
			h.Allowed++
			sum.Allowed++
		} else {
			h.Refused++
			sum.Refused++
		}
		if len(h.Why) < maxWhy && !slices.Contains(h.Why, why) {
			h.Why = append(h.Why, why)
		}
		sum.Total++
		sum.Decisions = append(sum.Decisions, note{Text: n.Text, Error: !allowed})
	}
	if sum.Total == 0 {
		return notes, nil
	}
	slices.SortStableFunc(sum.Hosts, func(a, b *egressHost) int {
		return cmp.Or(cmp.Compare(b.Refused, a.Refused), cmp.Compare(b.Allowed+b.Refused, a.Allowed+a.Refused))
	})
	return rest, &sum
}

// timeline gives each step its duration (until the next step starts, or
// the run ends) and the screenshot that stands for it there: the last one
// it produced, or the one it started from; a step that did nothing on the
// screen (the model's last word) shows the screen as it was left. Every
// step takes the same room in the timeline, whatever its duration.
func (r *report) timeline(end time.Time) {
	var prev *shotView
	for i, c := range r.Cards {
		next := end
		if i+1 < len(r.Cards) && !r.Cards[i+1].start.IsZero() {
			next = r.Cards[i+1].start
		}
		if next.IsZero() || next.Before(c.last) {
			next = c.last
		}
		if !c.start.IsZero() && next.After(c.start) {
			c.dur = next.Sub(c.start)
			c.Duration = formatDuration(c.dur)
		}
		for _, cv := range c.Calls {
			switch {
			case cv.After != nil && cv.After.Ref != "":
				c.Thumb = cv.After
			case c.Thumb == nil && cv.Before != nil && cv.Before.Ref != "":
				c.Thumb = cv.Before
			}
		}
		if c.Thumb == nil && c.Screen != nil && c.Screen.Ref != "" {
			c.Thumb = c.Screen
		}
		if c.Thumb == nil {
			c.Thumb = prev
		}
		prev = c.Thumb
	}
}
