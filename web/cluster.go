package web

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

	"github.com/spotter-harness/spotter/store"
)

// Replicas (docs/SCALE.md, "spotter serve with many replicas"): several
// servers share one PostgreSQL store. Each session is owned by the replica
// that runs its browser, recorded in the store (store.Owner), and each
// replica holds a lease on its sessions that it renews every third of
// LeaseTTL (store.Heartbeat). Any replica answers any request: the
// requests of a session another replica owns are forwarded to it (its
// advertised address), new sessions go to the replica with the most
// room, and a replica whose lease runs out loses its sessions to the
// others, which adopt them as a restart would (session.Manager.Adopt).

// ClusterConfig makes a Server one replica of several sharing its store.
type ClusterConfig struct {
	// Advertise is the base URL the other replicas reach this one at,
	// "http://10.1.2.3:8080" (a pod's IP and port). "" means a server on
	// its own: it restores every stored session at start and forwards
	// nothing.
	Advertise string
	// ReplicaID names this replica among the others, and must be unique
	// among them. Default: the host name and the process id.
	ReplicaID string
	// LeaseTTL is how long this replica's lease lasts unrenewed; it
	// renews it every third of that. Its sessions are adopted by the
	// others once it has lapsed, and a replica that cannot renew it within
	// two thirds of it stops its sessions (Serve returns ErrLeaseLost), so
	// that no session ever runs on two replicas. Default 15s.
	LeaseTTL time.Duration
	// Capacity is how many sessions this replica takes, for placing new
	// ones; 0 leaves it unsaid (the replica running the fewest sessions
	// gets the next).
	Capacity int
	// PeerTLS is how this replica checks the others' certificates when it
	// forwards to them (RootCAs, ServerName: the name their certificates
	// hold, when it is not their advertised host); nil: the system's
	// roots. It applies when Advertise is https, which the replicas then
	// serve (Serve on a TLS listener): what is forwarded (clients'
	// requests with their credentials, and a client's own provider key
	// when a new session is placed on another replica) then never crosses
	// in clear, and such a replica forwards to no replica that advertises
	// http.
	PeerTLS *tls.Config
}

// DefaultLeaseTTL is ClusterConfig.LeaseTTL's default.
const DefaultLeaseTTL = 15 * time.Second

// ErrLeaseLost is what Serve returns when this replica could not renew
// its lease in time: it has stopped every session, which the other
// replicas adopt, and should exit.
var ErrLeaseLost = errors.New("replica lease lost")

// Headers between replicas.
const (
	// HeaderForwarded marks a request one replica forwarded to another,
	// naming the first: it is answered where it arrives, never forwarded
	// again.
	HeaderForwarded = "X-Spotter-Forwarded-By"
	// HeaderReplica names the replica that answered a request.
	HeaderReplica = "X-Spotter-Replica"
)

// cluster is this replica's part in the cluster: its lease, the adoption
// of orphaned sessions, and where requests go.
type cluster struct {
	s    *Server
	st   store.Store
	log  *slog.Logger
	id   string
	addr string
	ttl  time.Duration
	// incarnation names this process among those that ever held id: a
	// second process given the same id is refused (register).
	incarnation string
	cap         int
	started     time.Time

	transport *http.Transport
	tls       bool // Advertise is https: peers are reached over TLS only
	proxyMu   sync.Mutex
	proxies   map[string]*httputil.ReverseProxy

	kick    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
	lost    chan struct{} // closed once the lease is lost
	lostErr atomic.Value  // string: why

	mu        sync.Mutex
	renewed   time.Time       // when the last heartbeat that succeeded began
	adopting  map[string]bool // sessions claimed and being restored
	wg        sync.WaitGroup  // adoptions in the background (adopt)
	lastRound time.Time
}

