package web_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/store/pgtest"
)

// A page with one button; a click reports itself, with the page's tag,
// to the page's server, so that the test counts every click that ran.
const tagPage = `<!doctype html><html><head><title>Go</title><style>
body{margin:0;font:20px sans-serif} button{position:absolute;left:250px;top:150px;width:200px;height:80px;font-size:24px}
</style></head><body><h1>Press Go</h1><button id=go onclick="fetch('/clicked'+location.search);this.textContent='Pressed'">Go</button></body></html>`

// tagModel is a fake Anthropic endpoint every replica talks to. A session
// is known by the tag in its task: its first turn clicks the button, its
// second ends. The second turn of a held tag waits until released.
type tagModel struct {
	t *testing.T
	*httptest.Server

	mu     sync.Mutex
	turns  map[string][]int         // tag -> the turn (1, 2) of each request
	holds  map[string]chan struct{} // tag -> closed to release its second turn
	second map[string]chan struct{} // tag -> closed once its second turn was asked
}

func newTagModel(t *testing.T) *tagModel {
	m := &tagModel{t: t, turns: map[string][]int{}, holds: map[string]chan struct{}{}, second: map[string]chan struct{}{}}
	m.Server = httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(m.Close)
	return m
}

func (m *tagModel) hold(tag string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.holds[tag] = make(chan struct{})
}

func (m *tagModel) release(tag string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if h := m.holds[tag]; h != nil {
		close(h)
		delete(m.holds, tag)
	}
}

// asked returns a channel closed once tag's second turn is asked for.
func (m *tagModel) asked(tag string) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.second[tag] == nil {
		m.second[tag] = make(chan struct{})
	}
	return m.second[tag]
}

func (m *tagModel) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	tag := ""
	if i := bytes.Index(body, []byte("tag=")); i >= 0 {
		if j := bytes.IndexAny(body[i+4:], ` "\\.`); j >= 0 {
			tag = string(body[i+4 : i+4+j])
		}
	}
	results, _ := anthropictest.ToolResults(body)
	turn := 1
	if len(results) > 0 {
		turn = 2
	}
	m.mu.Lock()
	m.turns[tag] = append(m.turns[tag], turn)
	hold := m.holds[tag]
	if turn == 2 {
		if m.second[tag] == nil {
			m.second[tag] = make(chan struct{})
		}
		select {
		case <-m.second[tag]:
		default:
			close(m.second[tag])
		}
	}
	m.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	reply := anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Pressing Go."),
		anthropictest.ToolUse("toolu_"+tag, "computer", map[string]any{"action": "left_click", "coordinate": []int{350, 190}})}}
	if turn == 2 {
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return // the replica asking died
			}
		}
		reply = anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Pressed.")}}
	}
	anthropictest.New(m.t, reply).ServeHTTP(w, r)
}

func (m *tagModel) turnsOf(tag string) []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.turns[tag]...)
}

// replica is one `spotter serve --advertise` process.
type replica struct {
	id      string
	base    string
	metrics string // its /metrics URL, with --metrics-addr
	cmd     *exec.Cmd
	done    chan struct{}
	log     *bytes.Buffer
	mu      *sync.Mutex
}

// terminate sends r SIGTERM, as a rolling update or a drain does, and
// returns how long it took to exit, which must be with 0 within limit.
func (r *replica) terminate(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	term := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
	case <-time.After(limit):
		t.Fatalf("replica %s did not exit within %v of SIGTERM:\n%s", r.id, limit, r.stderr())
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("replica %s exited %d after SIGTERM, want 0:\n%s", r.id, code, r.stderr())
	}
	return time.Since(term)
}

func (r *replica) stderr() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.log.String()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func startReplica(t *testing.T, bin, id, data, dsn string, env []string, flags ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", data, "--db", dsn, "--token", testToken,
		"--isolate", "local", "--advertise", "http://127.0.0.1:0", "--replica-id", id, "--lease", clusterLease.String(),
		"--drain-timeout", "5s", "-v"}, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	r := &replica{id: id, cmd: cmd, done: make(chan struct{}), log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stderr = lockedWriter{r.mu, r.log}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start replica %s: %v", id, err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "spotter: metrics at "); ok {
				r.metrics = u // before the listening line, which publishes it
			}
			if u, ok := strings.CutPrefix(sc.Text(), "spotter: listening on "); ok {
				lines <- u
			}
		}
		_ = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done
		}
		if t.Failed() {
			t.Logf("replica %s stderr:\n%s", id, r.stderr())
		}
	})
	select {
	case r.base = <-lines:
	case <-r.done:
		t.Fatalf("replica %s exited before listening:\n%s", id, r.stderr())
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %s did not listen within 60s", id)
	}
	return r
}

