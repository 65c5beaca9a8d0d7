package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spotter-harness/spotter/internal/session"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
	"github.com/spotter-harness/spotter/store"
	"github.com/spotter-harness/spotter/web"
)

// ServerOptions configures the server section. Zero values are documented
// defaults.
type ServerOptions struct {
	Rounds   int    // samples of each figure; default 30
	Watchers int    // SSE watchers of one session; default 100
	Exec     string // Chromium for the displays; "" as cdp.Config.Exec
	Logger   *slog.Logger
}

// MeasureServer returns the server section, for Options.Server. It runs
// `spotter serve`'s server (package web) on loopback with one Chromium and
// measures:
//   - the executor API's round trip for a click (POST
//     /executor/sessions/:id/call, answered with the provider-native result
//     and a fresh screenshot), and the same step (click, settle, model-sized
//     PNG) performed directly on a display of the same browser, interleaved
//     round by round; the server overhead is the difference of the medians,
//     against the target of 2 ms, and also the distribution of each
//     round's difference (paired);
//   - SSE fan-out: Watchers clients follow one session's events, and each
//     event's latency runs from the moment the store has it (events are
//     stored before they are sent) to its delivery at each watcher, and
//     to the last one.
func MeasureServer(o ServerOptions) func(ctx context.Context, report func(Figure)) error {
	return func(ctx context.Context, report func(Figure)) error {
		o.Rounds = cmp.Or(o.Rounds, 30)
		o.Watchers = cmp.Or(o.Watchers, 100)
		if o.Logger == nil {
			o.Logger = slog.New(slog.DiscardHandler)
		}
		return measureServer(ctx, o, report)
	}
}

// benchToken is the server token of the benchmark's own server.
const benchToken = "spotter-bench-token"

func measureServer(ctx context.Context, o ServerOptions, report func(Figure)) (err error) {
	s, err := startSite()
	if err != nil {
		return err
	}
	defer s.Close()
	b, err := cdp.Launch(ctx, cdp.Config{Exec: o.Exec, Logger: o.Logger})
	if err != nil {
		return fmt.Errorf("launch Chromium: %w", err)
	}
	defer b.Close(context.WithoutCancel(ctx))

	var ts *timedStore
	c, closeServer, err := startServer(ctx, b, func(st store.Store) store.Store {
		ts = &timedStore{Store: st, stored: map[string]time.Time{}}
		return ts
	}, o.Logger)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeServer()) }()

	id, err := c.executor(ctx, s.url(pageStatic))
	if err != nil {
		return err
	}
	if err := executorOverhead(ctx, o, c, id, b, s, report); err != nil {
		return err
	}
	return fanOut(ctx, o, c, id, ts, report)
}

// startServer runs spotter serve's server (package web) on loopback, its
// sessions' displays in b, its store the one wrap makes of a SQLite store
// of its own, and returns a client of it with the benchmark's token and
// what stops it all.
func startServer(ctx context.Context, b *cdp.Browser, wrap func(store.Store) store.Store, log *slog.Logger) (c *apiClient, closeAll func() error, err error) {
	var closers []func() error
	closeAll = func() error {
		var errs []error
		for _, f := range slices.Backward(closers) {
			errs = append(errs, f())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, closeAll())
		}
	}()
	dir, err := os.MkdirTemp("", "spotter-bench-server-")
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() error { return os.RemoveAll(dir) })
	st, err := store.Open(ctx, filepath.Join(dir, "spotter.db"))
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, st.Close)
	srv, err := web.New(ctx, web.Config{
		DataDir: dir, Token: benchToken, Store: wrap(st), Logger: log,
		NewDisplay: func(ctx context.Context, d session.DisplaySpec) (session.Display, error) {
			return b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: d.Size(), DPR: d.DPR})
		},
	})
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, func() error { return srv.Close(context.WithoutCancel(ctx)) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	serveCtx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serveCtx, ln) }()
	closers = append(closers, func() error {
		stop()
		return <-served
	})
	c = &apiClient{base: "http://" + ln.Addr().String(), http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}}
	closers = append(closers, func() error {
		c.http.CloseIdleConnections()
		return nil
	})
	return c, closeAll, nil
}

