package isolate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/screen"
	"github.com/spotter-harness/spotter/screen/cdp"
)

// fakeSandbox is a Sandbox whose health is set by the test.
type fakeSandbox struct {
	health func() error
	calls  int
}

func (f *fakeSandbox) Browser(context.Context, cdp.Config) (*cdp.Browser, error) {
	return nil, errors.New("no browser in a fake")
}

func (f *fakeSandbox) Health(context.Context) error {
	f.calls++
	return f.health()
}

func (f *fakeSandbox) Close(context.Context) error { return nil }

var _ Sandbox = (*fakeSandbox)(nil)

func TestExplain(t *testing.T) {
	gone := fmt.Errorf("capture: %w", screen.ErrGone)
	oom := fmt.Errorf("sandbox x was killed: out of memory (limit 256 MiB): %w", errors.Join(ErrOOM, ErrDead))
	other := errors.New("page is not responding")
	tests := []struct {
		name      string
		err       error
		health    error
		wantText  string
		wantIs    []error
		wantCalls bool
	}{
		{"nil", nil, oom, "", nil, false},
		{"not gone", other, oom, "page is not responding", []error{}, false},
		{"gone, sandbox fine", gone, nil, "capture: display is gone", []error{screen.ErrGone}, true},
		{"gone, sandbox OOM", gone, oom, "capture: display is gone (sandbox x was killed: out of memory (limit 256 MiB)", []error{screen.ErrGone, ErrOOM, ErrDead}, true},
		{"lost connection", fmt.Errorf("lost the connection: %w", context.Canceled), oom, "display is gone: lost the connection: context canceled (sandbox x", []error{screen.ErrGone, ErrOOM}, true},
		{"health unknown", gone, context.DeadlineExceeded, "capture: display is gone", []error{screen.ErrGone}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sb := &fakeSandbox{health: func() error { return tt.health }}
				got := explain(t.Context(), sb, tt.err)
				if tt.err == nil {
					if got != nil {
						t.Errorf("explain(nil) = %v, want nil", got)
					}
					return
				}
				if !strings.HasPrefix(got.Error(), tt.wantText) {
					t.Errorf("explain(%v) with health %v = %q, want it to start %q", tt.err, tt.health, got, tt.wantText)
				}
				for _, target := range tt.wantIs {
					if !errors.Is(got, target) {
						t.Errorf("explain(%v) = %v, does not wrap %v", tt.err, got, target)
					}
				}
				if (sb.calls > 0) != tt.wantCalls {
					t.Errorf("explain(%v) called Health %d times, want calls: %v", tt.err, sb.calls, tt.wantCalls)
				}
			})
		})
	}
}

// A sandbox that reports its death a moment after its display went away
// still gets the blame.
func TestExplainWaitsForTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		oom := fmt.Errorf("out of memory: %w", errors.Join(ErrOOM, ErrDead))
		sb := &fakeSandbox{}
		sb.health = func() error {
			if sb.calls < 3 {
				return nil
			}
			return oom
		}
		got := explain(t.Context(), sb, screen.ErrGone)
		if !errors.Is(got, ErrOOM) {
			t.Errorf("explain() = %v, want ErrOOM once Health reports it", got)
		}
	})
}

func TestChoose(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "containerd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	plain := filepath.Join(dir, "not-a-socket")
	os.WriteFile(plain, nil, 0o600)
	tests := []struct {
		name, socket string
		want         Backend
		wantErr      bool
	}{
		{"local", sock, Local, false},
		{"containerd", "/nonexistent", Containerd, false},
		{"", sock, Containerd, false},
		{"auto", sock, Containerd, false},
		{"auto", filepath.Join(dir, "missing.sock"), Local, false},
		{"", plain, Local, false},
		{"docker", sock, "", true},
	}
	for _, tt := range tests {
		got, err := Choose(tt.name, tt.socket)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("Choose(%q, %q) = %q, %v; want %q, error %v", tt.name, tt.socket, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero", Config{}, ""},
		{"flags", Config{Flags: []string{"--lang=de", "--disable-smooth-scrolling"}}, ""},
		{"proxy", Config{Flags: []string{"--proxy-server=direct://"}}, `flag "--proxy-server=direct://": the sandbox sets --proxy-server itself`},
		{"no proxy", Config{Flags: []string{"--no-proxy-server"}}, "sets --no-proxy-server itself"},
		{"debugging port", Config{Flags: []string{"--remote-debugging-port=9222"}}, "sets --remote-debugging-port itself"},
		{"host rules", Config{Flags: []string{"--Host-Resolver-Rules=MAP * 127.0.0.1"}}, "itself"},
		{"policy", Config{Egress: egress.Policy{Deny: []string{"a/b"}}}, "egress: deny: host pattern"},
		{"limits", Config{Pids: -1}, "negative limit"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want %q", tt.name, err, tt.want)
		}
	}
}
