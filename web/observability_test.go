package web_test

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/opsdoc"
	"github.com/spotter-harness/spotter/store/pgtest"
)

// families is a scrape of /metrics, parsed by Prometheus's own parser.
type families map[string]*dto.MetricFamily

func scrape(t *testing.T, url string) families {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fs
}

// value sums the samples of family name whose labels include labels
// ("k=v"): a counter's or gauge's value, a histogram's count.
func (f families) value(name string, labels ...string) float64 {
	fam := f[name]
	if fam == nil {
		return 0
	}
	sum := 0.0
	for _, m := range fam.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		if slices.ContainsFunc(labels, func(kv string) bool { k, v, _ := strings.Cut(kv, "="); return have[k] != v }) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// moved checks that family name (with labels) moved by want from before
// to after (at least want, with atLeast).
func moved(t *testing.T, before, after families, want float64, atLeast bool, name string, labels ...string) {
	t.Helper()
	d := after.value(name, labels...) - before.value(name, labels...)
	if d < 0 || (!atLeast && (d < want-1e-9 || d > want+1e-9)) || (atLeast && d < want) {
		cmp := "="
		if atLeast {
			cmp = ">="
		}
		t.Errorf("%s%v moved by %v, want %s %v", name, labels, d, cmp, want)
	}
}

// is checks a gauge's value.
func is(t *testing.T, f families, want float64, name string, labels ...string) {
	t.Helper()
	if got := f.value(name, labels...); got != want {
		t.Errorf("%s%v = %v, want %v", name, labels, got, want)
	}
}

// request sends a request to one replica and returns its answer, read.
func request(t *testing.T, r *replica, method, path string, body any, header ...string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, r.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s via %s: %v", method, path, r.id, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// eventually polls cond until it holds, for at most within.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pendingApproval waits until session has a pending approval, read
// through r, and returns its id.
func pendingApproval(t *testing.T, r *replica, session string) string {
	t.Helper()
	id := ""
	eventually(t, 60*time.Second, "a pending approval of "+session, func() bool {
		var out struct {
			Approvals []struct{ ID, Session string }
		}
		if _, b := request(t, r, "GET", "/approvals?status=pending", nil); json.Unmarshal(b, &out) == nil {
			for _, a := range out.Approvals {
				if a.Session == session || session == "" {
					id = a.ID
					return true
				}
			}
		}
		return false
	})
	return id
}

// sessionState reads a session's status and the replica answering for it.
func sessionState(t *testing.T, r *replica, id string) (status, owner string) {
	t.Helper()
	resp, b := request(t, r, "GET", "/session/"+id, nil)
	var h clusterHistory
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &h) != nil {
		return "", ""
	}
	return h.Session.Status, resp.Header.Get("X-Spotter-Replica")
}

// shopServer serves the shop page: its Buy now button is flagged by the
// default approval rules.
func shopServer(t *testing.T) *httptest.Server {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, shopPage)
	}))
	t.Cleanup(page.Close)
	return page
}

// otlpReceiver is an in-process OTLP/HTTP trace receiver: it keeps every
// span it is sent, with the service.instance.id of its resource.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []span
}

type span struct {
	instance             string
	trace, id, parent    string
	name                 string
	attrs                map[string]string
	start, end           uint64
	statusCode, kindName string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want protobuf at /v1/traces", http.StatusBadRequest)
			return
		}
		body, err := io.ReadAll(req.Body)
		var in coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &in)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range in.ResourceSpans {
			inst := attrMap(rs.GetResource().GetAttributes())["service.instance.id"]
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					r.spans = append(r.spans, span{instance: inst, trace: hex.EncodeToString(s.TraceId), id: hex.EncodeToString(s.SpanId),
						parent: hex.EncodeToString(s.ParentSpanId), name: s.Name, attrs: attrMap(s.Attributes),
						start: s.StartTimeUnixNano, end: s.EndTimeUnixNano, statusCode: s.GetStatus().GetCode().String(), kindName: s.Kind.String()})
				}
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			m[kv.Key] = v.GetStringValue()
		case v.GetIntValue() != 0:
			m[kv.Key] = fmt.Sprint(v.GetIntValue())
		default:
			m[kv.Key] = fmt.Sprint(v.GetBoolValue())
		}
	}
	return m
}

