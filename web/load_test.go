package web_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/internal/stats"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/web"
)

// Load shape (issue 10, "Load"): 50 API clients on 10 executor sessions,
// each client posting screenshot and click calls as fast as they are
// answered, with two SSE watchers per session. SPOTTER_LOAD_DURATION sets
// the length (default 20s, for CI); the run is ten minutes:
//
//	SPOTTER_INTEGRATION=1 SPOTTER_LOAD_DURATION=10m go test -run Load -timeout 30m ./web/
const (
	loadSessions = 10
	loadClients  = 50
	loadWatchers = 2 // per session
)

// loadPage is the page every session shows: buttons that count clicks.
const loadPage = `<!doctype html><title>load</title><style>button{width:150px;height:80px;margin:10px}</style>
<p id=n>0</p><script>let n=0;for(let i=0;i<12;i++){const b=document.createElement('button');b.textContent='b'+i;
b.onclick=()=>{document.getElementById('n').textContent=++n};document.body.append(b)}</script>`

// TestLoad runs the load on a real Chromium (SPOTTER_INTEGRATION=1) and
// reports errors (there must be none), the 95th percentile of the call
// round trip, and goroutines, heap and browser targets (renderer
// processes) before and after: once every session is deleted, none may be
// left over.
func TestLoad(t *testing.T) {
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the load test on a real Chromium")
	}
	dur := loadDuration(t)

	b, err := cdp.Launch(t.Context(), cdp.Config{Mode: loadMode(t)})
	if err != nil {
		t.Fatalf("launch Chromium: %v", err)
	}
	defer b.Close(context.Background())
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, loadPage)
	}))
	defer page.Close()
	c, stop := serveLoad(t, b)
	defer stop()

	before := measure(t)
	t.Logf("before: %s", before)
	ids := c.openSessions(page.URL)
	during := measure(t)
	run := c.runLoad(ids, dur)
	after := c.closeSessions(ids, before)
	checkLoad(t, dur, run, before, during, after)
}

// loadDuration is the length of the load: SPOTTER_LOAD_DURATION, default
// 20s.
func loadDuration(t *testing.T) time.Duration {
	dur := 20 * time.Second
	if v := os.Getenv("SPOTTER_LOAD_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SPOTTER_LOAD_DURATION=%q: want a duration such as 10m", v)
		}
		dur = d
	}
	return dur
}

// serveLoad serves the API on loopback, with sessions on displays of b,
// and returns a client of it and a func that stops serving and closes the
// server, reporting an error of either.
func serveLoad(t *testing.T, b *cdp.Browser) (*loadClient, func()) {
	srv, err := web.New(t.Context(), web.Config{
		DataDir: t.TempDir(),
		Token:   testToken,
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: d.Size(), DPR: d.DPR})
		},
	})
	if err != nil {
		t.Fatalf("web.New: %v", err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serveCtx, stopServe := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	stop := func() {
		stopServe()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		if err := srv.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
	c := &loadClient{t: t, base: "http://" + ln.Addr().String(),
		http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: loadClients + loadSessions*loadWatchers}}}
	return c, stop
}

// openSessions opens loadSessions executor sessions on pageURL and returns
// their IDs.
func (c *loadClient) openSessions(pageURL string) []string {
	ids := make([]string, loadSessions)
	for i := range ids {
		var out struct{ ID string }
		if code, body := c.do("POST", "/executor/sessions", fmt.Sprintf(`{"provider":"anthropic","display":{"width":1024,"height":640},"start_url":%q,"approvals":{"supervise":"none"}}`, pageURL), &out); code != http.StatusOK || out.ID == "" {
			c.t.Fatalf("POST /executor/sessions = %d %s", code, body)
		}
		ids[i] = out.ID
	}
	return ids
}

// loadRun is what the load's clients and watchers saw.
type loadRun struct {
	errs     atomic.Int64
	mu       sync.Mutex
	lat      []time.Duration // round trips of the calls that succeeded
	firstErr []string        // the first error of each kind, at most 10
	events   []atomic.Int64  // SSE events, per watcher
	peak     snapshot        // measured once the clients stopped
}