// executorOverhead measures the executor API's round trip and the same
// step on a display, interleaved.
func executorOverhead(ctx context.Context, o ServerOptions, c *apiClient, id string, b *cdp.Browser, s *site, report func(Figure)) error {
	d, err := b.NewDisplay(ctx, cdp.DisplayConfig{Viewport: modelSize, DPR: 1})
	if err != nil {
		return err
	}
	defer d.Close(context.WithoutCancel(ctx))
	direct, err := openTab(ctx, d, s.url(pageStatic))
	if err != nil {
		return err
	}
	on := false // the API session's swatch
	var api, step, paired []time.Duration
	var apiShots, stepShots []shotCheck // checked after the last round
	for round := -1; round < o.Rounds; round++ {
		call := fmt.Sprintf(`{"type":"tool_use","id":"toolu_%d","name":"computer","input":{"action":"left_click","coordinate":[%d,%d]}}`,
			round+1, int(buttonAt.X), int(buttonAt.Y))
		shot, took, err := c.call(ctx, id, call)
		if err != nil {
			return fmt.Errorf("executor call: %w", err)
		}
		on = !on
		dt, directShot, err := direct.step(ctx, screen.CaptureOptions{Size: modelSize, Format: screen.PNG})
		if err != nil {
			return fmt.Errorf("direct step: %w", err)
		}
		if round < 0 {
			continue // warm-up
		}
		apiShots = append(apiShots, shotCheck{png: shot, on: on})
		stepShots = append(stepShots, directShot)
		api, step = append(api, took), append(step, dt)
		paired = append(paired, took-dt)
	}
	fa := latency("server", "executor API round trip: click + 1280x800 PNG", api)
	fa.Wrong = countWrong(apiShots)
	fs := latency("server", "the same step directly on a display", step)
	fs.Wrong = countWrong(stepShots)
	over := Figure{Section: "server", Name: "executor API overhead (round trip minus step, p50)", Unit: "ms",
		Value: fa.P50 - fs.P50, Note: fmt.Sprintf("p95 difference %.1f ms", fa.P95-fs.P95)}
	over.target("<= 2 ms", over.Value <= 2)
	// The two halves of a round run back to back, so their difference
	// cancels what the machine's load adds to both; on a busy machine it
	// is the steadier estimate.
	fp := latency("server", "executor API overhead, paired (each round's round trip minus its step)", paired)
	fa.against(fs)
	report(fa)
	report(fs)
	report(over)
	report(fp)
	return nil
}

// fanOut measures SSE delivery of one session's events to o.Watchers
// clients. Each event is a takeover toggle, which the server stores and
// sends without touching the display.
func fanOut(ctx context.Context, o ServerOptions, c *apiClient, id string, ts *timedStore, report func(Figure)) error {
	var hist struct {
		LastSeq int64 `json:"lastSeq"`
	}
	if code, body, err := c.do(ctx, "GET", "/session/"+id, "", &hist); err != nil || code != http.StatusOK {
		return fmt.Errorf("GET /session/%s = %d %s %v", id, code, body, err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type delivery struct {
		seq int64
		at  time.Time
	}
	got := make(chan delivery, o.Watchers*4)
	ready := make(chan error, o.Watchers)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range o.Watchers {
		wg.Go(func() {
			err := c.follow(wctx, id, hist.LastSeq, ready, func(seq int64, typ string) {
				if typ == "takeover" {
					select {
					case got <- delivery{seq, time.Now()}:
					case <-wctx.Done():
					}
				}
			})
			if err != nil && wctx.Err() == nil {
				o.Logger.Warn("bench: SSE watcher", "err", err)
			}
		})
	}
	for range o.Watchers {
		if err := <-ready; err != nil {
			return fmt.Errorf("SSE watcher: %w", err)
		}
	}
	var each, all []time.Duration
	active := false
	for round := -1; round < o.Rounds; round++ {
		active = !active
		if code, body, err := c.do(ctx, "POST", "/session/"+id+"/takeover", fmt.Sprintf(`{"active":%t}`, active), nil); err != nil || code != http.StatusOK {
			return fmt.Errorf("POST takeover = %d %s %v", code, body, err)
		}
		var seq int64
		var last time.Time
		var times []time.Time
		timeout := time.NewTimer(30 * time.Second)
		for len(times) < o.Watchers {
			select {
			case d := <-got:
				if seq == 0 {
					seq = d.seq
				}
				if d.seq != seq {
					timeout.Stop()
					return fmt.Errorf("SSE: event %d delivered while waiting for %d", d.seq, seq)
				}
				times = append(times, d.at)
				if d.at.After(last) {
					last = d.at
				}
			case <-timeout.C:
				return fmt.Errorf("SSE: %d of %d watchers got the event in 30s", len(times), o.Watchers)
			case <-ctx.Done():
				timeout.Stop()
				return ctx.Err()
			}
		}
		timeout.Stop()
		stored, ok := ts.storedAt(id, seq)
		if !ok {
			return fmt.Errorf("SSE: event %d was delivered but never stored", seq)
		}
		if round < 0 {
			continue
		}
		for _, t := range times {
			each = append(each, t.Sub(stored))
		}
		all = append(all, last.Sub(stored))
	}
	n := strconv.Itoa(o.Watchers)
	report(latency("server", "SSE fan-out: stored to the last of "+n+" watchers", all))
	report(latency("server", "SSE fan-out: stored to each of "+n+" watchers", each))
	return nil
}

// timedStore notes when each event is stored: the moment the server may
// send it.
type timedStore struct {
	store.Store
	mu     sync.Mutex
	stored map[string]time.Time // session/seq
}

func (t *timedStore) AppendEvent(ctx context.Context, e *store.Event) error {
	err := t.Store.AppendEvent(ctx, e)
	if err == nil {
		now := time.Now()
		t.mu.Lock()
		t.stored[e.Session+"/"+strconv.FormatInt(e.Seq, 10)] = now
		t.mu.Unlock()
	}
	return err
}

func (t *timedStore) Write(ctx context.Context, b *store.Batch) error {
	err := t.Store.Write(ctx, b)
	if err == nil {
		t.note(b.Events())
	}
	return err
}

func (t *timedStore) WriteAsync(b *store.Batch, done func(error)) {
	t.Store.WriteAsync(b, func(err error) {
		if err == nil {
			t.note(b.Events())
		}
		if done != nil {
			done(err)
		}
	})
}

func (t *timedStore) note(evs []*store.Event) {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range evs {
		t.stored[e.Session+"/"+strconv.FormatInt(e.Seq, 10)] = now
	}
}

func (t *timedStore) storedAt(session string, seq int64) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.stored[session+"/"+strconv.FormatInt(seq, 10)]
	return at, ok
}

// apiClient is a client of the API with the benchmark's token.
type apiClient struct {
	base string
	http *http.Client
}

func (c *apiClient) do(ctx context.Context, method, path, body string, out any) (int, string, error) {
	code, b, err := c.request(ctx, method, path, body)
	if err != nil {
		return code, "", err
	}
	if out != nil && code == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			return code, string(b), err
		}
	}
	return code, string(b), nil
}

