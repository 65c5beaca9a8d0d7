package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/spotter-harness/spotter/web"
)

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mcpAcrossReplicas: an MCP client's connection is placed on one replica
// and followed there from any other. The client's requests go to each
// replica in turn (initialize, the tool calls, its event stream, its
// DELETE); every one is answered by the replica that holds the
// connection (X-Spotter-Replica), the calls answer, and the session is a
// session of kind mcp for every replica's /sessions.
func (rt *replicaTest) mcpAcrossReplicas() {
	t := rt.t
	var mu sync.Mutex
	n := 0
	var via, by []string
	rtp := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		rep := rt.reps[n%len(rt.reps)]
		n++
		mu.Unlock()
		u, _ := url.Parse(rep.base)
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
		r.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil {
			mu.Lock()
			via, by = append(via, rep.id), append(by, resp.Header.Get(web.HeaderReplica))
			mu.Unlock()
		}
		return resp, err
	})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: rt.reps[0].base + "/mcp", HTTPClient: &http.Client{Transport: rtp}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("MCP connect across replicas: %v", err)
	}
	conn := cs.ID() // the Mcp-Session-Id: the holder's id, a dot, a random part
	holder := conn[:max(strings.LastIndexByte(conn, '.'), 0)]
	for _, args := range []map[string]any{{"kind": "screenshot"}, {"kind": "click", "at": map[string]any{"x": 5, "y": 5}}} {
		res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "computer", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("MCP computer %v across replicas = %v %+v", args, err, res)
		}
	}
	if err := cs.Close(); err != nil {
		t.Errorf("MCP close across replicas: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	// Every request after initialize names the connection and is answered
	// by its holder. (initialize itself, placed on the holder through
	// another replica, comes back with that replica's X-Spotter-Replica:
	// seen, not explained.)
	for i := 1; i < len(by); i++ {
		if by[i] != holder {
			t.Errorf("MCP request %d via %s answered by %q, want the holder %s (all: via %v, by %v)", i, via[i], by[i], holder, via, by)
		}
	}
	if slices.Equal(slices.Compact(slices.Clone(via)), []string{holder}) {
		t.Errorf("every MCP request went to the holder %s (via %v): the test proves nothing", holder, via)
	}
	t.Logf("MCP connection held by %s, requests via %v", holder, via)
}

// flags are the replicas' flags of the test beyond startReplica's: MCP
// sessions open the test's page, tagged mcp, and may go anywhere on it.
func (rt *replicaTest) flags() []string {
	return []string{"--mcp-start-url", rt.page.URL + "/?tag=mcp"}
}

// pinnedMCP is an MCP client whose connection was made on one replica
// and whose later requests go to the live replicas in turn.
type pinnedMCP struct {
	cs      *sdk.ClientSession
	holder  *replica
	session string // its default session
	mu      sync.Mutex
	by      string // the replica that answered the latest call
}

// mcpOn connects an MCP client on holder (its initialize marked as
// forwarded, so that holder answers it rather than placing it), opens its
// default session there and takes it to the page tagged mcpnext; the
// client's later requests go to the client's live replicas in turn, with
// the SDK's default reconnection of its event stream.
func (rt *replicaTest) mcpOn(holder *replica) *pinnedMCP {
	t := rt.t
	p := &pinnedMCP{holder: holder}
	rtp := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rep := holder
		r = r.Clone(r.Context())
		if r.Header.Get("Mcp-Session-Id") == "" {
			r.Header.Set(web.HeaderForwarded, "test")
		} else {
			rep = rt.cl.pick()
		}
		u, _ := url.Parse(rep.base)
		r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
		r.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultTransport.RoundTrip(r)
		if err == nil && r.Method == http.MethodPost {
			p.mu.Lock()
			p.by = resp.Header.Get(web.HeaderReplica)
			p.mu.Unlock()
		}
		return resp, err
	})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(),
		&sdk.StreamableClientTransport{Endpoint: holder.base + "/mcp", HTTPClient: &http.Client{Transport: rtp}}, nil)
	if err != nil {
		t.Fatalf("MCP connect on %s: %v", holder.id, err)
	}
	t.Cleanup(func() { cs.Close() })
	p.cs = cs
	if id := cs.ID(); !strings.HasPrefix(id, holder.id+".") {
		t.Fatalf("MCP connection %s, want one of %s", id, holder.id)
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "navigate", Arguments: map[string]any{"url": rt.page.URL + "/?tag=mcpnext"}})
	if err != nil || res.IsError {
		t.Fatalf("MCP navigate on %s = %v %+v", holder.id, err, res)
	}
	var n struct{ Session, URL string }
	json.Unmarshal([]byte(res.Content[len(res.Content)-1].(*sdk.TextContent).Text), &n)
	p.session = n.Session
	if o := rt.cl.owner(p.session); o != holder.id {
		t.Fatalf("MCP session %s is owned by %s, want %s", p.session, o, holder.id)
	}
	return p
}

