package playwright

import (
	"strings"
	"testing"
)

func TestRemoteConfig(t *testing.T) {
	got, err := Config{DriverDir: "/d", WSEndpoint: "ws://127.0.0.1:3000/x"}.withDefaults()
	if err != nil {
		t.Fatalf("Config{WSEndpoint}.withDefaults() = %v", err)
	}
	if got.Exec != "" {
		t.Errorf("Config{WSEndpoint}.withDefaults().Exec = %q, want none: the server's browser runs", got.Exec)
	}
	for _, tt := range []struct {
		cfg  Config
		want string // in the error
	}{
		{Config{WSEndpoint: "http://grid:3000/"}, "ws://"},
		{Config{WSEndpoint: "ws:///path"}, "no host"},
		{Config{WSEndpoint: "http://user:secret@grid:3000/"}, "user:xxxxx@grid"},
		{Config{WSEndpoint: "ws://grid:3000/", Exec: "/usr/bin/chromium"}, "no executable"},
		{Config{WSEndpoint: "ws://grid:3000/", Flags: []string{"--lang=de"}}, "no flags"},
		{Config{WSHeaders: map[string]string{"Authorization": "x"}}, "without a WebSocket endpoint"},
	} {
		tt.cfg.DriverDir = "/d"
		_, err := tt.cfg.withDefaults()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Config{WSEndpoint: %q, Exec: %q, Flags: %q}.withDefaults() = %v, want an error containing %q",
				tt.cfg.WSEndpoint, tt.cfg.Exec, tt.cfg.Flags, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret") {
			t.Errorf("withDefaults() = %v, shows the endpoint's password", err)
		}
	}
}
