package web_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

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
