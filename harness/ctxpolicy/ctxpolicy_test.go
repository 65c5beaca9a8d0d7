package ctxpolicy_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/spotter-harness/spotter/harness/ctxpolicy"
)

func TestOmitted(t *testing.T) {
	tests := []struct {
		p    ctxpolicy.Policy
		n    int
		want int
	}{
		{ctxpolicy.Policy{Keep: 3, Chunk: 3}, 3, 0},
		{ctxpolicy.Policy{Keep: 3, Chunk: 3}, 5, 0},
		{ctxpolicy.Policy{Keep: 3, Chunk: 3}, 6, 3},
		{ctxpolicy.Policy{Keep: 3, Chunk: 3}, 8, 3},
		{ctxpolicy.Policy{Keep: 3, Chunk: 3}, 9, 6},
		{ctxpolicy.Policy{Keep: 1, Chunk: 1}, 4, 3},
		{ctxpolicy.Policy{Keep: ctxpolicy.All}, 500, 0},
		{ctxpolicy.Policy{}, ctxpolicy.DefaultKeep + ctxpolicy.DefaultChunk - 1, 0},
		{ctxpolicy.Policy{}, ctxpolicy.DefaultKeep + ctxpolicy.DefaultChunk, ctxpolicy.DefaultChunk},
		{ctxpolicy.Policy{}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Omitted(tt.n); got != tt.want {
			t.Errorf("%+v.Omitted(%d) = %d, want %d", tt.p, tt.n, got, tt.want)
		}
	}
}

// TestOmittedGrowsInChunks: replacements never shrink, come a whole chunk
// at a time, and leave between Keep and Keep+Chunk-1 images in full.
func TestOmittedGrowsInChunks(t *testing.T) {
	for _, p := range []ctxpolicy.Policy{{}, {Keep: 1, Chunk: 1}, {Keep: 2, Chunk: 7}, {Keep: 5, Chunk: 3}} {
		prev := 0
		for n := 0; n < 100; n++ {
			got := p.Omitted(n)
			if got < prev || (got != prev && got-prev != max(p.Chunk, ctxpolicy.DefaultChunk*boolInt(p.Chunk == 0))) {
				t.Fatalf("%+v.Omitted(%d) = %d after %d: want the same or one chunk more", p, n, got, prev)
			}
			if kept := n - got; n >= p.Most() && (kept < min(n, keepOf(p)) || kept > p.Most()) {
				t.Fatalf("%+v.Omitted(%d) = %d keeps %d, want %d to %d", p, n, got, kept, keepOf(p), p.Most())
			}
			prev = got
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func keepOf(p ctxpolicy.Policy) int { return max(p.Keep, ctxpolicy.DefaultKeep*boolInt(p.Keep == 0)) }

func TestCheck(t *testing.T) {
	for _, p := range []ctxpolicy.Policy{{Keep: -2}, {Keep: ctxpolicy.MaxKeep + 1}, {Chunk: -1}, {Chunk: ctxpolicy.MaxChunk + 1}} {
		if err := p.Check(); err == nil || !strings.HasPrefix(err.Error(), "context: ") {
			t.Errorf("%+v.Check() = %v, want an error saying what is wrong", p, err)
		}
	}
	for _, p := range []ctxpolicy.Policy{{}, {Keep: ctxpolicy.All}, {Keep: 1, Chunk: 1, Repeats: true}} {
		if err := p.Check(); err != nil {
			t.Errorf("%+v.Check() = %v, want nil", p, err)
		}
	}
}

func TestCapped(t *testing.T) {
	tests := []struct {
		p       ctxpolicy.Policy
		limit   int
		want    ctxpolicy.Policy
		wantErr bool
	}{
		{ctxpolicy.Policy{}, 0, ctxpolicy.Policy{}, false},
		{ctxpolicy.Policy{}, 5, ctxpolicy.Policy{Chunk: 3}, false},
		{ctxpolicy.Policy{Keep: 2}, 100, ctxpolicy.Policy{Keep: 2}, false},
		{ctxpolicy.Policy{Keep: 5}, 5, ctxpolicy.Policy{Keep: 5, Chunk: 1}, false},
		{ctxpolicy.Policy{Keep: 6}, 5, ctxpolicy.Policy{}, true},
		{ctxpolicy.Policy{Keep: 3, Chunk: 4}, 5, ctxpolicy.Policy{}, true},
		{ctxpolicy.Policy{Keep: ctxpolicy.All}, 5, ctxpolicy.Policy{}, true},
		{ctxpolicy.Policy{Keep: ctxpolicy.All}, -1, ctxpolicy.Policy{Keep: ctxpolicy.All}, false},
	}
	for _, tt := range tests {
		got, err := tt.p.Capped(tt.limit)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("%+v.Capped(%d) = %+v, %v; want %+v, error %v", tt.p, tt.limit, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestWindow(t *testing.T) {
	var w ctxpolicy.Window
	p := ctxpolicy.Policy{Keep: 2, Chunk: 2}
	a, b := []byte("screen a"), []byte("screen b")
	got := []bool{w.Shot(p, a), w.Shot(p, a), w.Shot(p, b), w.Shot(p, a)}
	if want := []bool{true, false, true, true}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Shot(a, a, b, a) = %v, want %v", got, want)
	}
	w.Image() // a zoom: an image, but not the last screenshot
	if w.Shot(p, a) {
		t.Errorf("Shot(a) after a zoom = true, want false: the last screenshot was a")
	}
	if w.Images != 4 {
		t.Errorf("Images = %d, want 4 (a, b, a and the zoom)", w.Images)
	}
	if v := w; !v.Shot(ctxpolicy.Policy{Repeats: true}, a) {
		t.Errorf("Shot(a) with Repeats = false, want true")
	}
	w.Full(a)
	if w.Images != 5 {
		t.Errorf("Images after Full = %d, want 5", w.Images)
	}
	// 5 images, none replaced yet: Omitted(5) = 2.
	if got := w.Replace(p, 5); got != 2 {
		t.Errorf("Replace(5 present) = %d, want 2", got)
	}
	// Two already replaced: nothing more to do.
	if got := w.Replace(p, 3); got != 0 {
		t.Errorf("Replace(3 present) = %d, want 0", got)
	}
}

func ExamplePolicy_Omitted() {
	p := ctxpolicy.Policy{Keep: 3, Chunk: 3}
	for n := 3; n <= 9; n++ {
		fmt.Printf("%d images: %d replaced, %d in full\n", n, p.Omitted(n), n-p.Omitted(n))
	}
	// Output:
	// 3 images: 0 replaced, 3 in full
	// 4 images: 0 replaced, 4 in full
	// 5 images: 0 replaced, 5 in full
	// 6 images: 3 replaced, 3 in full
	// 7 images: 3 replaced, 4 in full
	// 8 images: 3 replaced, 5 in full
	// 9 images: 6 replaced, 3 in full
}
