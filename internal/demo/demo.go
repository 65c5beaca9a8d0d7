// Package demo is a small web app built into the spotter binary: a page that
// needs a click, typing, a key chord, a scroll inside a container and a drag
// to complete, and that records which stages were completed so that a run
// can be checked from outside the browser.
package demo

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

//go:embed site
var site embed.FS

// Stages are the stages of the demo page, in page order.
var Stages = []string{"checkin", "palette", "seat", "ticket"}

// Server serves the demo app and remembers completed stages.
type Server struct {
	mu     sync.Mutex
	stages map[string]string // stage -> detail
}

// NewServer returns a demo app with no stage completed.
func NewServer() *Server { return &Server{stages: map[string]string{}} }

// Handler returns the app's HTTP handler.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	sub, _ := fs.Sub(site, "site") // fails only for an invalid path name, and "site" is valid
	mux.Handle("GET /", http.FileServerFS(sub))
	mux.HandleFunc("POST /api/stage", s.postStage)
	mux.HandleFunc("GET /api/state", s.getState)
	return mux
}

func (s *Server) postStage(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Stage  string `json:"stage"`
		Detail string `json:"detail"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&in); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if !slices.Contains(Stages, in.Stage) {
		http.Error(w, "unknown stage", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.stages[in.Stage] = in.Detail
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getState(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.State())
}

// State returns the completed stages and their details.
func (s *Server) State() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.stages))
	for k, v := range s.stages {
		out[k] = v
	}
	return out
}

// Missing returns the stages not completed yet, in page order.
func (s *Server) Missing() []string {
	st := s.State()
	var out []string
	for _, k := range Stages {
		if _, ok := st[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// Serve listens on a free loopback port and serves the app until ctx is
// done. It returns the base URL and a function that stops the server and
// waits for it.
func (s *Server) Serve(ctx context.Context) (string, func(), error) {
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // the listener is ours; Serve only fails when it closes
		}
	}()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}
