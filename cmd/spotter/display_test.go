package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/internal/wiring"
)

func TestParseDisplay(t *testing.T) {
	tests := []struct {
		flag    string
		want    wiring.DisplaySpec
		wantErr string
	}{
		{"chromium", wiring.DisplaySpec{Backend: "chromium", Width: 1280, Height: 800, DPR: 1}, ""},
		{"desktop", wiring.DisplaySpec{Backend: "desktop", Width: 1280, Height: 800, DPR: 1}, ""},
		{"{backend: desktop, width: 1024, height: 768, command: [xterm, -e, sh]}",
			wiring.DisplaySpec{Backend: "desktop", Width: 1024, Height: 768, DPR: 1, Command: []string{"xterm", "-e", "sh"}}, ""},
		{`{backend: vnc, address: "127.0.0.1:5900", password_env: VNC_PASSWORD}`,
			wiring.DisplaySpec{Backend: "vnc", Width: 1280, Height: 800, DPR: 1, Address: "127.0.0.1:5900", PasswordEnv: "VNC_PASSWORD"}, ""},
		{"x11", wiring.DisplaySpec{}, `display.backend "x11"`},
		{"vnc", wiring.DisplaySpec{}, "display.address is required"},
		{"{backend: vnc, address: h:1, password: hunter2}", wiring.DisplaySpec{}, "password: unknown field"},
	}
	for _, tt := range tests {
		got, err := parseDisplay(tt.flag, 1280, 800)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "--display") {
				t.Errorf("parseDisplay(%q) = %v, want an error of --display saying %q", tt.flag, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("parseDisplay(%q) = %v", tt.flag, err)
		case got.Backend != tt.want.Backend || got.Size() != tt.want.Size() || got.DPR != tt.want.DPR ||
			got.Address != tt.want.Address || got.PasswordEnv != tt.want.PasswordEnv || !slices.Equal(got.Command, tt.want.Command):
			t.Errorf("parseDisplay(%q) = %+v, want %+v", tt.flag, got, tt.want)
		}
	}
	if got := splitList(" chromium, desktop ,,vnc"); !slices.Equal(got, []string{"chromium", "desktop", "vnc"}) {
		t.Errorf("splitList = %q, want chromium, desktop, vnc", got)
	}
}