// mcpAdopted: the MCP client's holder was killed with SIGKILL; its next
// call, made through the survivors (retried, as a client retries, while
// they answer 503 for the session between owners), is answered by the
// adopter in the same session, on its last page (whose button sees the
// click), telling the client that its browser was started anew; the
// session's record has every call.
func (rt *replicaTest) mcpAdopted(p *pinnedMCP) {
	t := rt.t
	start := time.Now()
	var res *sdk.CallToolResult
	var err error
	for tries := 1; ; tries++ {
		res, err = p.cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "computer",
			Arguments: map[string]any{"kind": "click", "at": map[string]any{"x": 350, "y": 190}}})
		if err == nil || time.Since(start) > 60*time.Second {
			t.Logf("MCP call after the kill of %s: %d tries in %v", p.holder.id, tries, time.Since(start).Round(time.Millisecond))
			break
		}
		t.Logf("MCP call after the kill of %s: %v", p.holder.id, err)
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
	if err != nil || res.IsError {
		t.Fatalf("the MCP client's call after its holder %s was killed = %v %+v", p.holder.id, err, res)
	}
	var n struct {
		Session, URL string
		Ran          int
		Notes        []string
	}
	json.Unmarshal([]byte(res.Content[len(res.Content)-1].(*sdk.TextContent).Text), &n)
	p.mu.Lock()
	by := p.by
	p.mu.Unlock()
	t.Logf("MCP session %s adopted: its call answered by %s %v after the kill was noticed (notes %q)", p.session, by,
		time.Since(start).Round(time.Millisecond), n.Notes)
	if n.Session != p.session || n.Ran != 1 || n.URL != rt.page.URL+"/?tag=mcpnext" || rt.byID[by] == nil || by == p.holder.id {
		t.Errorf("MCP call after the kill = %+v answered by %q, want session %s, its click run on %s/?tag=mcpnext by a survivor",
			n, by, p.session, rt.page.URL)
	}
	if !strings.Contains(strings.Join(n.Notes, " "), "browser was started anew at "+rt.page.URL+"/?tag=mcpnext") {
		t.Errorf("MCP call after the adoption says %q, want it to tell the browser was started anew", n.Notes)
	}
	rt.clickMu.Lock()
	clicks := rt.clicks["mcpnext"]
	rt.clickMu.Unlock()
	if clicks != 1 {
		t.Errorf("the page of the adopted MCP session saw %d clicks, want 1", clicks)
	}
	var h struct {
		Session   struct{ Kind, Status string }
		ToolCalls []struct{ Name, Status string }
	}
	resp, b := rt.cl.call("GET", "/session/"+p.session, nil, 30*time.Second)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &h) != nil {
		t.Fatalf("GET /session/%s = %d %s", p.session, resp.StatusCode, b)
	}
	if h.Session.Kind != "mcp" || h.Session.Status != "running" || len(h.ToolCalls) != 2 || resp.Header.Get(web.HeaderReplica) != by {
		t.Errorf("the adopted MCP session's record: %+v via %s, want kind mcp, running, its navigate and its click, owned by %s",
			h, resp.Header.Get(web.HeaderReplica), by)
	}
}
