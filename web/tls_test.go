package web_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spotter-harness/spotter/harness/anthropic/anthropictest"
	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/internal/testca"
	"github.com/spotter-harness/spotter/screen/screentest"
	"github.com/spotter-harness/spotter/web"
)

// peerName is the one name every test replica's certificate holds, as a
// Certificate of cert-manager's would (deploy/).
const peerName = "spotter-peer"

// tlsReplica is an in-process replica serving HTTPS with cert, which
// checks the others' certificates against roots.
func tlsReplica(t *testing.T, id, db string, cert tls.Certificate, roots *x509.CertPool) *inProcessReplica {
	t.Helper()
	var h http.Handler
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	hs.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv, err := web.New(t.Context(), web.Config{DataDir: t.TempDir(), DB: db, Token: testToken,
		Cluster: web.ClusterConfig{Advertise: "https://" + hs.Listener.Addr().String(), ReplicaID: id,
			LeaseTTL: 1500 * time.Millisecond, PeerTLS: &tls.Config{RootCAs: roots, ServerName: peerName}},
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return fakeDisplay{&screentest.Fake{Viewport: d.Size(), DPR: d.DPR}}, nil
		}})
	if err != nil {
		t.Fatalf("web.New(%s): %v", id, err)
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatalf("Start(%s): %v", id, err)
	}
	h = srv.Handler()
	hs.StartTLS()
	r := &inProcessReplica{srv: srv, http: hs}
	t.Cleanup(r.close)
	return r
}

// Replicas that advertise https forward to each other over TLS, checking
// each other's certificate against a CA: a session created through one
// with the client's own provider key and placed on the other gets the
// key there, over TLS. A replica that does not trust the others' CA
// forwards nothing to them (503), so no credential reaches a server it
// cannot verify.
func TestClusterTLS(t *testing.T) {
	t.Parallel()
	ca, other := testca.New(t), testca.New(t)
	cert, _, _ := ca.Issue(t, peerName)
	db := filepath.Join(t.TempDir(), "shared.db")
	a := tlsReplica(t, "a", db, cert, ca.Pool)
	b := tlsReplica(t, "b", db, cert, ca.Pool)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool, ServerName: peerName}}}
	const key = "sk-client-own-key-0123456789"
	model := anthropictest.NewServer(t, anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Hello.")}},
		anthropictest.Reply{Content: []json.RawMessage{anthropictest.Text("Hello again.")}})
	create := func() (id, by string) {
		t.Helper()
		body, _ := json.Marshal(spec("Say hello", map[string]any{"model": map[string]any{"provider": "anthropic",
			"name": modelName, "base_url": model.URL}}))
		req, _ := http.NewRequestWithContext(t.Context(), "PUT", a.http.URL+"/session", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(web.HeaderProviderKey, key)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("PUT /session: %v", err)
		}
		defer resp.Body.Close()
		evs := readSSE(t, resp.Body)
		if k := kinds(evs); resp.StatusCode != http.StatusOK || len(k) == 0 || k[len(k)-1] != "turn_stop:end_turn" {
			t.Fatalf("PUT /session = %d %v", resp.StatusCode, k)
		}
		return resp.Header.Get("X-Session-Id"), resp.Header.Get(web.HeaderReplica)
	}
	_, first := create()
	id, second := create()
	if first != "a" || second != "b" {
		t.Fatalf("sessions placed on %s then %s, want a (it tied), then b (it had more room)", first, second)
	}
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("X-Api-Key"); got != key {
			t.Errorf("model request %d carried key %q, want the client's: it crossed to b over TLS", i, got)
		}
	}
	// A replica that trusts another CA cannot forward to the others.
	c := tlsReplica(t, "c", db, cert, other.Pool)
	req, _ := http.NewRequestWithContext(t.Context(), "GET", c.http.URL+"/session/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b2), "did not answer") {
		t.Errorf("GET /session/%s through a replica that does not trust b's certificate = %d %s, want 503: b did not answer", id, resp.StatusCode, b2)
	}
	// Plain http never reaches a replica's listener.
	resp, err = http.Get(strings.Replace(b.http.URL, "https://", "http://", 1) + "/healthz")
	if err == nil {
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http to a TLS replica = %d, want it refused", resp.StatusCode)
		}
		resp.Body.Close()
	}
}
