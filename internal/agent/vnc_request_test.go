package agent

import (
	"slices"
	"testing"

	"github.com/spotter-harness/spotter/screen"
)

func TestParseVNC(t *testing.T) {
	size, apps, ok := parseVNC(`VNC 1024x768 ["xterm","-e","sh"]`)
	if !ok || size != (screen.Size{W: 1024, H: 768}) || len(apps) != 1 || !slices.Equal(apps[0].Argv, []string{"xterm", "-e", "sh"}) {
		t.Errorf("parseVNC(with argv) = %v, %+v, %v; want 1024x768 running xterm -e sh", size, apps, ok)
	}
	if size, apps, ok := parseVNC("VNC 800x600"); !ok || size != (screen.Size{W: 800, H: 600}) || len(apps) != 1 || apps[0].Argv[0] != "xterm" {
		t.Errorf("parseVNC(without argv) = %v, %+v, %v; want 800x600 with the default xterm", size, apps, ok)
	}
	for _, bad := range []string{"VNC", "VNC big", `VNC 800x600 [""]`, "VNC 800x600 []", "VNC 800x600 xterm", "CDP"} {
		if _, _, ok := parseVNC(bad); ok {
			t.Errorf("parseVNC(%q) ok, want refused", bad)
		}
	}
}