// fail counts an error and keeps it if it is the first of its kind.
func (r *loadRun) fail(format string, args ...any) {
	r.errs.Add(1)
	r.mu.Lock()
	// Keep the first of each kind (its first 60 bytes past the client).
	msg := fmt.Sprintf(format, args...)
	kind := msg[min(len(msg), strings.Index(msg, "=")+1):]
	kind = kind[:min(len(kind), 60)]
	if len(r.firstErr) < 10 && !slices.ContainsFunc(r.firstErr, func(e string) bool { return strings.Contains(e, kind) }) {
		r.firstErr = append(r.firstErr, msg)
	}
	r.mu.Unlock()
}

// runLoad runs the load on the sessions ids for dur: loadClients clients
// posting calls and loadWatchers SSE watchers per session. It returns
// once every client and watcher has stopped.
func (c *loadClient) runLoad(ids []string, dur time.Duration) *loadRun {
	ctx, cancel := context.WithTimeout(c.t.Context(), dur)
	defer cancel()
	r := &loadRun{events: make([]atomic.Int64, loadSessions*loadWatchers)}
	// SSE watchers follow each session until the load ends.
	var wg sync.WaitGroup
	watchCtx, stopWatch := context.WithCancel(context.Background())
	for i := range loadSessions * loadWatchers {
		id := ids[i%loadSessions]
		wg.Go(func() {
			if err := c.watch(watchCtx, id, &r.events[i]); err != nil {
				r.fail("watch %s: %v", id, err)
			}
		})
	}
	var clients sync.WaitGroup
	for i := range loadClients {
		id := ids[i%loadSessions]
		clients.Go(func() { c.callLoop(ctx, r, i, id) })
	}
	clients.Wait()
	r.peak = measure(c.t)
	stopWatch()
	wg.Wait()
	return r
}

// callLoop is client i of the load: it posts screenshot and click calls
// in turn to session id, each as soon as the last is answered, until ctx
// ends or the session is gone.
func (c *loadClient) callLoop(ctx context.Context, r *loadRun, i int, id string) {
	for n := 0; ctx.Err() == nil; n++ {
		input := `{"action":"screenshot"}`
		if n%2 == 1 {
			input = fmt.Sprintf(`{"action":"left_click","coordinate":[%d,%d]}`, 100+(n*37)%800, 30+(n*53)%200)
		}
		call := fmt.Sprintf(`{"type":"tool_use","id":"toolu_c%d_%d","name":"computer","input":%s}`, i, n, input)
		var out struct{ Status, Error string }
		start := time.Now()
		code, body := c.do("POST", "/executor/sessions/"+id+"/call?wait=60s", call, &out)
		d := time.Since(start)
		if code != http.StatusOK || out.Status != "done" || out.Error != "" {
			if ctx.Err() != nil && code == 0 {
				return // cut at the end of the run
			}
			r.fail("client %d call %d = %d %.300s", i, n, code, body)
			if code != http.StatusOK {
				return // the session is gone: stop this client
			}
			continue
		}
		r.mu.Lock()
		r.lat = append(r.lat, d)
		r.mu.Unlock()
	}
}