// newCluster checks cfg and prepares this replica; start registers it.
func newCluster(s *Server, cfg ClusterConfig) (*cluster, error) {
	u, err := url.Parse(cfg.Advertise)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("web: Cluster.Advertise %q: want the base URL other replicas reach this one at, such as http://10.1.2.3:8080", cfg.Advertise)
	}
	if s.cfg.Token == "" {
		return nil, errors.New("web: replicas need one shared token (--token or SPOTTER_TOKEN): a random one would differ on each")
	}
	id := cfg.ReplicaID
	if id == "" {
		host, _ := os.Hostname()
		id = cmp.Or(host, "spotter") + "-" + strconv.Itoa(os.Getpid())
	}
	ttl := cmp.Or(cfg.LeaseTTL, DefaultLeaseTTL)
	if ttl < 300*time.Millisecond {
		return nil, fmt.Errorf("web: Cluster.LeaseTTL %v: want at least 300ms", ttl)
	}
	var inc [8]byte
	if _, err := rand.Read(inc[:]); err != nil {
		return nil, err
	}
	c := &cluster{s: s, st: s.st, log: s.log.With("replica", id), id: id, addr: u.String(), ttl: ttl, cap: cfg.Capacity,
		incarnation: hex.EncodeToString(inc[:]),
		started:     time.Now(), proxies: map[string]*httputil.ReverseProxy{}, kick: make(chan struct{}, 1),
		done: make(chan struct{}), lost: make(chan struct{}), adopting: map[string]bool{}}
	c.transport = &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 32,
		IdleConnTimeout:     60 * time.Second,
		TLSHandshakeTimeout: 5 * time.Second,
		// No response header timeout: long polls (?wait=) and event
		// streams answer when they answer; the client's request bounds
		// them.
	}
	switch {
	case u.Scheme == "https":
		tc := &tls.Config{}
		if cfg.PeerTLS != nil {
			tc = cfg.PeerTLS.Clone()
		}
		tc.MinVersion = max(tc.MinVersion, tls.VersionTLS12)
		c.transport.TLSClientConfig, c.tls = tc, true
	case cfg.PeerTLS != nil:
		return nil, fmt.Errorf("web: Cluster.PeerTLS is set but Cluster.Advertise %q is not https: the others would forward to this replica in clear", cfg.Advertise)
	}
	return c, nil
}

// start registers the replica (refusing an id another live process
// holds), gives up whatever an earlier process of this replica's id owned
// (it is gone: this is its replacement), and starts the loop that renews
// the lease and adopts orphaned sessions.
func (c *cluster) start(ctx context.Context) error {
	if err := c.register(ctx); err != nil {
		return err
	}
	if n, err := c.st.ReleaseSessions(ctx, c.id); err != nil {
		return fmt.Errorf("web: %w", err)
	} else if n > 0 {
		c.log.Info("released the sessions of this replica's previous process", "sessions", n)
	}
	lctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go func() {
		defer close(c.done)
		c.loop(lctx)
	}()
	return nil
}

// ErrReplicaIDHeld is what Start returns when another live process holds
// this replica's id: two replicas were given one --replica-id.
var ErrReplicaIDHeld = errors.New("replica id in use")

// register makes this process the holder of its replica id. A row of the
// id whose lease still runs belongs to another process: a live replica
// started with the same id, or this replica's previous process, which
// died without handing over. register tells them apart by watching the
// lease: a live holder renews it (every third of its lease), and then
// this process is refused with ErrReplicaIDHeld; a dead one lets it
// lapse, and this process takes the id over.
func (c *cluster) register(ctx context.Context) error {
	var watched store.Replica
	for {
		now := time.Now()
		_, err := c.st.Heartbeat(ctx, c.row(now))
		if err == nil {
			c.renewed = now
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("web: register replica: %w", err)
		}
		rs, lerr := c.st.Replicas(ctx)
		if lerr != nil {
			return fmt.Errorf("web: register replica: %w", lerr)
		}
		i := slices.IndexFunc(rs, func(r store.Replica) bool { return r.ID == c.id })
		if i < 0 {
			continue // gone meanwhile: try again
		}
		held := rs[i]
		switch {
		case watched.ID == "":
			c.log.Warn("another process holds this replica id; waiting for its lease to lapse, watching for a renewal",
				"holder_addr", held.Addr, "lease_until", held.Expires)
		case held.Incarnation == watched.Incarnation && !held.Renewed.Equal(watched.Renewed):
			return fmt.Errorf("web: replica id %q is held by a live replica at %s (it renewed its lease at %s): two "+
				"processes were started with the same --replica-id; give each its own (the default is the host name and "+
				"process id; on Kubernetes, the pod's name) (%w)", c.id, held.Addr, held.Renewed.Format(time.RFC3339Nano), ErrReplicaIDHeld)
		}
		watched = held
		wait := min(max(time.Until(held.Expires), 0)+10*time.Millisecond, c.ttl/6)
		select {
		case <-ctx.Done():
			return fmt.Errorf("web: register replica %q: another process held the id until the start's time ran out (%w): %w",
				c.id, ErrReplicaIDHeld, context.Cause(ctx))
		case <-time.After(wait):
		}
	}
}