// ofTrace returns the spans of trace id received so far.
func (r *otlpReceiver) ofTrace(id string) []span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []span
	for _, s := range r.spans {
		if s.trace == id {
			out = append(out, s)
		}
	}
	return out
}

// TestObservability runs two replicas sharing PostgreSQL, with their
// metrics listeners, tracing to an in-process OTLP receiver through the
// standard OTEL_* variables, and JSON logs, and drives real sessions in
// Chromium through them: first the trace of one session across both
// replicas, then the metrics of several (which ends by draining one
// replica).
func TestObservability(t *testing.T) {
	t.Parallel() // its servers are processes of their own
	if !integration() {
		t.Skip("SPOTTER_INTEGRATION=1 runs the observability tests (two replicas, PostgreSQL, real Chromium)")
	}
	bin := buildSpotter(t)
	dsn := pgtest.NewDB(t, pgtest.Start(t))
	page := shopServer(t)
	// Two sessions, one after the other, each a click on Buy now and
	// the model's last words.
	buy := anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("I will press Buy now."), click(t, "toolu_1", 350, 190)}}
	bought := anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Bought.")}}
	model := anthropictest.NewServer(t, buy, bought, buy, bought)
	otlp := newOTLPReceiver(t)
	env := []string{"ANTHROPIC_API_KEY=sk-ant-observability-test", "ANTHROPIC_BASE_URL=" + model.URL,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_BSP_SCHEDULE_DELAY=100"}
	data := t.TempDir()
	flags := []string{"--metrics-addr", "127.0.0.1:0", "--log-format", "json"}
	ra := startReplica(t, bin, "a", data, dsn, env, flags...)
	rb := startReplica(t, bin, "b", data, dsn, env, flags...)
	if ra.metrics == "" || rb.metrics == "" {
		t.Fatalf("spotter serve --metrics-addr printed no metrics URL (%q, %q)", ra.metrics, rb.metrics)
	}
	t.Run("TraceAcrossReplicas", func(t *testing.T) { testTraceAcrossReplicas(t, ra, rb, otlp, page.URL) })
	t.Run("Metrics", func(t *testing.T) { testMetrics(t, ra, rb, page.URL) })
}