// clusterLease is the replicas' lease in the test: adoption takes about
// a lease and a third.
const clusterLease = 3 * time.Second

// client spreads its calls over the replicas it knows, retrying a call
// answered 503 (a session between owners) or not answered (a replica
// killed) on the next replica, within a bound.
type client struct {
	t    *testing.T
	mu   sync.Mutex
	reps []*replica
	next int
}

func (c *client) pick() *replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.reps[c.next%len(c.reps)]
	c.next++
	return r
}

func (c *client) drop(r *replica) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.reps {
		if x == r {
			c.reps = append(c.reps[:i], c.reps[i+1:]...)
		}
	}
}

func (c *client) do(method, path string, body any) (*http.Response, *replica, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	r := c.pick()
	req, err := http.NewRequestWithContext(c.t.Context(), method, r.base+path, rd)
	if err != nil {
		return nil, r, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	return resp, r, err
}

// call makes a call until it is answered with something but 503, for at
// most within, and returns the answer with its body read.
func (c *client) call(method, path string, body any, within time.Duration) (*http.Response, []byte) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, r, err := c.do(method, path, body)
		var b []byte
		if err == nil {
			b, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				return resp, b
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("%s %s via %s: %v %s, still not answered after %v", method, path, r.id, err, b, within)
		}
		select {
		case <-c.t.Context().Done():
			c.t.Fatal(c.t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type clusterHistory struct {
	Session struct{ ID, Status string }
	LastSeq int64
}

// waitFor polls a session's history (any replica) until ok says so.
func (c *client) waitFor(id string, within time.Duration, ok func(clusterHistory) bool) (clusterHistory, string) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for {
		resp, b := c.call("GET", "/session/"+id, nil, within)
		var h clusterHistory
		if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &h) == nil && ok(h) {
			return h, resp.Header.Get("X-Spotter-Replica")
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("session %s: %d %s, not as wanted within %v", id, resp.StatusCode, b, within)
		}
		select {
		case <-c.t.Context().Done():
			c.t.Fatal(c.t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// owner asks any replica which one runs a session.
func (c *client) owner(id string) string {
	c.t.Helper()
	resp, b := c.call("GET", "/session/"+id, nil, 30*time.Second)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET /session/%s = %d %s", id, resp.StatusCode, b)
	}
	return resp.Header.Get("X-Spotter-Replica")
}

// events reads a session's whole stored stream through any replica.
func (c *client) events(id string) []sseEvent {
	c.t.Helper()
	resp, b := c.call("GET", "/session/"+id, nil, 30*time.Second)
	var h clusterHistory
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &h) != nil {
		c.t.Fatalf("GET /session/%s = %d %s", id, resp.StatusCode, b)
	}
	r, rep, err := c.do("GET", fmt.Sprintf("/session/%s/events?after=0", id), nil)
	if err != nil || r.StatusCode != http.StatusOK {
		c.t.Fatalf("GET /session/%s/events via %s: %v %v", id, rep.id, r, err)
	}
	defer r.Body.Close()
	sr := newSSEReader(r.Body)
	var out []sseEvent
	for int64(len(out)) < h.LastSeq {
		e, err := sr.next()
		if err != nil {
			c.t.Fatalf("events of %s via %s after %d of %d: %v", id, rep.id, len(out), h.LastSeq, err)
		}
		out = append(out, e)
	}
	return out
}

// TestReplicas runs three `spotter serve` replicas on loopback sharing one
// PostgreSQL, with a client that spreads its calls over them. Sessions are
// placed on all three; the owner of a session whose turn is in the middle
// (its model's answer held back), which also holds an MCP client's
// session, is killed with SIGKILL, then the owner of a session waiting
// for an approval; a survivor adopts each and finishes it (the MCP
// client's next call answers on its session's last page), while a client
// follows that session's events through another replica. Then the last survivor drains (SIGTERM) with a turn running,
// into a replica that just joined. Every session ends its turn, every
// event stream is gap-free with each call and result once, and every
// click ran once.
func TestReplicas(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the replicas (the built binary, real Chromium, PostgreSQL)")
	}
	rt := startReplicas(t)
	// Six sessions, created through each replica in turn. "mid" will be
	// killed mid-turn, "appr" waits for an approval.
	tags := []string{"t0", "mid", "appr", "t3", "t4", "t5"}
	midStream := rt.placeSessions(tags)
	rt.checkPlacement(tags)
	rt.mcpAcrossReplicas()
	mcp := rt.mcpOn(rt.byID[rt.owners["mid"]])
	rt.killMidTurn(midStream)
	rt.mcpAdopted(mcp)
	rt.killWithApprovalPending()
	rt.checkSessions(tags)
	rt.drainIntoNewReplica(tags)
	t.Logf("done after %v", time.Since(rt.t0).Round(time.Millisecond))
}

// replicaTest is TestReplicas's cluster: the replicas sharing one
// PostgreSQL and one data directory, the page whose button reports its
// clicks, the fake model, a client that spreads its calls over the live
// replicas, and each session's ID and first owner by tag.
type replicaTest struct {
	t     *testing.T
	t0    time.Time
	bin   string // the built spotter
	dsn   string
	data  string   // shared, as a ReadWriteMany volume is
	env   []string // the replicas' environment: the fake model
	page  *httptest.Server
	model *tagModel
	reps  []*replica // the first three replicas, as started
	byID  map[string]*replica
	cl    *client

	ids    map[string]string // tag -> session ID
	owners map[string]string // tag -> the replica that created the session

	clickMu sync.Mutex
	clicks  map[string]int // tag -> clicks that ran on its page
}

// startReplicas builds spotter, starts PostgreSQL, the page and the fake
// model, then three replicas, and waits until each is ready.
func startReplicas(t *testing.T) *replicaTest {
	rt := &replicaTest{t: t, t0: time.Now(), byID: map[string]*replica{},
		ids: map[string]string{}, owners: map[string]string{}, clicks: map[string]int{}}
	rt.dsn = pgtest.NewDB(t, pgtest.Start(t))
	rt.bin = buildSpotter(t)
	t.Logf("built spotter and started PostgreSQL in %v", time.Since(rt.t0).Round(time.Millisecond))

	rt.page = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/clicked" {
			rt.clickMu.Lock()
			rt.clicks[r.URL.Query().Get("tag")]++
			rt.clickMu.Unlock()
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, tagPage)
	}))
	t.Cleanup(rt.page.Close)
	rt.model = newTagModel(t)
	rt.env = []string{"ANTHROPIC_BASE_URL=" + rt.model.URL, "ANTHROPIC_API_KEY=test"}
	rt.data = t.TempDir()

	for i := range 3 {
		rt.reps = append(rt.reps, startReplica(t, rt.bin, fmt.Sprintf("r%d", i+1), rt.data, rt.dsn, rt.env, rt.flags()...))
	}
	for _, r := range rt.reps {
		rt.byID[r.id] = r
		waitReady(t, r)
	}
	t.Logf("three replicas ready after %v", time.Since(rt.t0).Round(time.Millisecond))
	rt.cl = &client{t: t, reps: append([]*replica(nil), rt.reps...)}
	return rt
}