// row is this replica's row in the store, renewed at now.
func (c *cluster) row(now time.Time) store.Replica {
	return store.Replica{ID: c.id, Addr: c.addr, Sessions: c.s.mgr.Load(), Capacity: c.cap, Draining: c.s.draining.Load(),
		Started: c.started, Renewed: now, Expires: now.Add(c.ttl), Incarnation: c.incarnation}
}

// wake runs a round of the loop now.
func (c *cluster) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// loop renews the lease and adopts orphans every third of the lease,
// until ctx is done or the lease is lost.
func (c *cluster) loop(ctx context.Context) {
	every := c.ttl / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		c.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-c.lost:
			return
		case <-t.C:
		case <-c.kick:
		}
	}
}

// round renews the lease, then adopts the orphans assigned to this
// replica. A heartbeat that fails leaves the lease to run down: once two
// thirds of it have passed since the last renewal began, the replica
// stops every session (fence) before any other can adopt them.
func (c *cluster) round(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, c.ttl/3)
	defer cancel()
	begin := time.Now()
	lapsed, err := c.st.Heartbeat(rctx, c.row(begin))
	c.mu.Lock()
	since := time.Since(c.renewed)
	if err == nil && !lapsed {
		c.renewed = begin
	}
	c.lastRound = time.Now()
	c.mu.Unlock()
	switch {
	case ctx.Err() != nil:
	case err == nil && lapsed:
		metricRenewals.WithLabelValues("lapsed").Inc()
	case err != nil:
		metricRenewals.WithLabelValues("failed").Inc()
	default:
		metricRenewals.WithLabelValues("ok").Inc()
	}
	switch {
	case ctx.Err() != nil:
		return
	case err == nil && lapsed:
		c.fence(fmt.Sprintf("the lease had lapsed when it was renewed (%v after the last renewal)", since.Round(time.Millisecond)))
		return
	case errors.Is(err, store.ErrConflict):
		c.fence(fmt.Sprintf("another process took this replica id over: %v", err))
		return
	case err != nil && since >= c.ttl*2/3:
		c.fence(fmt.Sprintf("no renewal for %v: %v", since.Round(time.Millisecond), err))
		return
	case err != nil:
		c.log.Warn("renew the lease", "err", err)
		return
	}
	if c.s.draining.Load() || c.s.closing.Load() {
		return
	}
	if err := c.adopt(rctx, begin); err != nil && ctx.Err() == nil {
		c.log.Warn("adopt orphaned sessions", "err", err)
	}
	c.sweep(rctx, begin)
}

// sweep removes the rows of replicas gone for long (killed, never
// drained): their sessions stay orphans until adopted, and the table does
// not grow with every pod that ever died.
func (c *cluster) sweep(ctx context.Context, now time.Time) {
	rs, err := c.st.Replicas(ctx)
	if err != nil {
		return
	}
	live := 0
	for _, r := range rs {
		if r.Live(now) {
			live++
		}
	}
	metricReplicas.Set(float64(live))
	for _, r := range rs {
		if r.ID != c.id && now.Sub(r.Expires) > 20*c.ttl {
			if err := c.st.DeleteReplica(ctx, r.ID); err != nil {
				c.log.Warn("remove a gone replica's row", "gone", r.ID, "err", err)
			}
		}
	}
}

// fence stops every session of this replica, because its lease may have
// run out: the others may be adopting them. Serve then returns
// ErrLeaseLost.
func (c *cluster) fence(why string) {
	select {
	case <-c.lost:
		return
	default:
	}
	metricLeaseLost.Inc()
	c.log.Error("replica lease lost: stopping every session so that none runs on two replicas", "why", why)
	c.lostErr.Store(why)
	if err := c.s.handOverMCP(context.Background()); err != nil {
		c.log.Warn("stop MCP sessions", "err", err)
	}
	if err := c.s.mgr.Close(context.Background()); err != nil {
		c.log.Warn("stop sessions", "err", err)
	}
	close(c.lost)
}