// testMetrics scrapes /metrics of two replicas sharing PostgreSQL while
// real sessions run in Chromium, and checks that every family of
// docs/OPERATIONS.md moves as it should: an agent session whose click
// waits for a human (approvals pending, its model requests, tokens and
// cost, sandbox starts, egress decisions, captures, commits), decided
// through the other replica (forwarding); an executor session whose
// second call queues behind the first's approval (queue depth), and
// whose browser is killed (a crash and a relaunch); the owner drained,
// and the other replica adopting its sessions; readiness. The families a
// server exports are exactly those the doc lists.
func testMetrics(t *testing.T, ra, rb *replica, page string) {
	before := map[*replica]families{ra: scrape(t, ra.metrics), rb: scrape(t, rb.metrics)}
	for r, f := range before {
		is(t, f, 0, "spotter_ready") // nobody asked /readyz yet
		is(t, f, 0, "spotter_approvals_pending")
		if f.value("spotter_replica_lease_renewals_total", "outcome=ok") < 1 {
			t.Errorf("replica %s renewed no lease yet", r.id)
		}
	}

	// An agent session, whose click on Buy now waits for a human.
	spec := map[string]any{"messages": []map[string]any{{"role": "user", "content": "Buy the item."}},
		"model": map[string]any{"provider": "anthropic", "name": "claude-sonnet-4-5"}, "start_url": page + "/",
		"display": map[string]any{"width": 800, "height": 600}}
	created := make(chan []byte, 1)
	go func() {
		_, b := request(t, ra, "PUT", "/session", spec) // its stream ends with the turn
		created <- b
	}()
	approval := pendingApproval(t, rb, "")
	var ap struct{ Session string }
	_, b := request(t, rb, "GET", "/approvals?status=pending", nil)
	var list struct {
		Approvals []struct{ ID, Session string }
	}
	if json.Unmarshal(b, &list) != nil || len(list.Approvals) != 1 {
		t.Fatalf("GET /approvals = %s, want the one pending", b)
	}
	ap.Session = list.Approvals[0].Session
	_, ownerID := sessionState(t, rb, ap.Session)
	owner, other := ra, rb
	if ownerID == rb.id {
		owner, other = rb, ra
	}
	f := scrape(t, owner.metrics)
	b0 := before[owner]
	is(t, f, 1, "spotter_approvals_pending")
	if f.value("spotter_approval_oldest_pending_seconds") <= 0 {
		t.Errorf("spotter_approval_oldest_pending_seconds = %v with a request pending, want > 0", f.value("spotter_approval_oldest_pending_seconds"))
	}
	moved(t, b0, f, 1, false, "spotter_sessions", "kind=agent")
	moved(t, b0, f, 1, false, "spotter_sessions_created_total", "kind=agent")
	moved(t, b0, f, 1, false, "spotter_model_request_duration_seconds", "provider=anthropic", "model=claude-sonnet-4-5", "outcome=ok")
	moved(t, b0, f, 1000, false, "spotter_model_tokens_total", "provider=anthropic", "model=claude-sonnet-4-5", "type=input")
	moved(t, b0, f, 50, false, "spotter_model_tokens_total", "provider=anthropic", "model=claude-sonnet-4-5", "type=output")
	moved(t, b0, f, (1000*3+50*15)/1e6, false, "spotter_model_cost_dollars_total", "provider=anthropic", "model=claude-sonnet-4-5")
	moved(t, b0, f, 1, true, "spotter_sandbox_starts_total", "backend=local", "outcome=ok")
	moved(t, b0, f, 0, false, "spotter_sandbox_starts_total", "outcome=failed")
	moved(t, b0, f, 1, true, "spotter_sandbox_start_duration_seconds", "backend=local")
	moved(t, b0, f, 1, true, "spotter_egress_decisions_total", "verdict=allowed")
	moved(t, b0, f, 1, true, "spotter_capture_duration_seconds")
	moved(t, b0, f, 1, true, "spotter_settle_duration_seconds")
	moved(t, b0, f, 1, true, "spotter_store_commit_duration_seconds", "driver=postgres", "outcome=ok")
	moved(t, b0, f, 1, true, "spotter_store_commit_writes", "driver=postgres")
	moved(t, b0, f, 0, false, "spotter_action_duration_seconds") // the click waits
	moved(t, b0, f, 0, false, "spotter_step_duration_seconds")

	// Decided through the other replica, which forwards it to the owner.
	o0 := scrape(t, other.metrics)
	if resp, b := request(t, other, "POST", "/approvals/"+approval, map[string]any{"decision": "approve"}); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /approvals/%s via %s = %d %s", approval, other.id, resp.StatusCode, b)
	}
	moved(t, o0, scrape(t, other.metrics), 1, true, "spotter_replica_forwarded_requests_total", "outcome=ok")
	eventually(t, 60*time.Second, "the agent session idle", func() bool { st, _ := sessionState(t, owner, ap.Session); return st == "idle" })
	<-created
	f = scrape(t, owner.metrics)
	is(t, f, 0, "spotter_approvals_pending")
	is(t, f, 0, "spotter_approval_oldest_pending_seconds")
	moved(t, b0, f, 1, false, "spotter_approval_decision_seconds", "verdict=approve")
	moved(t, b0, f, 1, false, "spotter_action_duration_seconds", "kind=click", "outcome=ok")
	moved(t, b0, f, 1, false, "spotter_action_duration_seconds")
	moved(t, b0, f, 2, false, "spotter_step_duration_seconds")
	moved(t, b0, f, 2, false, "spotter_model_request_duration_seconds", "provider=anthropic")
	moved(t, b0, f, 2000, false, "spotter_model_tokens_total", "type=input")
	moved(t, b0, f, 2, true, "spotter_capture_duration_seconds")
	moved(t, b0, f, 1, false, "spotter_sessions", "kind=agent", "state=idle")

	// An executor session: its second call queues behind the first's
	// approval.
	resp, b := request(t, owner, "POST", "/executor/sessions", map[string]any{"provider": "anthropic", "start_url": page + "/",
		"display": map[string]any{"width": 800, "height": 600}})
	var ex struct{ ID string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &ex) != nil {
		t.Fatalf("POST /executor/sessions = %d %s", resp.StatusCode, b)
	}
	_, exOwnerID := sessionState(t, owner, ex.ID)
	exOwner := ra
	if exOwnerID == rb.id {
		exOwner = rb
	}
	e0 := scrape(t, exOwner.metrics)
	buy := json.RawMessage(click(t, "toolu_buy", 350, 190))
	if resp, b := request(t, exOwner, "POST", "/executor/sessions/"+ex.ID+"/call?wait=0s", buy); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST the click = %d %s, want 202 while it waits", resp.StatusCode, b)
	}
	exApproval := pendingApproval(t, exOwner, ex.ID)
	shot := func(id string) json.RawMessage {
		return anthropictest.ToolUse(id, "computer", map[string]any{"action": "screenshot"})
	}
	if resp, b := request(t, exOwner, "POST", "/executor/sessions/"+ex.ID+"/call?wait=0s", shot("toolu_shot")); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST the screenshot = %d %s, want 202 while it is queued", resp.StatusCode, b)
	}
	f = scrape(t, exOwner.metrics)
	is(t, f, 1, "spotter_executor_queued_calls")
	is(t, f, 1, "spotter_approvals_pending")
	moved(t, before[exOwner], f, 1, false, "spotter_sessions_created_total", "kind=executor")
	request(t, exOwner, "POST", "/approvals/"+exApproval, map[string]any{"decision": "approve"})
	if resp, b := request(t, exOwner, "GET", "/executor/sessions/"+ex.ID+"/calls/toolu_shot?wait=60s", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET the screenshot's result = %d %s", resp.StatusCode, b)
	}
	f = scrape(t, exOwner.metrics)
	is(t, f, 0, "spotter_executor_queued_calls")
	moved(t, e0, f, 1, false, "spotter_action_duration_seconds", "kind=screenshot", "outcome=ok")

	// Its browser dies: the next call finds it dead and starts it anew.
	browsers, _ := chromiumProcesses(exOwner.cmd.Process.Pid)
	if len(browsers) == 0 {
		t.Fatalf("no Chromium runs under replica %s", exOwner.id)
	}
	for _, p := range browsers {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	if resp, b := request(t, exOwner, "POST", "/executor/sessions/"+ex.ID+"/call?wait=60s", shot("toolu_after")); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST a screenshot after the crash = %d %s", resp.StatusCode, b)
	}
	f = scrape(t, exOwner.metrics)
	moved(t, e0, f, 1, true, "spotter_display_crashes_total", "display=browser")
	moved(t, e0, f, 1, true, "spotter_display_relaunches_total", "outcome=ok")
	all := families{}
	for name, fam := range scrape(t, owner.metrics) {
		all[name] = fam
	}
	for name, fam := range f {
		all[name] = fam
	}

	// The owner of the agent session drains; the other adopts it.
	survivor := other
	s0 := scrape(t, survivor.metrics)
	is(t, s0, 2, "spotter_replicas_live")
	_ = owner.cmd.Process.Signal(syscall.SIGTERM)
	<-owner.done
	eventually(t, 30*time.Second, "an adoption on "+survivor.id, func() bool {
		return scrape(t, survivor.metrics).value("spotter_replica_adoptions_total", "outcome=adopted") > s0.value("spotter_replica_adoptions_total", "outcome=adopted")
	})
	eventually(t, 30*time.Second, "one live replica seen by "+survivor.id, func() bool {
		return scrape(t, survivor.metrics).value("spotter_replicas_live") == 1
	})
	eventually(t, 60*time.Second, survivor.id+" ready", func() bool {
		resp, _ := request(t, survivor, "GET", "/readyz", nil)
		return resp.StatusCode == http.StatusOK
	})
	f = scrape(t, survivor.metrics)
	is(t, f, 1, "spotter_ready")
	moved(t, s0, f, 1, true, "spotter_replica_lease_renewals_total", "outcome=ok")
	moved(t, s0, f, 0, false, "spotter_replica_leases_lost_total")
	for name, fam := range f {
		if all[name] == nil {
			all[name] = fam
		}
	}

	// The families exported are the families documented.
	documented, err := opsdoc.Families("..")
	if err != nil {
		t.Fatal(err)
	}
	var exported []string
	for name := range all {
		if strings.HasPrefix(name, "spotter_") {
			exported = append(exported, name)
			if !documented[name] {
				t.Errorf("%s is exported but not in docs/OPERATIONS.md's table", name)
			}
		}
	}
	for name := range documented {
		if all[name] == nil {
			t.Errorf("docs/OPERATIONS.md lists %s, which no replica exported", name)
		}
	}
	t.Logf("%d spotter_* families exported and documented", len(exported))
}