// waitReady polls r's /readyz until it answers 200, for at most 60s.
func waitReady(t *testing.T, r *replica) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(r.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s not ready within 60s:\n%s", r.id, r.stderr())
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// placeSessions creates a session per tag through the client, so through
// each replica in turn, and records its ID and owner. The second turn of
// "mid" is held, and its stream is read in the background into the
// returned channel; "appr" confirms clicks, so its stream must stop for
// the approval; every other stream must end its turn.
func (rt *replicaTest) placeSessions(tags []string) <-chan []sseEvent {
	t := rt.t
	rt.model.hold("mid")
	midStream := make(chan []sseEvent, 1)
	for _, tag := range tags {
		extra := map[string]any{"start_url": rt.page.URL + "/?tag=" + tag}
		if tag == "appr" {
			extra["approvals"] = map[string]any{"confirm": []string{"click"}}
		}
		resp, r, err := rt.cl.do("PUT", "/session", spec("Press Go. tag="+tag+" .", extra))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("PUT /session (%s) via %s = %v, %v", tag, r.id, resp, err)
		}
		rt.ids[tag], rt.owners[tag] = resp.Header.Get("X-Session-Id"), resp.Header.Get("X-Spotter-Replica")
		if tag == "mid" {
			go func() {
				defer resp.Body.Close()
				sr := newSSEReader(resp.Body)
				var evs []sseEvent
				for {
					e, err := sr.next()
					if err != nil {
						break
					}
					evs = append(evs, e)
				}
				midStream <- evs
			}()
			continue
		}
		evs := readSSE(t, resp.Body)
		resp.Body.Close()
		want := "turn_stop:end_turn"
		if tag == "appr" {
			want = "turn_stop:tool_use"
		}
		if got := kinds(evs); len(got) == 0 || got[len(got)-1] != want {
			t.Fatalf("PUT /session (%s) via %s: stream %v, want it to end with %s", tag, r.id, got, want)
		}
	}
	return midStream
}