// closeSessions deletes the sessions ids and returns a snapshot taken
// once goroutines and browser targets are back to before's, or after
// about ten seconds.
func (c *loadClient) closeSessions(ids []string, before snapshot) snapshot {
	for _, id := range ids {
		if code, body := c.do("DELETE", "/executor/sessions/"+id, "", nil); code != http.StatusOK {
			c.t.Errorf("DELETE %s = %d %s", id, code, body)
		}
	}
	c.http.CloseIdleConnections()
	// Leftovers take a moment to go: poll, bounded.
	var after snapshot
	for range 100 {
		after = measure(c.t)
		if after.goroutines <= before.goroutines+2 && after.targets <= before.targets {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return after
}

// checkLoad reports the run r of length dur and checks it: no errors,
// calls completed, events to every watcher, the sessions' tabs seen while
// they were open, and nothing leaked once they were closed.
func checkLoad(t *testing.T, dur time.Duration, r *loadRun, before, during, after snapshot) {
	p50, p95 := stats.Percentile(r.lat, 50), stats.Percentile(r.lat, 95)
	watched := int64(0)
	for i := range r.events {
		watched += r.events[i].Load()
		if r.events[i].Load() == 0 {
			t.Errorf("watcher %d got no events", i)
		}
	}
	t.Logf("load: %d clients on %d sessions for %s: %d calls (%.1f/s), %d errors; call round trip p50 %s, p95 %s; %d SSE events to %d watchers",
		loadClients, loadSessions, dur, len(r.lat), float64(len(r.lat))/dur.Seconds(), r.errs.Load(), p50, p95, watched, len(r.events))
	t.Logf("with sessions open: %s", during)
	t.Logf("at the end of the load: %s", r.peak)
	t.Logf("after closing every session: %s", after)
	for _, e := range r.firstErr {
		t.Errorf("error: %s", e)
	}
	if r.errs.Load() != 0 {
		t.Errorf("%d errors, want 0", r.errs.Load())
	}
	if len(r.lat) == 0 {
		t.Errorf("no call completed")
	}
	if during.targets < before.targets+loadSessions {
		t.Errorf("browser targets with %d sessions open = %d, before %d: the count does not see the sessions' tabs",
			loadSessions, during.targets, before.targets)
	}
	// "before" is counted before the shared browser starts; once it runs,
	// Chromium keeps one spare renderer ready for the next tab (there were
	// loadSessions+1 during the load), so one renderer more is no leak.
	if after.targets > before.targets+1 {
		t.Errorf("browser targets leaked: %d before, %d after (one is Chromium's spare renderer)", before.targets, after.targets)
	}
	if after.goroutines > before.goroutines+2 {
		t.Errorf("goroutines leaked: %d before, %d after\n%s", before.goroutines, after.goroutines, goroutineDump())
	}
	// The store's caches and Go's allocator keep some heap; a leak of the
	// sessions' screenshots or events would be far more than this.
	if after.heap > before.heap+64<<20 {
		t.Errorf("heap grew from %d MiB to %d MiB", before.heap>>20, after.heap>>20)
	}
}

// loadClient is an API client with the server token.
type loadClient struct {
	t    *testing.T
	base string
	http *http.Client
}

// do sends a request and decodes a JSON answer into out; code 0 means the
// request did not complete.
func (c *loadClient) do(method, path, body string, out any) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, string(b)
		}
	}
	return resp.StatusCode, string(b)
}

// watch follows a session's events until ctx ends, counting them.
func (c *loadClient) watch(ctx context.Context, id string, n *atomic.Int64) error {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/session/"+id+"/events", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "event: ") {
			n.Add(1)
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("stream ended early: %v", sc.Err())
}

// snapshot is what the load test counts before and after.
type snapshot struct {
	goroutines int
	heap       uint64 // live heap after a GC, bytes
	targets    int    // the browser's renderer processes: its open tabs
}

func (s snapshot) String() string {
	return fmt.Sprintf("%d goroutines, heap %.1f MiB, %d browser renderers", s.goroutines, float64(s.heap)/(1<<20), s.targets)
}

func measure(t *testing.T) snapshot {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return snapshot{goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc, targets: renderers(t)}
}

// renderers counts the renderer processes of the browsers this test
// process started: each session's tab lives in its own browser context,
// hence its own renderer, so a tab left open keeps one alive.
func renderers(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("count renderers: %v", err)
	}
	parent := map[int]int{}
	isRenderer := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		isRenderer[pid] = bytes.Contains(cmd, []byte("--type=renderer"))
	}
	self, n := os.Getpid(), 0
	for pid, r := range isRenderer {
		if !r {
			continue
		}
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == self {
				n++
				break
			}
		}
	}
	return n
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// loadMode is the display mode of the load: SPOTTER_LOAD_MODE (auto,
// frame-control or screencast), default auto, as the server picks it.
func loadMode(t *testing.T) cdp.Mode {
	m, err := cdp.ParseMode(cmp.Or(os.Getenv("SPOTTER_LOAD_MODE"), "auto"))
	if err != nil {
		t.Fatalf("SPOTTER_LOAD_MODE: %v", err)
	}
	return m
}
