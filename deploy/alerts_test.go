package deploy

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// Each alert of the monitoring component is run by Prometheus's own
// engine on made-up series (Prometheus's series notation: a series and
// its values a minute apart, "0+1x30" counting up) and must fire at the
// minutes it should, with the labels it should, and at no other.
func TestAlerts(t *testing.T) {
	var rule monitoringv1.PrometheusRule
	decode(t, filepath.Join(monitoringDir, "prometheusrule.yaml"), &rule,
		monitoringv1.SchemeGroupVersion.WithKind(monitoringv1.PrometheusRuleKind))
	exprs := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = r.Expr.String()
		}
	}
	// Each check loads series and names, for each label set the alert
	// may fire with, the minutes it must fire and the minutes it must be
	// silent; minutes at the edge of a window are left unchecked. The
	// alert must never fire with a label set not named.
	type window struct{ from, to int }
	type expect struct{ fires, silent []window }
	type check struct {
		load  string
		until int
		want  map[string]expect
	}
	cases := map[string][]check{
		"SpotterNoReadyReplica": {{
			load: `spotter_ready{job="spotter-metrics",namespace="ns",pod="a"} 1x10 0x10
			       spotter_ready{job="spotter-metrics",namespace="ns",pod="b"} 0x20`,
			until: 15,
			want:  map[string]expect{`{}`: {fires: []window{{11, 15}}, silent: []window{{0, 10}}}},
		}, {
			// Nothing scraped at all: no replica is ready either.
			load:  `up{job="other"} 1x5`,
			until: 3,
			want:  map[string]expect{`{}`: {fires: []window{{0, 3}}}},
		}},
		"SpotterApprovalsWaitingTooLong": {{
			load: `spotter_approval_oldest_pending_seconds{namespace="ns",pod="a"} 0 60 120 180 240 300 0
			       spotter_approval_oldest_pending_seconds{namespace="ns",pod="b"} 0x6`,
			until: 6,
			want:  map[string]expect{`{namespace="ns"}`: {fires: []window{{4, 5}}, silent: []window{{0, 3}, {6, 6}}}},
		}},
		"SpotterApprovalsExpiring": {{
			// One request expires between minutes 20 and 21; approvals
			// do not count.
			load: `spotter_approval_decision_seconds_count{namespace="ns",pod="a",verdict="expired"} 0x20 1x30
			       spotter_approval_decision_seconds_count{namespace="ns",pod="a",verdict="approve"} 0+1x50`,
			until: 45,
			want:  map[string]expect{`{namespace="ns"}`: {fires: []window{{22, 33}}, silent: []window{{0, 20}, {37, 45}}}},
		}},
		"SpotterSandboxStartFailures": {{
			// local fails once a minute all along; containerd three times,
			// in minutes 11 to 13.
			load: `spotter_sandbox_starts_total{namespace="ns",pod="a",backend="containerd",outcome="failed"} 0x10 1 2 3 3x20
			       spotter_sandbox_starts_total{namespace="ns",pod="a",backend="containerd",outcome="ok"} 0+5x35
			       spotter_sandbox_starts_total{namespace="ns",pod="a",backend="local",outcome="failed"} 0+1x35`,
			until: 30,
			want: map[string]expect{
				`{backend="containerd", namespace="ns"}`: {fires: []window{{13, 20}}, silent: []window{{0, 12}, {22, 30}}},
				`{backend="local", namespace="ns"}`:      {fires: []window{{5, 30}}, silent: []window{{0, 1}}},
			},
		}},
		"SpotterAdoptionStorm": {{
			// b adopts one a minute (about 10 in 10 minutes: no storm); a
			// takes 30 at once at minute 11.
			load: `spotter_replica_adoptions_total{namespace="ns",pod="a",outcome="adopted"} 0x10 30x20
			       spotter_replica_adoptions_total{namespace="ns",pod="b",outcome="adopted"} 0+1x30`,
			until: 30,
			want:  map[string]expect{`{namespace="ns"}`: {fires: []window{{11, 20}}, silent: []window{{0, 10}, {22, 30}}}},
		}},
		"SpotterLeaseLost": {{
			load: `spotter_replica_leases_lost_total{namespace="ns",pod="a"} 0x5 1x20
			       spotter_replica_leases_lost_total{namespace="ns",pod="b"} 0x25`,
			until: 25,
			want:  map[string]expect{`{namespace="ns", pod="a"}`: {fires: []window{{6, 14}}, silent: []window{{0, 5}, {17, 25}}}},
		}},
		"SpotterStoreCommitsSlow": {{
			// 100 commits a minute, of 10 ms until minute 10, of a second
			// from minute 11.
			load: `spotter_store_commit_duration_seconds_bucket{namespace="ns",pod="a",le="0.016"} 0+100x10 1000x20
			       spotter_store_commit_duration_seconds_bucket{namespace="ns",pod="a",le="1.024"} 0+100x10 1000+100x20
			       spotter_store_commit_duration_seconds_bucket{namespace="ns",pod="a",le="+Inf"} 0+100x10 1000+100x20`,
			until: 25,
			want:  map[string]expect{`{namespace="ns"}`: {fires: []window{{16, 25}}, silent: []window{{0, 10}}}},
		}},
	}
	for name := range exprs {
		if _, ok := cases[name]; !ok {
			t.Errorf("alert %s is not tried on series here", name)
		}
	}
	in := func(ws []window, m int) bool {
		return slices.ContainsFunc(ws, func(w window) bool { return w.from <= m && m <= w.to })
	}
	engine := promql.NewEngine(promql.EngineOpts{MaxSamples: 1_000_000, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	for name, checks := range cases {
		expr, ok := exprs[name]
		if !ok {
			t.Errorf("the PrometheusRule has no alert %s", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			for i, c := range checks {
				st := loadSeries(t, c.load)
				fired := map[string]int{}
				for m := 0; m <= c.until; m++ {
					at := time.Unix(0, 0).UTC().Add(time.Duration(m) * time.Minute)
					q, err := engine.NewInstantQuery(t.Context(), st, nil, expr, at)
					if err != nil {
						t.Fatalf("%s: %v", expr, err)
					}
					res := q.Exec(t.Context())
					vec, err := res.Vector()
					if res.Err != nil || err != nil {
						t.Fatalf("%s at minute %d: %v %v", expr, m, res.Err, err)
					}
					got := map[string]bool{}
					for _, s := range vec {
						got[s.Metric.String()] = true
						fired[s.Metric.String()]++
					}
					q.Close()
					for ls := range got {
						if _, ok := c.want[ls]; !ok {
							t.Errorf("case %d: %s fires with %s at minute %d, which it never should", i, name, ls, m)
						}
					}
					for ls, w := range c.want {
						switch {
						case in(w.fires, m) && !got[ls]:
							t.Errorf("case %d: %s is silent for %s at minute %d, want it firing", i, name, ls, m)
						case in(w.silent, m) && got[ls]:
							t.Errorf("case %d: %s fires for %s at minute %d, want it silent", i, name, ls, m)
						}
					}
				}
				t.Logf("case %d: minutes firing by label set: %v", i, fired)
			}
		})
	}
}

// series is a storage.Queryable of series given in Prometheus's series
// notation, one a line, their values a minute apart from time 0.
type series []storage.Series

func loadSeries(t *testing.T, load string) series {
	t.Helper()
	var out series
	for line := range strings.Lines(load) {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		ls, vals, err := parser.ParseSeriesDesc(line)
		if err != nil {
			t.Fatalf("series %q: %v", line, err)
		}
		var samples []chunks.Sample
		for i, v := range vals {
			if !v.Omitted {
				samples = append(samples, sample{t: int64(i) * time.Minute.Milliseconds(), f: v.Value})
			}
		}
		out = append(out, storage.NewListSeries(ls, samples))
	}
	return out
}

func (s series) Querier(int64, int64) (storage.Querier, error) {
	return &storage.MockQuerier{SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var sel []storage.Series
		for _, x := range s {
			if slices.IndexFunc(ms, func(m *labels.Matcher) bool { return !m.Matches(x.Labels().Get(m.Name)) }) < 0 {
				sel = append(sel, x)
			}
		}
		slices.SortFunc(sel, func(a, b storage.Series) int { return labels.Compare(a.Labels(), b.Labels()) })
		return &seriesSet{list: sel, i: -1}
	}}, nil
}

type seriesSet struct {
	list []storage.Series
	i    int
}

func (s *seriesSet) Next() bool                        { s.i++; return s.i < len(s.list) }
func (s *seriesSet) At() storage.Series                { return s.list[s.i] }
func (s *seriesSet) Err() error                        { return nil }
func (s *seriesSet) Warnings() annotations.Annotations { return nil }

// sample is a float sample (chunks.Sample).
type sample struct {
	t int64
	f float64
}

func (s sample) T() int64                      { return s.t }
func (s sample) F() float64                    { return s.f }
func (s sample) H() *histogram.Histogram       { return nil }
func (s sample) FH() *histogram.FloatHistogram { return nil }
func (s sample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