// unfit says why this replica should get no work ("" if none).
func (c *cluster) unfit() string {
	select {
	case <-c.lost:
		return "lease lost"
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if since := time.Since(c.renewed); since >= c.ttl*2/3 {
		return "lease not renewed for " + since.Round(time.Second).String()
	}
	return ""
}

// room is how many more sessions a replica takes, for comparing
// replicas: its capacity less its sessions, or minus its sessions when it
// says no capacity.
func room(r store.Replica) int {
	if r.Capacity > 0 {
		return r.Capacity - r.Sessions
	}
	return -r.Sessions
}

// candidates are the replicas that take sessions now, by room (most
// first), then id; this replica's row is its own up-to-date one.
func (c *cluster) candidates(ctx context.Context, now time.Time) ([]store.Replica, error) {
	rs, err := c.st.Replicas(ctx)
	if err != nil {
		return nil, err
	}
	var out []store.Replica
	for _, r := range rs {
		if r.ID == c.id {
			r = c.row(now)
		}
		if r.Live(now) && !r.Draining && c.reachable(r.Addr) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b store.Replica) int {
		return cmp.Or(room(b)-room(a), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// adopt claims and restores the orphaned sessions assigned to this
// replica. Every replica computes the same assignment from the store:
// each orphan, oldest first, to the replica with the most room (counting
// the orphans assigned before it); the sessions of one MCP connection go
// together, with the oldest. An orphan whose assignee has not taken it
// within two leases is anyone's. Claims are compare-and-set on the
// session's ownership epoch, so a session is adopted once.
func (c *cluster) adopt(ctx context.Context, now time.Time) error {
	orphans, err := c.st.Orphans(ctx, now)
	if err != nil || len(orphans) == 0 {
		return err
	}
	var units [][]store.Owner
	byConn := map[string]int{}
	for _, o := range orphans {
		if i, ok := byConn[o.Conn]; ok && o.Conn != "" {
			units[i] = append(units[i], o)
			continue
		}
		byConn[o.Conn] = len(units)
		units = append(units, []store.Owner{o})
	}
	cands, err := c.candidates(ctx, now)
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(cands, func(r store.Replica) bool { return r.ID == c.id }) {
		return nil
	}
	rooms := map[string]int{}
	for _, r := range cands {
		rooms[r.ID] = room(r)
	}
	for _, unit := range units {
		if ctx.Err() != nil {
			return nil
		}
		best := cands[0].ID
		for _, r := range cands[1:] {
			if rooms[r.ID] > rooms[best] {
				best = r.ID
			}
		}
		rooms[best] -= len(unit)
		o := unit[0]
		lapsed := o.Expires
		if lapsed.IsZero() {
			lapsed = o.Since // released, or never owned (zero: at once)
		}
		if best != c.id && now.Sub(lapsed) < 2*c.ttl {
			continue
		}
		if !c.markAdopting(unit) {
			continue // being adopted here already
		}
		if unit[0].Conn == "" {
			c.claimAll(ctx, unit, now)
			continue
		}
		// An MCP connection's sessions open their displays as they are
		// adopted (mcp.Server.Resume), which takes seconds: in the
		// background, so that the lease is renewed meanwhile (close
		// waits for them).
		bg := context.WithoutCancel(ctx)
		c.wg.Go(func() { c.claimAll(bg, unit, now) })
	}
	return nil
}

// markAdopting marks the sessions of unit as being adopted here, unless
// one is already.
func (c *cluster) markAdopting(unit []store.Owner) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range unit {
		if c.adopting[o.Session] {
			return false
		}
	}
	for _, o := range unit {
		c.adopting[o.Session] = true
	}
	return true
}

// claimAll takes orphans over (the sessions of one MCP connection, or
// one session, marked by markAdopting) and resumes them here; requests
// for any of them wait (503, or an MCP client's event stream held) until
// all are (isAdopting). Each claim has a third of a lease.
func (c *cluster) claimAll(ctx context.Context, unit []store.Owner, now time.Time) {
	defer func() {
		c.mu.Lock()
		for _, o := range unit {
			delete(c.adopting, o.Session)
		}
		c.mu.Unlock()
	}()
	for _, o := range unit {
		cctx, cancel := context.WithTimeout(ctx, c.ttl/3)
		c.claim(cctx, o, now)
		cancel()
	}
}

// claim takes one orphan over and resumes it here.
func (c *cluster) claim(ctx context.Context, o store.Owner, now time.Time) {
	if _, err := c.st.ClaimSession(ctx, o.Session, c.id, o.Epoch, now); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return
		}
		if !c.claimed(ctx, o) {
			c.log.Warn("claim an orphaned session", "session", o.Session, "err", err)
			return
		}
		// The claim took effect though its answer was lost (its deadline
		// passed during the commit): the session is this replica's in
		// the store, and no other replica will adopt it, so this one
		// must.
		c.log.Warn("claim of an orphaned session took effect, its answer lost", "session", o.Session, "err", err)
	}
	// Restoring a session does not wait for its browser: the resumed
	// run opens it. The store work is bounded by the server's life, not
	// by this round.
	if err := c.s.mgr.Adopt(context.WithoutCancel(ctx), o.Session); err != nil {
		metricAdoptions.WithLabelValues("failed").Inc()
		c.log.Error("adopt session", "session", o.Session, "err", err)
		return
	}
	metricAdoptions.WithLabelValues("adopted").Inc()
	args := []any{"session", o.Session, "from", cmp.Or(o.Replica, "(released)")}
	if !o.Expires.IsZero() {
		args = append(args, "lease_lapsed_ago", now.Sub(o.Expires).Round(time.Millisecond))
	}
	c.log.Info("adopted session", args...)
}

// claimed reports whether this replica's claim of o, answered by an
// error other than a conflict, took effect all the same, by reading the
// session's owner again with a deadline of its own.
func (c *cluster) claimed(ctx context.Context, o store.Owner) bool {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.ttl/3)
	defer cancel()
	cur, err := c.st.Owner(rctx, o.Session)
	if err != nil {
		c.log.Error("read the owner of a session after a failed claim: if the claim took effect, the session is owned here and not served until this replica restarts",
			"session", o.Session, "err", err)
		return false
	}
	return cur.Replica == c.id && cur.Epoch == o.Epoch+1
}

