package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/spotter-harness/spotter/harness/trace"
	"github.com/spotter-harness/spotter/screen"
)

// liveFrame is the data of a frame event of GET /session/:id/live.
type liveFrame struct {
	Time     *time.Time `json:"time,omitempty"` // when the display drew it
	MimeType string     `json:"mimeType"`
	Width    int        `json:"width,omitempty"`
	Height   int        `json:"height,omitempty"`
	// Image is the size of the session's screenshots, whose pixels an
	// operator's input names: a point of the frame at a fraction of its
	// size is that fraction of Image.
	Image screen.Size `json:"image"`
	Data  []byte      `json:"data"` // base64
}

// live answers GET /session/:id/live: the session's live view as SSE, one
// frame event per picture (its latest screenshot first, then the page as
// it changes), until the client leaves. Frames are not stored and have no
// id: a client that comes back gets the newest.
func (s *Server) live(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	ctx := c.Request.Context()
	frames := ss.Live(ctx)
	w, ping := startSSE(c)
	defer ping.Stop()
	for {
		select {
		case f := <-frames:
			b, err := json.Marshal(frameJSON(f, ss.Spec().Image()))
			if err != nil {
				s.log.Error("encode a live frame", "err", err)
				continue
			}
			fmt.Fprintf(w, "event: frame\ndata: %s\n\n", b)
			w.Flush()
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			w.Flush()
		case <-ctx.Done():
			return
		}
	}
}

func frameJSON(f screen.LiveFrame, image screen.Size) liveFrame {
	out := liveFrame{MimeType: f.Format.MIME(), Width: f.Size.W, Height: f.Size.H, Image: image, Data: f.Data}
	if !f.Time.IsZero() {
		t := f.Time.UTC()
		out.Time = &t
	}
	return out
}

// report answers GET /session/:id/report/:run: the report of one run of
// the session (its trace directory t1, t2, ...), rendered now, under the
// report's own Content-Security-Policy.
func (s *Server) report(c *gin.Context) {
	ss, ok := s.session(c)
	if !ok {
		return
	}
	dir, err := ss.RunDir(c.Param("run"))
	if err != nil {
		s.fail(c, err)
		return
	}
	var b bytes.Buffer
	if err := trace.Render(&b, dir); err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Security-Policy", trace.ReportCSP())
	c.Header("X-Content-Type-Options", "nosniff")
	c.Header("Cache-Control", "no-store")
	c.Data(http.StatusOK, "text/html; charset=utf-8", b.Bytes())
}

// authState answers GET /auth, which anyone may ask: whether the request
// carries the panel's login cookie or the server token, so that the panel
// knows whether to show its login form without a request that fails.
func (s *Server) authState(c *gin.Context) {
	ok := false
	if ck, err := c.Cookie(cookieAuth); err == nil && equal(ck, s.derive("auth")) {
		ok = true
	}
	if tok, found := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer "); found && equal(strings.TrimSpace(tok), s.token) {
		ok = true
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(http.StatusOK, gin.H{"authenticated": ok})
}
