package desktop

import "testing"

func TestActiveWindow(t *testing.T) {
	for in, want := range map[string]bool{
		"_NET_ACTIVE_WINDOW(WINDOW): window id # 0x400007\n": true,
		"_NET_ACTIVE_WINDOW(WINDOW): window id # 0x0\n":      false,
		"_NET_ACTIVE_WINDOW:  not found.\n":                  false,
	} {
		if got := activeWindow(in); got != want {
			t.Errorf("activeWindow(%q) = %v, want %v", in, got, want)
		}
	}
}