// isAdopting reports whether a session is being claimed and restored here.
func (c *cluster) isAdopting(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.adopting[id]
}

// close stops the loop: the caller then stops the sessions and calls
// release.
func (c *cluster) close() {
	if c.stop != nil {
		c.stop()
		<-c.done
		c.wg.Wait()
	}
}

// release hands every session of this replica over and removes its row.
func (c *cluster) release(ctx context.Context) error {
	n, err := c.st.ReleaseSessions(ctx, c.id)
	if err == nil {
		c.log.Info("released sessions to the other replicas", "sessions", n)
	}
	return errors.Join(err, c.st.DeleteReplica(ctx, c.id))
}

// place returns the base URL of the replica a new session should go to,
// or "" for this one: the live replica that is not draining with the
// most room, this one when it ties.
func (c *cluster) place(ctx context.Context) (string, error) {
	now := time.Now()
	cands, err := c.candidates(ctx, now)
	if err != nil {
		return "", err
	}
	if len(cands) == 0 {
		return "", nil
	}
	best := cands[0]
	if i := slices.IndexFunc(cands, func(r store.Replica) bool { return r.ID == c.id }); i >= 0 && room(cands[i]) >= room(best) {
		return "", nil
	}
	return best.Addr, nil
}

// retryIn is when a session whose owner's lease runs until expires can
// be expected on another replica: after the lease, and the adoption
// round that follows it.
func (c *cluster) retryIn(expires time.Time) time.Duration {
	d := time.Until(expires) + c.ttl/3
	return min(max(d, time.Second), c.ttl+c.ttl/3)
}

// reachable reports whether this replica forwards to a replica that
// advertises addr: any address, or only https ones when this replica's
// peers are reached over TLS.
func (c *cluster) reachable(addr string) bool {
	return addr != "" && (!c.tls || strings.HasPrefix(addr, "https://"))
}

