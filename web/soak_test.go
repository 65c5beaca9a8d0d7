package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness"
	"github.com/spotter-harness/spotter/harness/anthropic"
	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/web"
)

// noisyPage draws a canvas of random pixels, anew on every click: its
// screenshots compress badly, as a busy real page's do.
const noisyPage = `<!doctype html><html><head><title>Noise</title><style>body{margin:0}</style></head><body>
<canvas id=c width=640 height=400></canvas><script>
function draw(){const c=document.getElementById('c').getContext('2d');const d=c.createImageData(640,400);
for(let i=0;i<d.data.length;i++)d.data[i]=Math.random()*256|0;c.putImageData(d,0,0)}
draw();document.addEventListener('click',draw);</script></body></html>`

// Soak tolerances: what may stay after every session of the loop was
// deleted, over the baseline taken after one warm-up round (GC forced,
// memory returned to the OS, idle connections closed).
const (
	soakHeapTolerance = 4 << 20  // Go heap in use
	soakRSSTolerance  = 24 << 20 // resident set
	soakGoroutines    = 10
	soakFDs           = 10
)

// usage is what the soak measures of its own process, which runs the
// server, and of the Chromium processes it started.
type usage struct {
	rss, heap       uint64
	goroutines, fds int
	chromium        int
}

func (u usage) String() string {
	return fmt.Sprintf("RSS %.1f MB, heap in use %.1f MB, %d goroutines, %d fds, %d Chromium processes",
		float64(u.rss)/(1<<20), float64(u.heap)/(1<<20), u.goroutines, u.fds, u.chromium)
}

func soakMeasure(t *testing.T) usage {
	t.Helper()
	// The spec check holds the exchanges it has not checked yet (their
	// screenshots too): check them now, so the heap is the server's.
	for _, v := range web.LeftSpecViolations() {
		t.Errorf("docs/openapi.yaml: %s", v)
	}
	http.DefaultClient.CloseIdleConnections()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u := usage{heap: ms.HeapInuse, goroutines: runtime.NumGoroutine(), chromium: len(chromiumUnder(os.Getpid()))}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
				u.rss = kb << 10
			}
		}
	}
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		u.fds = len(fds)
	}
	return u
}

