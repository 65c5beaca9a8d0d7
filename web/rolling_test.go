package web_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/store/pgtest"
)

// liveSet is the replicas a client may send to: a Service's endpoints,
// which a rolling update changes under it.
type liveSet struct {
	mu   sync.Mutex
	reps []*replica
	n    int
}

func (l *liveSet) pick() *replica {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return l.reps[l.n%len(l.reps)]
}

func (l *liveSet) set(add, drop *replica) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if drop != nil {
		l.reps = slices.DeleteFunc(l.reps, func(r *replica) bool { return r == drop })
	}
	if add != nil {
		l.reps = append(l.reps, add)
	}
}

// pauseClient drives one executor session with screenshot calls, one
// after the other, through whichever replica the live set gives, retrying
// a call answered 503 or not answered until it is answered; it records
// when each call was answered.
type pauseClient struct {
	id    string
	done  []time.Time
	lat   []time.Duration
	fails []string
}

func (c *pauseClient) run(t *testing.T, live *liveSet, stop <-chan struct{}) {
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		body, _ := json.Marshal(anthropictest.ToolUse(fmt.Sprintf("c%d", i), "computer", map[string]any{"action": "screenshot"}))
		t0 := time.Now()
		for {
			r := live.pick()
			req, _ := http.NewRequestWithContext(t.Context(), "POST", r.base+"/executor/sessions/"+c.id+"/call?wait=60s", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
				if resp.StatusCode != http.StatusServiceUnavailable {
					c.fails = append(c.fails, fmt.Sprintf("call c%d via %s = %d %.200s", i, r.id, resp.StatusCode, b))
					break
				}
			}
			if t.Context().Err() != nil {
				return
			}
			select {
			case <-time.After(100 * time.Millisecond): // as a client honouring Retry-After would, sooner
			case <-t.Context().Done():
				return
			}
		}
		c.done = append(c.done, time.Now())
		c.lat = append(c.lat, time.Since(t0))
	}
}

// longestGap is the longest time between two answered calls in [from, to].
func (c *pauseClient) longestGap(from, to time.Time) time.Duration {
	var gap time.Duration
	last := from
	for _, d := range c.done {
		if d.Before(from) {
			continue
		}
		if d.After(to) {
			break
		}
		gap = max(gap, d.Sub(last))
		last = d
	}
	return max(gap, to.Sub(last))
}

// A rolling update of three replicas under live executor sessions, as a
// Deployment with maxSurge 1 and maxUnavailable 0 makes it: for each old
// replica, a new one starts and gets ready, then the old one gets SIGTERM,
// drains and hands its sessions over, and the others adopt them. Each
// session's client calls on throughout, retrying a 503 (a session between
// owners); the test reports the longest pause a client saw, and checks
// that every call was answered, none failed, and every session ends on a
// new replica.
func TestRollingUpdate(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the rolling update (the built binary, real Chromium, PostgreSQL)")
	}
	dsn := pgtest.NewDB(t, pgtest.Start(t))
	bin := buildSpotter(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, tagPage)
	}))
	t.Cleanup(page.Close)
	data := t.TempDir()
	var old []*replica
	for i := range 3 {
		r := startReplica(t, bin, fmt.Sprintf("old-%d", i), data, dsn, nil)
		waitReady(t, r)
		old = append(old, r)
	}
	live := &liveSet{reps: slices.Clone(old)}
	const sessions = 3
	clients := make([]*pauseClient, sessions)
	for i := range clients {
		var ex struct{ ID string }
		e := &env{t: t, base: old[i].base}
		postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL,
			"display": map[string]any{"width": 1024, "height": 640}}, http.StatusOK, &ex)
		clients[i] = &pauseClient{id: ex.ID}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, c := range clients {
		wg.Go(func() { c.run(t, live, stop) })
	}
	until(t, "every client to make calls", func() bool {
		for _, c := range clients {
			if len(c.done) < 3 {
				return false
			}
		}
		return true
	})

	begin := time.Now()
	var fresh []*replica
	for i, r := range old {
		n := startReplica(t, bin, fmt.Sprintf("new-%d", i), data, dsn, nil)
		waitReady(t, n)
		fresh = append(fresh, n)
		live.set(n, r)
		exited := r.terminate(t, 60*time.Second)
		t.Logf("replaced %s by %s: it exited %v after SIGTERM", r.id, n.id, exited.Round(time.Millisecond))
	}
	end := time.Now()
	// Every client makes a call on the new replicas, then stops.
	marks := make([]int, len(clients))
	for i, c := range clients {
		marks[i] = len(c.done)
	}
	until(t, "every client to make calls after the update", func() bool {
		for i, c := range clients {
			if len(c.done) < marks[i]+2 {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()

	var worst time.Duration
	var before []time.Duration
	for i, c := range clients {
		for _, f := range c.fails {
			t.Errorf("client %d: %s", i, f)
		}
		gap := c.longestGap(begin, end)
		worst = max(worst, gap)
		for j, d := range c.done {
			if d.Before(begin) {
				before = append(before, c.lat[j])
			}
		}
		t.Logf("client %d: %d calls, longest pause during the update %v", i, len(c.done), gap.Round(time.Millisecond))
		var by string
		resp, _ := (&client{t: t, reps: fresh}).call("GET", "/session/"+c.id, nil, 30*time.Second)
		by = resp.Header.Get("X-Spotter-Replica")
		if !slices.ContainsFunc(fresh, func(r *replica) bool { return r.id == by }) {
			t.Errorf("session %s is run by %q after the update, want a new replica", c.id, by)
		}
	}
	t.Logf("rolling update of 3 replicas with %d live sessions took %v; the longest pause a client saw: %v (a call's p50 before it: %v)",
		sessions, end.Sub(begin).Round(time.Millisecond), worst.Round(time.Millisecond), stats.Percentile(before, 50).Round(time.Millisecond))
}