// testTraceAcrossReplicas drives an agent session owned by one replica
// through the other, with a client's traceparent, both replicas
// exporting to an in-process OTLP receiver through the standard OTEL_*
// variables, and checks the tree of the session's trace: the client's
// span, the forwarding replica's server and client spans, the owner's
// server span, and under it each turn with its model request, its action
// (with the wait for the human, decided through the forwarding replica
// too), and its captures with their settle waits. The replicas' JSON log
// lines of the request and the turns carry the trace and session ids.
func testTraceAcrossReplicas(t *testing.T, ra, rb *replica, otlp *otlpReceiver, page string) {

	// The session, created idle through a, runs on a; every request of
	// the client goes through b.
	spec := map[string]any{"model": map[string]any{"provider": "anthropic", "name": "claude-sonnet-4-5"},
		"start_url": page + "/", "display": map[string]any{"width": 800, "height": 600}}
	resp, b := request(t, ra, "PUT", "/session", spec)
	id := resp.Header.Get("X-Session-Id")
	if resp.StatusCode != http.StatusOK || id == "" {
		t.Fatalf("PUT /session = %d %s, want a session", resp.StatusCode, b)
	}
	if _, owner := sessionState(t, rb, id); owner != ra.id {
		t.Fatalf("session %s runs on %q, want a (where it was created)", id, owner)
	}
	const traceID, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	tp := "00-" + traceID + "-" + clientSpan + "-01"
	done := make(chan []byte, 1)
	go func() {
		_, b := request(t, rb, "POST", "/session/"+id, map[string]any{"messages": []map[string]any{{"role": "user", "content": "Buy the item."}}},
			"traceparent", tp)
		done <- b
	}()
	approval := pendingApproval(t, rb, id)
	if resp, b := request(t, rb, "POST", "/approvals/"+approval, map[string]any{"decision": "approve"}, "traceparent", tp); resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /approvals/%s = %d %s", approval, resp.StatusCode, b)
	}
	<-done
	eventually(t, 60*time.Second, "the session idle", func() bool { st, _ := sessionState(t, rb, id); return st == "idle" })

	// The tree, once both turns' spans are in.
	var spans []span
	eventually(t, 30*time.Second, "the spans of both turns", func() bool {
		spans = otlp.ofTrace(traceID)
		n := 0
		for _, s := range spans {
			if s.name == "spotter.turn" && s.end != 0 {
				n++
			}
		}
		return n >= 2
	})
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	children := func(parent span, name string) []span {
		var out []span
		for _, s := range spans {
			if s.parent == parent.id && (name == "" || s.name == name) {
				out = append(out, s)
			}
		}
		return out
	}
	only := func(ss []span, what string) span {
		t.Helper()
		if len(ss) != 1 {
			var names []string
			for _, s := range spans {
				names = append(names, fmt.Sprintf("%s@%s(parent %s)", s.name, s.instance, s.parent))
			}
			t.Fatalf("%s: %d spans, want 1; the trace holds %v", what, len(ss), names)
		}
		return ss[0]
	}
	var roots []span
	for _, s := range spans {
		if s.parent == clientSpan {
			roots = append(roots, s)
		}
	}
	// The client's two requests, each at b.
	var post span
	for _, s := range roots {
		if s.instance != "b" || s.kindName != "SPAN_KIND_SERVER" {
			t.Errorf("span %s (%s) is a child of the client's span, want b's server spans only", s.name, s.instance)
		}
		if s.name == "POST /session/:id" {
			post = s
		}
	}
	if post.id == "" || post.attrs["spotter.session.id"] != id || post.attrs["spotter.replica"] != "b" {
		t.Fatalf("b's server span of the user message = %+v, want POST /session/:id of %s on b", post, id)
	}
	fwd := only(children(post, "forward POST"), "b's forwarding span")
	if fwd.instance != "b" || fwd.kindName != "SPAN_KIND_CLIENT" {
		t.Errorf("forwarding span on %s of kind %s, want b's client span", fwd.instance, fwd.kindName)
	}
	owned := only(children(fwd, "POST /session/:id"), "a's server span of the forwarded message")
	if owned.instance != "a" || owned.attrs["spotter.replica"] != "a" {
		t.Errorf("the forwarded message's server span is on %s (replica %s), want a", owned.instance, owned.attrs["spotter.replica"])
	}
	turns := children(owned, "spotter.turn")
	if len(turns) != 2 {
		t.Fatalf("a's message span has %d turns, want 2", len(turns))
	}
	slices.SortFunc(turns, func(x, y span) int { return strings.Compare(x.attrs["spotter.step"], y.attrs["spotter.step"]) })
	for i, turn := range turns {
		if turn.instance != "a" || turn.attrs["spotter.session.id"] != id {
			t.Errorf("turn %d on %s of session %q, want a's, of %s", i+1, turn.instance, turn.attrs["spotter.session.id"], id)
		}
		mr := only(children(turn, "spotter.model.request"), fmt.Sprintf("turn %d's model request", i+1))
		if mr.attrs["gen_ai.provider.name"] != "anthropic" || mr.attrs["gen_ai.request.model"] != "claude-sonnet-4-5" ||
			mr.attrs["gen_ai.usage.input_tokens"] != "1000" || mr.start < turn.start || mr.end > turn.end {
			t.Errorf("turn %d's model request %+v, want anthropic claude-sonnet-4-5 with 1000 input tokens, within the turn", i+1, mr)
		}
	}
	act := only(children(turns[0], "spotter.action"), "the first turn's action")
	if act.attrs["spotter.action.kind"] != "click" || act.statusCode == "STATUS_CODE_ERROR" {
		t.Errorf("the first turn's action = %+v, want a click that ran", act)
	}
	wait := only(children(act, "spotter.approval.wait"), "the click's approval wait")
	if wait.attrs["spotter.approval.id"] != approval || wait.attrs["spotter.approval.verdict"] != "approve" {
		t.Errorf("the approval wait = %+v, want %s approved", wait, approval)
	}
	capture := only(children(turns[0], "spotter.capture"), "the first turn's capture")
	settle := only(children(capture, "spotter.settle"), "the capture's settle wait")
	if settle.start != capture.start || settle.end > capture.end {
		t.Errorf("settle %d-%d, capture %d-%d: want the settle at the capture's start, within it", settle.start, settle.end, capture.start, capture.end)
	}
	if len(children(turns[1], "spotter.action")) != 0 {
		t.Errorf("the second turn (the model's last words) has actions")
	}
	for _, s := range spans {
		if _, ok := byID[s.parent]; !ok && s.parent != clientSpan {
			t.Errorf("span %s on %s has parent %s, which is neither in the trace nor the client's", s.name, s.instance, s.parent)
		}
	}

	// The log lines of the message's requests and of the turns carry the
	// trace id, and a's turn lines the session's.
	checkLogs := func(r *replica, msg string, want int) {
		t.Helper()
		n := 0
		sc := bufio.NewScanner(strings.NewReader(r.stderr()))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			if line["msg"] == msg && line["trace_id"] == traceID {
				n++
				if route, _ := line["route"].(string); (msg == "turn" || strings.HasPrefix(route, "/session/")) && line["session"] != id {
					t.Errorf("replica %s log line %s: session %v, want %s", r.id, sc.Text(), line["session"], id)
				}
			}
		}
		if n < want {
			t.Errorf("replica %s logged %d %q lines of trace %s, want at least %d:\n%s", r.id, n, msg, traceID, want, r.stderr())
		}
	}
	checkLogs(rb, "request", 2) // the message and the decision
	checkLogs(ra, "request", 2) // both forwarded
	checkLogs(ra, "turn", 2)
}
