package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/containerd"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// sandboxes opens sandboxed displays through containerd.
type sandboxes struct {
	rt *containerd.Runtime
}

func (r *runner) sandboxes(ctx context.Context) (*sandboxes, error) {
	if r.o.Containerd == "" {
		return nil, errors.New("no containerd socket given (--containerd)")
	}
	if _, err := os.Stat(r.o.Containerd); err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	rt, err := containerd.New(ctx, containerd.Config{Socket: r.o.Containerd, Agent: r.o.Agent})
	if err != nil {
		return nil, err
	}
	return &sandboxes{rt: rt}, nil
}

// sandboxed is a display in a sandbox; closing it closes the sandbox.
type sandboxed struct {
	*isolate.Display
	sb *containerd.Sandbox
}

func (s sandboxed) Close(ctx context.Context) error {
	err := s.Display.Close(ctx)
	return errors.Join(err, s.sb.Close(ctx))
}

func (s *sandboxes) open(ctx context.Context, st *site) (display, error) {
	u, _ := url.Parse(st.url(pageStatic))
	// Named, so that a sandbox the bench leaves behind says whose it is.
	sb, err := s.rt.Start(ctx, isolate.Config{Name: "bench", Egress: egress.Policy{Allow: []string{u.Host}}})
	if err != nil {
		return nil, err
	}
	d, err := isolate.Open(ctx, sb, cdp.Config{Viewport: modelSize})
	if err != nil {
		sb.Close(ctx)
		return nil, err
	}
	return sandboxed{Display: d, sb: sb}, nil
}

func (s *sandboxes) Close() { s.rt.Close(context.Background()) }

// sandbox measures sandbox create to first screenshot, against launching a
// browser on the host to first screenshot.
func (r *runner) sandbox(ctx context.Context) error {
	sb, err := r.sandboxes(ctx)
	if err != nil {
		r.report(Figure{Section: "sandbox", Name: "sandbox start", Note: "not measured: " + err.Error()})
		return nil
	}
	defer sb.Close()
	rounds := max(r.o.Rounds/3, 3)
	var inSandbox, onHost []time.Duration
	o := screen.CaptureOptions{Size: modelSize, Format: screen.PNG}
	for range rounds {
		start := time.Now()
		d, err := sb.open(ctx, r.site)
		if err != nil {
			return err
		}
		_, err = d.Capture(ctx, o)
		inSandbox = append(inSandbox, time.Since(start))
		d.Close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
		start = time.Now()
		hd, err := cdp.Open(ctx, cdp.Config{Exec: r.o.Headless, Viewport: modelSize})
		if err != nil {
			return err
		}
		_, err = hd.Capture(ctx, o)
		onHost = append(onHost, time.Since(start))
		hd.Close(context.WithoutCancel(ctx))
		if err != nil {
			return err
		}
	}
	host := latency("sandbox", "browser on the host: launch to first screenshot", onHost)
	f := latency("sandbox", "containerd sandbox: create to first screenshot", inSandbox)
	f.target("p50 < 3 s", f.P50 < 3000)
	f.Note = "ratio < 1: the sandbox costs more than a bare launch"
	f.against(host)
	r.report(f)
	r.report(host)
	return nil
}