// request sends a request and reads the whole response.
func (c *apiClient) request(ctx context.Context, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// executor creates an Anthropic executor session on url.
func (c *apiClient) executor(ctx context.Context, url string) (string, error) {
	var out struct{ ID string }
	body := fmt.Sprintf(`{"provider":"anthropic","display":{"width":%d,"height":%d},"start_url":%q,"approvals":{"supervise":"none"}}`,
		modelSize.W, modelSize.H, url)
	code, b, err := c.do(ctx, "POST", "/executor/sessions", body, &out)
	if err != nil || code != http.StatusOK || out.ID == "" {
		return "", fmt.Errorf("POST /executor/sessions = %d %.300s %v", code, b, err)
	}
	return out.ID, nil
}

// call posts an Anthropic tool_use and returns the screenshot of its
// tool_result and the round trip: from the request to the last byte of the
// response, the client's decoding of it left out (as the direct step's
// decoding is).
// call posts call to the executor session id and returns the result's
// screenshot (encoded) and the round trip's time.
func (c *apiClient) call(ctx context.Context, id, call string) ([]byte, time.Duration, error) {
	var out struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Result struct {
			Content []struct {
				Type   string `json:"type"`
				Source struct {
					Data string `json:"data"`
				} `json:"source"`
			} `json:"content"`
		} `json:"result"`
	}
	start := time.Now()
	code, b, err := c.request(ctx, "POST", "/executor/sessions/"+id+"/call?wait=60s", call)
	took := time.Since(start)
	if err == nil && code == http.StatusOK {
		err = json.Unmarshal(b, &out)
	}
	if err != nil || code != http.StatusOK || out.Status != "done" || out.Error != "" {
		return nil, took, fmt.Errorf("= %d %.300s %v", code, b, err)
	}
	for _, p := range out.Result.Content {
		if p.Type == "image" {
			raw, err := base64.StdEncoding.DecodeString(p.Source.Data)
			return raw, took, err
		}
	}
	return nil, took, fmt.Errorf("the result has no image: %.300s", b)
}

// follow reads a session's events after seq until ctx ends, calling on
// for each; it sends on ready once the stream is open.
func (c *apiClient) follow(ctx context.Context, id string, after int64, ready chan<- error, on func(seq int64, typ string)) error {
	req, err := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/session/%s/events?after=%d", c.base, id, after), nil)
	if err != nil {
		ready <- err
		return err
	}
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := c.http.Do(req)
	if err == nil && resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err = fmt.Errorf("GET events = %d", resp.StatusCode)
	}
	ready <- err
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var seq int64
	var typ string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			seq, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			typ = strings.TrimPrefix(line, "event: ")
		case line == "" && typ != "":
			on(seq, typ)
			typ = ""
		}
	}
	return sc.Err()
}
