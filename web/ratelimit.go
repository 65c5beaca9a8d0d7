package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/time/rate"
)

// A limit is a token bucket: Burst requests at once, then one every Every.
type limit struct {
	Name  string // in the 429's reason
	Every time.Duration
	Burst int
}

// The server's rate limits (docs/API.md, "Rate limits"). Decisions are
// counted per credential; failed logins (wrong tokens) per remote address,
// and a right token is never refused for them.
var (
	decisionLimit = limit{Name: "approval decisions", Every: 200 * time.Millisecond, Burst: 20}
	loginLimit    = limit{Name: "failed logins", Every: 6 * time.Second, Burst: 10}
)

// maxBuckets bounds the limiter's memory: past it, buckets that are full
// again (idle long enough to forget) are dropped.
const maxBuckets = 10000

// limiter holds one token bucket per limit and key. The zero limiter is
// ready to use.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	now     func() time.Time // the clock; time.Now when nil (tests stop it)
}

// take spends n tokens of key's bucket for l, or reports how long to wait
// before trying again.
func (lm *limiter) take(l limit, key string, n int) (wait time.Duration, ok bool) {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	now := time.Now()
	if lm.now != nil {
		now = lm.now()
	}
	if lm.buckets == nil {
		lm.buckets = make(map[string]*rate.Limiter)
	}
	k := l.Name + "\x00" + key
	b := lm.buckets[k]
	if b == nil {
		if len(lm.buckets) >= maxBuckets {
			lm.prune(now)
		}
		b = rate.NewLimiter(rate.Every(l.Every), l.Burst)
		lm.buckets[k] = b
	}
	if n > l.Burst {
		// More at once than the bucket ever holds: refuse for as long as
		// a full bucket takes to fill.
		return time.Duration(l.Burst) * l.Every, false
	}
	r := b.ReserveN(now, n)
	if !r.OK() {
		return time.Duration(l.Burst) * l.Every, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, false
	}
	return 0, true
}

func (lm *limiter) prune(now time.Time) {
	for k, b := range lm.buckets {
		if b.TokensAt(now) >= float64(b.Burst()) {
			delete(lm.buckets, k)
		}
	}
}

// allow spends n tokens of key's bucket for l; when the bucket is empty it
// answers 429 with Retry-After and a JSON reason, and returns false.
func (s *Server) allow(c *gin.Context, l limit, key string, n int) bool {
	wait, ok := s.limits.take(l, key, n)
	if ok {
		return true
	}
	secs := int(math.Ceil(wait.Seconds()))
	c.Header("Retry-After", strconv.Itoa(max(secs, 1)))
	abort(c, http.StatusTooManyRequests, fmt.Sprintf("too many %s: retry in %ds", l.Name, max(secs, 1)))
	return false
}

// limitDecisions rate-limits the requests that decide approvals, per
// credential: POST /approvals/:id, and POST /session/:id with
// tool_permission messages (one token per permission). It peeks at the
// body and puts it back for the handler.
func (s *Server) limitDecisions(c *gin.Context, credential string) bool {
	if c.Request.Method != http.MethodPost {
		return true
	}
	switch c.FullPath() {
	case "/approvals/:id":
		return s.allow(c, decisionLimit, credential, 1)
	case "/session/:id":
		n, err := peekPermissions(c.Request)
		if err != nil || n == 0 {
			return true // the handler answers a body it cannot read
		}
		return s.allow(c, decisionLimit, credential, n)
	}
	return true
}

// peekPermissions counts the tool_permission messages of a POST
// /session/:id body and restores the body. A read error is replayed to
// the handler after the bytes read.
func peekPermissions(r *http.Request) (int, error) {
	if r.Body == nil {
		return 0, nil
	}
	b, err := io.ReadAll(r.Body)
	var body io.Reader = bytes.NewReader(b)
	if err != nil {
		body = io.MultiReader(body, errReader{err})
	}
	r.Body = readCloser{body, r.Body}
	if err != nil {
		return 0, err
	}
	var msgs struct {
		Messages []struct {
			Role string `json:"role"`
		} `json:"messages"`
	}
	if json.Unmarshal(b, &msgs) != nil {
		return 0, nil
	}
	n := 0
	for _, m := range msgs.Messages {
		if m.Role == "tool_permission" {
			n++
		}
	}
	return n, nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

type readCloser struct {
	io.Reader
	io.Closer
}

// remoteHost is the peer's address without its port. It ignores
// X-Forwarded-For, which any client can set.
func remoteHost(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}