// checkPlacement checks that every replica runs some of the sessions, and
// that any replica answers for a session with its owner's answer.
func (rt *replicaTest) checkPlacement(tags []string) {
	t := rt.t
	perReplica := map[string]int{}
	for _, tag := range tags {
		if rt.byID[rt.owners[tag]] == nil {
			t.Fatalf("session %s is owned by %q, not a replica", tag, rt.owners[tag])
		}
		perReplica[rt.owners[tag]]++
	}
	t.Logf("sessions per replica: %v (owners %v)", perReplica, rt.owners)
	if len(perReplica) != 3 {
		t.Errorf("sessions per replica = %v, want every replica to run some: new sessions go where there is room", perReplica)
	}
	// Any replica answers for any session.
	for _, r := range rt.reps {
		req, _ := http.NewRequest("GET", r.base+"/session/"+rt.ids["t0"], nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Spotter-Replica") != rt.owners["t0"] {
			t.Errorf("GET /session/%s via %s = %v, %v, want 200 from its owner %s", rt.ids["t0"], r.id, resp, err, rt.owners["t0"])
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

// kill kills r with SIGKILL, waits for it to exit and stops sending the
// client's calls to it.
func (rt *replicaTest) kill(r *replica) {
	if err := r.cmd.Process.Kill(); err != nil {
		rt.t.Fatal(err)
	}
	<-r.done
	rt.cl.drop(r)
}

// killMidTurn kills the owner of "mid" while its model's second answer is
// held, then releases the answer; a survivor must adopt the session and
// end its turn. midStream is the stream placeSessions read.
func (rt *replicaTest) killMidTurn(midStream <-chan []sseEvent) {
	t := rt.t
	<-rt.model.asked("mid")
	victim := rt.byID[rt.owners["mid"]]
	kill := time.Now()
	rt.kill(victim)
	rt.model.release("mid")
	if evs := <-midStream; len(evs) == 0 {
		t.Log("the stream of the killed replica's session ended with the replica")
	}
	_, by := rt.cl.waitFor(rt.ids["mid"], 60*time.Second, func(h clusterHistory) bool { return true })
	adopted := time.Since(kill)
	_, by = rt.cl.waitFor(rt.ids["mid"], 60*time.Second, func(h clusterHistory) bool { return h.Session.Status == "idle" })
	finished := time.Since(kill)
	t.Logf("kill -9 of %s mid-turn: its session answered again after %v (adopted by %s), its turn ended after %v",
		victim.id, adopted.Round(time.Millisecond), by, finished.Round(time.Millisecond))
	if by == victim.id || rt.byID[by] == nil {
		t.Errorf("session mid is answered by %q after its owner %s was killed, want a survivor", by, victim.id)
	}
}

// killWithApprovalPending kills the owner of "appr" (maybe the adopter of
// its first owner's sessions), whose approval is pending, and decides it
// through the last replica; the turn must end. A client follows the
// session's events through another replica across the kill and must get
// the whole stream, gap-free, after reconnecting.
func (rt *replicaTest) killWithApprovalPending() {
	t := rt.t
	var pend struct {
		Approvals []struct{ ID, ToolCallID, Status string }
	}
	_, b := rt.cl.call("GET", "/approvals?status=pending&session="+rt.ids["appr"], nil, 30*time.Second)
	if err := json.Unmarshal(b, &pend); err != nil || len(pend.Approvals) != 1 {
		t.Fatalf("pending approvals of appr = %s, want one", b)
	}
	victim := rt.byID[rt.cl.owner(rt.ids["appr"])]
	var via *replica
	for _, r := range rt.cl.reps {
		if r != victim {
			via = r
		}
	}
	followed := followEvents(t, via, rt.ids["appr"])
	kill := time.Now()
	rt.kill(victim)
	resp, b := rt.cl.call("POST", "/approvals/"+pend.Approvals[0].ID, map[string]any{"decision": "approve"}, 60*time.Second)
	decided := time.Since(kill)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /approvals/%s after its owner %s was killed = %d %s, want 200", pend.Approvals[0].ID, victim.id, resp.StatusCode, b)
	}
	_, by := rt.cl.waitFor(rt.ids["appr"], 60*time.Second, func(h clusterHistory) bool { return h.Session.Status == "idle" })
	t.Logf("kill -9 of %s with an approval pending: decided through a survivor after %v, the turn ended after %v on %s",
		victim.id, decided.Round(time.Millisecond), time.Since(kill).Round(time.Millisecond), by)
	f := <-followed
	evs := f.events
	for i, e := range evs {
		if e.ID != int64(i+1) {
			t.Errorf("the events of appr followed through %s across the kill: event %d has seq %d, want %d (a gap or a duplicate)", via.id, i, e.ID, i+1)
			break
		}
	}
	if k := kinds(evs); len(k) == 0 || k[len(k)-1] != "turn_stop:end_turn" || f.reconnects == 0 {
		t.Errorf("the events of appr followed through %s across the kill (%d reconnections): %v, want the whole stream to end_turn after a reconnection",
			via.id, f.reconnects, k)
	}
	t.Logf("a client following appr's events through %s reconnected %d times and got %d events, gap-free", via.id, f.reconnects, len(evs))
}

// followResult is what a client following a session's events got.
type followResult struct {
	events     []sseEvent
	reconnects int
}

// followEvents follows the events of session id through via (its requests
// forwarded to the owner) in a goroutine, reconnecting with Last-Event-ID
// when the stream breaks, until the turn ends, the test ends or 90s pass.
// The goroutine then sends what it got on the returned channel and exits.
func followEvents(t *testing.T, via *replica, id string) <-chan followResult {
	followed := make(chan followResult, 1)
	go func() {
		var f followResult
		defer func() { followed <- f }()
		deadline := time.Now().Add(90 * time.Second)
		for time.Now().Before(deadline) {
			req, _ := http.NewRequestWithContext(t.Context(), "GET", via.base+"/session/"+id+"/events", nil)
			req.Header.Set("Authorization", "Bearer "+testToken)
			if len(f.events) > 0 {
				req.Header.Set("Last-Event-ID", fmt.Sprint(f.events[len(f.events)-1].ID))
			}
			resp, err := http.DefaultClient.Do(req)
			if err == nil && resp.StatusCode == http.StatusOK {
				sr := newSSEReader(resp.Body)
				for {
					e, err := sr.next()
					if err != nil {
						break
					}
					f.events = append(f.events, e)
					if e.Type == "turn_stop" && e.field("stopReason") == "end_turn" {
						resp.Body.Close()
						return
					}
				}
			}
			if resp != nil {
				resp.Body.Close()
			}
			f.reconnects++
			select {
			case <-t.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return followed
}

// checkSessions reads every session through the survivor: a gap-free
// stream, each call and result once, the turn ended, each click ran once
// and the model was asked the first turn once.
func (rt *replicaTest) checkSessions(tags []string) {
	t := rt.t
	for _, tag := range tags {
		id := rt.ids[tag]
		rt.cl.waitFor(id, 60*time.Second, func(h clusterHistory) bool { return h.Session.Status == "idle" })
		evs := rt.cl.events(id)
		count := map[string]int{}
		for i, e := range evs {
			if e.ID != int64(i+1) {
				t.Errorf("session %s: event %d has seq %d: a gap or a duplicate", tag, i, e.ID)
			}
			count[e.Type+":"+e.field("toolCallId")]++
		}
		call := "toolu_" + tag
		if count["tool_call:"+call] != 1 || count["tool_result:"+call] != 1 {
			t.Errorf("session %s: %d tool_call and %d tool_result of %s, want one each: %v", tag,
				count["tool_call:"+call], count["tool_result:"+call], call, kinds(evs))
		}
		if k := kinds(evs); k[len(k)-1] != "turn_stop:end_turn" {
			t.Errorf("session %s: stream ends %v, want turn_stop end_turn", tag, k[len(k)-1:])
		}
		rt.clickMu.Lock()
		n := rt.clicks[tag]
		rt.clickMu.Unlock()
		if n != 1 {
			t.Errorf("session %s: the button was clicked %d times, want once", tag, n)
		}
		firsts := 0
		turns := rt.model.turnsOf(tag)
		for _, n := range turns {
			if n == 1 {
				firsts++
			}
		}
		if firsts != 1 {
			t.Errorf("session %s: model turns asked %v, want the first turn once", tag, turns)
		}
	}
}

// drainIntoNewReplica checks that a drain hands its sessions over: the
// last survivor starts a session "late" whose turn runs (its model's second
// answer held), a new replica joins, and the survivor gets SIGTERM. It
// waits --drain-timeout (5s) for the turn, then hands every session over
// and exits 0; the new replica answers for all of them (tags and "late")
// and finishes the turn it resumed.
func (rt *replicaTest) drainIntoNewReplica(tags []string) {
	t := rt.t
	last := rt.cl.reps[0]
	rt.model.hold("late")
	resp, _, err := rt.cl.do("PUT", "/session", spec("Press Go. tag=late .", map[string]any{"start_url": rt.page.URL + "/?tag=late"}))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT /session (late) = %v, %v", resp, err)
	}
	rt.ids["late"] = resp.Header.Get("X-Session-Id")
	go func() {
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
	}()
	<-rt.model.asked("late")
	r4 := startReplica(t, rt.bin, "r4", rt.data, rt.dsn, rt.env, rt.flags()...)
	rt.cl.reps = append(rt.cl.reps, r4)
	term := time.Now()
	exited := last.terminate(t, 30*time.Second)
	rt.cl.drop(last)
	rt.model.release("late")
	tags = append(tags, "late")
	for _, tag := range tags {
		if _, by := rt.cl.waitFor(rt.ids[tag], 30*time.Second, func(h clusterHistory) bool { return h.Session.Status == "idle" }); by != r4.id {
			t.Errorf("session %s is answered by %q after %s drained, want %s", tag, by, last.id, r4.id)
		}
	}
	t.Logf("drain of %s: exited %v after SIGTERM, every session answered by %s %v after it",
		last.id, exited.Round(time.Millisecond), r4.id, time.Since(term).Round(time.Millisecond))
	rt.checkHandedOver(tags)
}

// checkHandedOver checks each session's stream after the hand-over:
// gap-free, its call's result once and end_turn last; and that the button
// of "late", handed over mid-turn, was clicked once.
func (rt *replicaTest) checkHandedOver(tags []string) {
	t := rt.t
	for _, tag := range tags {
		evs := rt.cl.events(rt.ids[tag])
		count := map[string]int{}
		for i, e := range evs {
			if e.ID != int64(i+1) {
				t.Errorf("session %s after the hand-over: event %d has seq %d: a gap or a duplicate", tag, i, e.ID)
			}
			count[e.Type+":"+e.field("toolCallId")]++
		}
		if k := kinds(evs); k[len(k)-1] != "turn_stop:end_turn" || count["tool_result:toolu_"+tag] != 1 {
			t.Errorf("session %s after the hand-over: stream %v, want one result of its call and end_turn last", tag, k)
		}
	}
	rt.clickMu.Lock()
	if n := rt.clicks["late"]; n != 1 {
		t.Errorf("session late, handed over mid-turn: the button was clicked %d times, want once", n)
	}
	rt.clickMu.Unlock()
}
