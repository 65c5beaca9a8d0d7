package local

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/isolate"
	"github.com/spotter-harness/spotter/isolate/egress"
	"github.com/spotter-harness/spotter/isolate/isolatetest"
	"github.com/spotter-harness/spotter/screen/cdp"
)

func TestConformance(t *testing.T) {
	isolatetest.Run(t, func(t *testing.T, cfg isolate.Config) isolate.Sandbox {
		s, err := Start(t.Context(), cfg)
		if err != nil {
			t.Fatalf("Start() = %v", err)
		}
		t.Cleanup(func() { s.Close(context.Background()) })
		return s
	})
}

func TestStartRejectsBadPolicy(t *testing.T) {
	_, err := Start(t.Context(), isolate.Config{Egress: egress.Policy{Allow: []string{"http://x"}}})
	if err == nil || !strings.Contains(err.Error(), `host pattern "http://x"`) {
		t.Errorf("Start() with a bad allowlist = %v, want an error naming the entry", err)
	}
}

func TestClosed(t *testing.T) {
	s, err := Start(t.Context(), isolate.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("Close() = %v", err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("second Close() = %v", err)
	}
	if err := s.Health(t.Context()); !errors.Is(err, isolate.ErrDead) {
		t.Errorf("Health() after Close = %v, want ErrDead", err)
	}
	if _, err := s.Browser(t.Context(), cdp.Config{}); !errors.Is(err, isolate.ErrDead) {
		t.Errorf("Browser() after Close = %v, want ErrDead", err)
	}
}