// proxy forwards requests to the replica at addr; nil when it may not.
func (c *cluster) proxy(addr string) *httputil.ReverseProxy {
	if !c.reachable(addr) {
		return nil
	}
	c.proxyMu.Lock()
	defer c.proxyMu.Unlock()
	if p := c.proxies[addr]; p != nil {
		return p
	}
	target, err := url.Parse(addr)
	if err != nil {
		return nil
	}
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // cross-origin checks compare the Origin with it
			r.SetXForwarded()
			r.Out.Header.Set(HeaderForwarded, c.id)
			// crossSite took the client's provider key off the request;
			// the replica that creates the session needs it.
			if cr, ok := r.In.Context().Value(creationKey{}).(creation); ok && cr.key != "" {
				r.Out.Header.Set(HeaderProviderKey, cr.key)
			}
		},
		// Each forwarded request is a client span of the request's trace,
		// whose traceparent the owner continues.
		Transport: otelhttp.NewTransport(c.transport,
			otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "forward " + r.Method })),
		FlushInterval: -1, // event streams
		ModifyResponse: func(*http.Response) error {
			metricForwarded.WithLabelValues("ok").Inc()
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			metricForwarded.WithLabelValues("failed").Inc()
			if r.Context().Err() != nil {
				return // the client left
			}
			c.log.WarnContext(r.Context(), "forward to replica", "to", addr, "method", r.Method, "path", r.URL.Path, "err", err)
			if hold, ok := r.Context().Value(mcpStreamKey{}).(func(http.ResponseWriter, *http.Request)); ok {
				hold(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":"the replica that runs this session did not answer; try again"}` + "\n"))
		},
	}
	c.proxies[addr] = p
	return p
}

// forward hands the request to the replica at addr and ends it here.
func (c *cluster) forward(g *gin.Context, addr string) {
	p := c.proxy(addr)
	if p == nil {
		c.log.Warn("forward to replica: not over TLS, while this replica's peers are reached over TLS", "to", addr)
		unavailable(g, time.Second, "the replica that runs this session has no usable address")
		return
	}
	g.Writer.Header().Del(HeaderReplica) // the owner's comes back
	p.ServeHTTP(g.Writer, g.Request)
	g.Abort()
}

// ownedStore records this replica as the owner of every session its
// Manager creates, in the same transaction, and renews the replica's row
// at once so that the others place new sessions knowing of it.
type ownedStore struct {
	store.Store
	c *cluster
}

func (o ownedStore) CreateSession(ctx context.Context, s store.Session) error {
	if err := o.Store.CreateOwnedSession(ctx, s, o.c.id); err != nil {
		return err
	}
	o.c.wake()
	return nil
}

// newSessionRoutes create sessions.
var newSessionRoutes = map[string]bool{"PUT /session": true, "POST /executor/sessions": true}

// route sends each authenticated request where it is answered: new
// sessions to the replica with the most room (503 with Retry-After while
// this server drains and no other replica takes them), a session's
// requests to the replica that owns it, decisions on an approval to the
// owner of its session. Everything else (lists, the audit log, tokens) is
// read from the store here. A request another replica forwarded is
// answered here.
func (s *Server) route(g *gin.Context) {
	route := g.Request.Method + " " + g.FullPath()
	c := s.cluster
	if c != nil {
		g.Header(HeaderReplica, c.id)
	}
	forwarded := g.GetHeader(HeaderForwarded) != ""
	switch {
	case s.closing.Load() && (sessionRoutes[route] || newSessionRoutes[route] || route == "POST /approvals/:id"):
		unavailable(g, time.Second, "this server is handing its sessions over; try again")
	case s.closing.Load() && mcpRoutes[route]:
		if g.Request.Method == http.MethodGet {
			writeMCPRetry(g.Writer, time.Second, "this server is handing its MCP connections over; come back")
			g.Abort()
		} else {
			unavailable(g, time.Second, "this server is handing its MCP connections over; try again")
		}
	case newSessionRoutes[route] || route == "POST /mcp" && g.GetHeader("Mcp-Session-Id") == "":
		s.routeNew(g, route, forwarded)
	case c == nil:
		g.Next()
	case mcpRoutes[route]:
		s.routeMCP(g, g.GetHeader("Mcp-Session-Id"), forwarded)
	case sessionRoutes[route] || route == "POST /session/:id/token":
		// sessionRoutes (auth.go): a session's own routes. Issuing a
		// token needs no state, but checks that the session exists.
		s.routeSession(g, g.Param("id"), forwarded)
	case route == "POST /approvals/:id":
		a, err := s.st.Approval(g.Request.Context(), g.Param("id"))
		if err != nil {
			g.Next() // unknown here too: the handler answers
			return
		}
		s.routeSession(g, a.Session, forwarded)
	default:
		g.Next()
	}
}