// chromiumUnder lists the Chromium processes that descend from pid.
func chromiumUnder(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	isChromium := map[int]bool{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 {
			continue
		}
		parent[p], _ = strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		isChromium[p] = strings.Contains(string(cmd), "chromium")
	}
	var out []int
	for p := range parent {
		if !isChromium[p] {
			continue
		}
		for q, n := parent[p], 0; q > 1 && n < 64; q, n = parent[q], n+1 {
			if q == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// soakSettle waits (bounded) until goroutines and Chromium processes are back
// to base, as closing browsers and connections takes a moment, and
// returns the measure then.
func soakSettle(t *testing.T, base usage) usage {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		u := soakMeasure(t)
		if (u.goroutines <= base.goroutines+soakGoroutines && u.chromium <= base.chromium) || time.Now().After(deadline) {
			return u
		}
		select {
		case <-time.After(200 * time.Millisecond): // polling a condition, not waiting for a page
		case <-t.Context().Done():
			return u
		}
	}
}

// TestSoak creates, drives and deletes executor and agent sessions in a
// loop against an in-process server on loopback, with the server's own
// display opener (a Chromium per session behind the egress proxy), SQLite
// and a fake Anthropic endpoint, and checks that the process's heap, RSS,
// goroutines, file descriptors and Chromium processes come back to where
// they were after a warm-up round. SPOTTER_SOAK=1h runs it for an hour
// instead of a few rounds (go test -timeout 2h).
func TestSoak(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the soak test (real Chromium per session)")
	}
	rounds, until := 5, time.Time{}
	if v := os.Getenv("SPOTTER_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("SPOTTER_SOAK=%q: %v", v, err)
		}
		rounds, until = 1<<30, time.Now().Add(d)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, noisyPage)
	}))
	defer page.Close()
	// Each round's agent session talks to a fake endpoint of its own (in
	// memory), which goes with the session: a fake that kept every
	// request of an hour would be what grows.
	var model atomic.Pointer[anthropictest.Server]
	srv, err := web.New(t.Context(), web.Config{
		DataDir: t.TempDir(),
		Token:   testToken,
		NewModel: func(ctx context.Context, m session.ModelSpec, image screen.Size, tools []harness.ToolSpec) (harness.Model, error) {
			return anthropic.New(anthropic.Config{BaseURL: "http://anthropic.test", HTTPClient: model.Load().Client(),
				APIKey: "test", Model: m.Name, Display: image, Tools: tools, MaxRetries: -1})
		},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer func() {
		hs.Close()
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	e := &env{t: t, base: hs.URL}

	const calls = 8
	round := func(r int) {
		// An executor session: calls on the noisy page, an old call
		// asked for again, and DELETE.
		var ex struct{ ID string }
		postJSON(t, e, "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page.URL,
			"display": map[string]any{"width": 1024, "height": 640}}, http.StatusOK, &ex)
		for i := range calls {
			input := map[string]any{"action": "screenshot"}
			if i%2 == 1 {
				input = map[string]any{"action": "left_click", "coordinate": []int{300, 200}}
			}
			postJSON(t, e, "/executor/sessions/"+ex.ID+"/call?wait=60s",
				anthropictest.ToolUse(fmt.Sprintf("r%dc%d", r, i), "computer", input), http.StatusOK, nil)
		}
		resp := e.request("DELETE", "/executor/sessions/"+ex.ID, nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("DELETE executor session = %d", resp.StatusCode)
		}
		// An agent session: one screenshot, the end of the turn, stop.
		model.Store(anthropictest.New(t,
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.ToolUse(fmt.Sprintf("r%da", r), "computer",
				map[string]any{"action": "left_click", "coordinate": []int{300, 200}})}},
			anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("done")}},
		))
		resp, evs := e.stream("PUT", "/session", spec("Click the noise", map[string]any{"start_url": page.URL}))
		if got := kinds(evs); len(got) == 0 || got[len(got)-1] != "turn_stop:end_turn" {
			t.Fatalf("agent session stream = %v, want it to end with end_turn", got)
		}
		resp = e.request("POST", "/session/"+resp.Header.Get("X-Session-Id")+"/stop", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stop agent session = %d", resp.StatusCode)
		}
		if n := len(model.Load().Requests()); n != 2 {
			t.Fatalf("the agent session made %d model requests, want 2", n)
		}
		model.Store(nil)
	}

	start := soakMeasure(t)
	round(0) // warm-up: the first browser's libraries, pools, caches
	base := soakSettle(t, start)
	t.Logf("before: %v", start)
	t.Logf("baseline after a warm-up round: %v", base)
	t0 := time.Now()
	var peak uint64
	n := 0
	for r := 1; r <= rounds && (until.IsZero() || time.Now().Before(until)); r++ {
		round(r)
		n++
		if u := soakMeasure(t); u.rss > peak {
			peak = u.rss
		}
		if !until.IsZero() && r%25 == 0 {
			t.Logf("round %d, %v: %v", r, time.Since(t0).Round(time.Second), soakMeasure(t))
		}
	}
	end := soakSettle(t, base)
	t.Logf("after %d rounds (%d sessions, %d executor calls) in %v: %v; peak RSS between rounds %.1f MB",
		n, 2*n, n*calls, time.Since(t0).Round(time.Second), end, float64(peak)/(1<<20))
	if end.heap > base.heap+soakHeapTolerance {
		t.Errorf("heap in use grew by %.1f MB over %d rounds, tolerance %d MB", mb(end.heap-base.heap), n, soakHeapTolerance>>20)
	}
	if end.rss > base.rss+soakRSSTolerance {
		t.Errorf("RSS grew by %.1f MB over %d rounds, tolerance %d MB", mb(end.rss-base.rss), n, soakRSSTolerance>>20)
	}
	checkLeftOver(t, base, end)
}

func mb(b uint64) float64 { return float64(b) / (1 << 20) }

// postJSON posts body (JSON, or raw JSON as is) and decodes the answer
// into out, failing unless the status is want.
func postJSON(t *testing.T, e *env, path string, body any, want int, out any) {
	t.Helper()
	resp := e.request("POST", path, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s = %d %.300s, want %d", path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
	}
}

// checkLeftOver compares what a soak left (end) with its baseline: no more
// than a few goroutines and file descriptors, no Chromium.
func checkLeftOver(t *testing.T, base, end usage) {
	t.Helper()
	if end.goroutines > base.goroutines+soakGoroutines {
		t.Errorf("goroutines %d, baseline %d: more than %d stayed", end.goroutines, base.goroutines, soakGoroutines)
	}
	if end.fds > base.fds+soakFDs {
		t.Errorf("file descriptors %d, baseline %d: more than %d stayed", end.fds, base.fds, soakFDs)
	}
	if end.chromium > base.chromium {
		t.Errorf("Chromium processes %d, baseline %d: browsers stayed after their sessions were deleted", end.chromium, base.chromium)
	}
}