// routeNew places a new session: here, or on the replica with the most
// room; none while draining.
func (s *Server) routeNew(g *gin.Context, route string, forwarded bool) {
	c := s.cluster
	if c != nil && !forwarded {
		addr, err := c.place(g.Request.Context())
		if err != nil {
			s.log.WarnContext(g.Request.Context(), "place a session", "err", err)
		}
		if addr != "" {
			c.forward(g, addr)
			return
		}
	}
	if s.draining.Load() {
		unavailable(g, 5*time.Second, "this server is draining and takes no new sessions; try again")
		return
	}
	g.Next()
}

// routeMCP answers a request of an MCP client's connection here, or
// forwards it to the replica that holds it: the owner of its sessions
// (which are owned, and adopted, together), or, while it has none, the
// replica that made it (its Mcp-Session-Id starts with that replica's id
// and a dot). While its sessions are between owners the answer is 503
// with Retry-After (to a GET, an event stream that says when to come
// back); a connection without sessions whose replica is gone is gone
// with it: 404, which tells an MCP client to start a new connection.
func (s *Server) routeMCP(g *gin.Context, conn string, forwarded bool) {
	c := s.cluster
	if s.mcp.Holds(conn) {
		g.Next()
		return
	}
	o, err := s.st.ConnOwner(g.Request.Context(), conn)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.routeNewConn(g, conn, forwarded)
		return
	case err != nil:
		s.log.Warn("find an MCP connection's replica", "err", err)
		unavailable(g, time.Second, "the store did not answer; try again")
		return
	}
	now := time.Now()
	switch {
	case c.isAdopting(o.Session):
		s.mcpUnavailable(g, conn, o, time.Second, "this replica is taking the MCP connection's sessions over; try again")
	case o.Replica == c.id:
		g.Next() // owned here, not held: its sessions ended; the handler answers
	case forwarded:
		s.mcpUnavailable(g, conn, o, time.Second, "the MCP connection is moving between replicas; try again")
	case o.Live(now):
		if g.Request.Method == http.MethodGet {
			// Should the owner be gone, its client's event stream is held
			// until the connection is reachable again.
			hold := func(w http.ResponseWriter, r *http.Request) {
				s.holdMCPStream(w, r, conn, o, "the replica that runs this MCP connection did not answer")
			}
			g.Request = g.Request.WithContext(context.WithValue(g.Request.Context(), mcpStreamKey{}, hold))
		}
		c.forward(g, o.Addr)
	default:
		retry := c.retryIn(o.Expires)
		s.mcpUnavailable(g, conn, o, retry, fmt.Sprintf("the replica that ran this MCP connection is gone; another takes it over within %v: try again",
			retry.Round(time.Second)))
	}
}

// routeNewConn routes a request of an MCP connection that has no session
// yet: to the replica that made it.
func (s *Server) routeNewConn(g *gin.Context, conn string, forwarded bool) {
	c := s.cluster
	i := strings.LastIndexByte(conn, '.')
	if i < 0 || forwarded || conn[:i] == c.id {
		g.Next()
		return
	}
	rs, err := s.st.Replicas(g.Request.Context())
	if err != nil {
		s.log.Warn("find an MCP connection's replica", "err", err)
		unavailable(g, time.Second, "the store did not answer; try again")
		return
	}
	now := time.Now()
	for _, r := range rs {
		if r.ID == conn[:i] && r.Live(now) && r.Addr != "" {
			c.forward(g, r.Addr)
			return
		}
	}
	abort(g, http.StatusNotFound, "session not found: the replica that held this MCP connection is gone; start a new one")
}

// mcpUnavailable answers a request of MCP connection conn, whose
// sessions are between replicas (seen owning them): 503 with Retry-After,
// a failure an MCP client does not take as the end of its connection; but
// a GET, the client's event stream, is held open until the connection can
// be reached again (holdMCPStream).
func (s *Server) mcpUnavailable(g *gin.Context, conn string, seen store.Owner, retry time.Duration, why string) {
	if g.Request.Method != http.MethodGet {
		unavailable(g, retry, why)
		return
	}
	s.holdMCPStream(g.Writer, g.Request, conn, seen, why)
	g.Abort()
}

// mcpStreamKey marks (in its context) an MCP client's event stream that
// is forwarded: if the replica it goes to does not answer, the function
// it holds answers it (holdMCPStream).
type mcpStreamKey struct{}

// holdMCPStream answers the event stream (GET) of MCP connection conn
// while its sessions are between replicas (seen owning them): an open
// stream, with a comment each third of a lease, that ends, telling the
// client to come back at once, when the connection can be reached again
// (mcpReachable), or after four leases. An MCP client gives its
// connection up after a few streams that end or are refused without an
// event (the Go SDK after 5), and an adoption may take longer than five
// of its waits; a stream held open costs it none.
func (s *Server) holdMCPStream(w http.ResponseWriter, r *http.Request, conn string, seen store.Owner, why string) {
	c := s.cluster
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	fmt.Fprintf(w, ": %s; wait\n\n", why)
	_ = rc.Flush()
	tick := time.NewTicker(c.ttl / 3)
	defer tick.Stop()
	giveUp := time.NewTimer(4 * c.ttl)
	defer giveUp.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-giveUp.C:
			fmt.Fprintf(w, ": still between replicas\nretry: %d\n\n", time.Second.Milliseconds())
			return
		case <-tick.C:
		}
		if s.mcpReachable(r.Context(), conn, seen) {
			fmt.Fprint(w, ": reachable again\nretry: 100\n\n")
			return
		}
		fmt.Fprint(w, ": wait\n\n")
		_ = rc.Flush()
	}
}

// mcpReachable reports whether a request of MCP connection conn, whose
// sessions seen owned, would now reach them: they are held here, or
// their owner is another live one (or seen's, renewed: it was alive), or
// they are gone (a request learns so).
func (s *Server) mcpReachable(ctx context.Context, conn string, seen store.Owner) bool {
	c := s.cluster
	if s.mcp.Holds(conn) {
		return true
	}
	o, err := s.st.ConnOwner(ctx, conn)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return true
	case err != nil:
		return false
	case o.Replica == c.id:
		return !c.isAdopting(o.Session)
	}
	moved := o.Replica != seen.Replica || o.Epoch != seen.Epoch || o.Expires.After(seen.Expires)
	return moved && o.Live(time.Now())
}

// writeMCPRetry answers an MCP client's GET with an event stream that
// says why in a comment and when to come back in its retry field, and
// ends.
func writeMCPRetry(w http.ResponseWriter, retry time.Duration, why string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, ": %s\nretry: %d\n\n", why, retry.Milliseconds())
}

// routeSession answers a session's request here if this replica owns it,
// forwards it to its owner, or answers 503 with Retry-After while nobody
// live owns it (its replica is gone and another is about to adopt it).
func (s *Server) routeSession(g *gin.Context, id string, forwarded bool) {
	c := s.cluster
	if s.mgr.Has(id) {
		g.Next()
		return
	}
	if c.isAdopting(id) {
		unavailable(g, time.Second, "this replica is taking the session over; try again")
		return
	}
	o, err := s.st.Owner(g.Request.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		g.Next() // the handler answers 404
		return
	case err != nil:
		s.log.WarnContext(g.Request.Context(), "find a session's replica", "session", id, "err", err)
		unavailable(g, time.Second, "the store did not answer; try again")
		return
	}
	now := time.Now()
	switch {
	case o.Replica == c.id && !s.mgr.Has(id) && c.isAdopting(id):
		// Claimed here since the check above (markAdopting comes before
		// the claim), and not restored yet.
		unavailable(g, time.Second, "this replica is taking the session over; try again")
	case o.Replica == c.id:
		g.Next() // owned here, not held in memory: the handler reads the store
	case forwarded:
		unavailable(g, time.Second, "the session is moving between replicas; try again")
	case o.Live(now):
		c.forward(g, o.Addr)
	default:
		retry := c.retryIn(o.Expires)
		unavailable(g, retry, fmt.Sprintf("the replica that ran this session is gone; another takes it over within %v: try again",
			retry.Round(time.Second)))
	}
}
