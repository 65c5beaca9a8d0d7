package screen

import (
	"math"
	"testing"
)

// allRules is every rule in the table, and the default.
var allRules = []SizeRule{ruleAnthropic, ruleAnthropicLarge, ruleOpenAIPreview, ruleOpenAI, ruleGemini, ruleUITARS, ruleDefault}

func swap(s Size) Size { return Size{s.H, s.W} }

// TestFitAnthropicMaxima checks Anthropic's published per-aspect maxima,
// from several capture sizes of each aspect, landscape and portrait.
func TestFitAnthropicMaxima(t *testing.T) {
	tests := []struct {
		aspect string
		in     []Size
		want   Size
	}{
		{"1:1", []Size{{1093, 1093}, {1500, 1500}, {2000, 2000}, {4000, 4000}}, Size{1092, 1092}},
		{"4:3", []Size{{1280, 960}, {1600, 1200}, {2560, 1920}, {4000, 3000}}, Size{1268, 951}},
		{"3:2", []Size{{1500, 1000}, {2400, 1600}, {3000, 2000}, {6000, 4000}}, Size{1344, 896}},
		{"16:9", []Size{{1920, 1080}, {2560, 1440}, {3840, 2160}, {7680, 4320}}, Size{1456, 819}},
		{"2:1", []Size{{1600, 800}, {2000, 1000}, {3200, 1600}, {5000, 2500}}, Size{1568, 784}},
	}
	r := RuleFor("anthropic", "claude-sonnet-4-5")
	for _, tt := range tests {
		for _, in := range tt.in {
			if got := r.Fit(in); got != tt.want {
				t.Errorf("%s: Fit(%v) = %v, want %v", tt.aspect, in, got, tt.want)
			}
			if got, want := r.Fit(swap(in)), swap(tt.want); got != want {
				t.Errorf("%s portrait: Fit(%v) = %v, want %v", tt.aspect, swap(in), got, want)
			}
		}
		if got := r.Fit(tt.want); got != tt.want {
			t.Errorf("%s: Fit(%v) = %v, want it unchanged", tt.aspect, tt.want, got)
		}
	}
}

func TestFit(t *testing.T) {
	tests := []struct {
		rule SizeRule
		in   Size
		want Size
	}{
		// Never upscale; a size that fits is returned as it is.
		{ruleAnthropic, Size{1280, 800}, Size{1280, 800}},
		{ruleAnthropic, Size{1366, 768}, Size{1366, 768}},
		{ruleAnthropic, Size{1, 1}, Size{1, 1}},
		{ruleAnthropic, Size{800, 600}, Size{800, 600}},
		// 16:10 keeps its exact aspect within 1% of the largest size.
		{ruleAnthropic, Size{1440, 900}, Size{1384, 865}},
		{ruleAnthropic, Size{2560, 1600}, Size{1384, 865}},
		{ruleAnthropicLarge, Size{1920, 1080}, Size{1920, 1080}},
		{ruleAnthropicLarge, Size{3840, 2160}, Size{2576, 1449}},
		{ruleAnthropicLarge, Size{2560, 1600}, Size{2448, 1530}},
		{ruleOpenAIPreview, Size{1024, 768}, Size{1024, 768}},
		{ruleOpenAIPreview, Size{2048, 768}, Size{2048, 768}},
		{ruleOpenAIPreview, Size{1280, 800}, Size{1224, 765}},
		{ruleOpenAIPreview, Size{1920, 1080}, Size{1360, 765}},
		{ruleOpenAIPreview, Size{4096, 1000}, Size{2048, 500}},
		{ruleOpenAIPreview, Size{1600, 1200}, Size{1024, 768}},
		{ruleOpenAI, Size{1280, 800}, Size{1280, 800}},
		{ruleOpenAI, Size{1440, 900}, Size{1440, 900}},
		{ruleOpenAI, Size{1920, 1080}, Size{1648, 927}},
		{ruleOpenAI, Size{3000, 2000}, Size{1536, 1024}},
		{ruleGemini, Size{1440, 900}, Size{1440, 900}},
		{ruleGemini, Size{1920, 1080}, Size{1440, 810}},
		{ruleGemini, Size{2560, 1600}, Size{1440, 900}},
		{ruleGemini, Size{1080, 1920}, Size{810, 1440}},
		{ruleGemini, Size{2000, 2000}, Size{900, 900}},
		{ruleUITARS, Size{3840, 2160}, Size{3840, 2160}},
		{ruleUITARS, Size{7680, 4320}, Size{4752, 2673}},
		{ruleDefault, Size{1366, 768}, Size{1366, 768}},
		{ruleDefault, Size{1280, 800}, Size{1224, 765}},
		{ruleDefault, Size{3200, 1600}, Size{1440, 720}},
		// Rounding: the short side is rounded down, never up, and never to 0.
		{SizeRule{MaxLongEdge: 100}, Size{1000, 999}, Size{100, 99}},
		{SizeRule{MaxLongEdge: 100}, Size{100000, 1}, Size{100, 1}},
		{SizeRule{MaxLongEdge: 7}, Size{1000, 3}, Size{7, 1}},
		// Limits of each kind alone.
		{SizeRule{MaxShortEdge: 10}, Size{40, 20}, Size{21, 10}}, // 20x10 is more than 1% smaller
		{SizeRule{MaxPixels: 100}, Size{40, 10}, Size{20, 5}},
		{SizeRule{MaxPixels: 100}, Size{10, 10}, Size{10, 10}},
		{SizeRule{Tile: 10, MaxTiles: 4}, Size{100, 100}, Size{20, 20}},
		{SizeRule{Tile: 10, MaxTiles: 4}, Size{21, 20}, Size{20, 19}},
		{SizeRule{Tile: 10}, Size{500, 500}, Size{500, 500}}, // no MaxTiles: no limit
		{SizeRule{}, Size{1 << 40, 1 << 40}, Size{1 << 40, 1 << 40}},
		// Huge inputs do not overflow.
		{ruleAnthropic, Size{1 << 40, 1 << 39}, Size{1568, 784}},
		{SizeRule{MaxPixels: 1 << 62}, Size{1 << 40, 1 << 40}, Size{1 << 31, 1 << 31}},
		// Empty input; negative limits are no limits.
		{ruleAnthropic, Size{}, Size{}},
		{ruleAnthropic, Size{-5, 10}, Size{}},
		{SizeRule{MaxPixels: -1, MaxLongEdge: -1, Tile: -1, MaxTiles: -1}, Size{10, 10}, Size{10, 10}},
	}
	for _, tt := range tests {
		if got := tt.rule.Fit(tt.in); got != tt.want {
			t.Errorf("%+v.Fit(%v) = %v, want %v", tt.rule, tt.in, got, tt.want)
		}
	}
}

// testSizes is a spread of capture sizes: common screens, odd ones, tiny
// and extreme.
func testSizes() []Size {
	ss := []Size{
		{1, 1}, {1, 5000}, {5000, 1}, {7, 3}, {320, 240}, {800, 600}, {1024, 768}, {1280, 720},
		{1280, 800}, {1366, 768}, {1440, 900}, {1536, 864}, {1600, 900}, {1680, 1050}, {1920, 1080},
		{1920, 1200}, {2560, 1440}, {2560, 1600}, {2880, 1800}, {3024, 1964}, {3840, 2160}, {5120, 2880},
		{3440, 1440}, {1179, 2556}, {390, 844}, {8000, 8000}, {12345, 678}, {1001, 999}, {4097, 4095},
	}
	for w := 100; w <= 6000; w += 487 {
		for h := 97; h <= 6000; h += 613 {
			ss = append(ss, Size{w, h})
		}
	}
	return ss
}

// TestFitProperties checks, for every rule and many sizes, that Fit's
// result obeys the rule, never grows, keeps the aspect to within a pixel,
// is stable, and is within 1% of the largest such size (found by brute
// force).
func TestFitProperties(t *testing.T) {
	for _, r := range allRules {
		for _, s := range testSizes() {
			got := r.Fit(s)
			long, short := max(s.W, s.H), min(s.W, s.H)
			gl, gs := max(got.W, got.H), min(got.W, got.H)
			switch {
			case !r.allows(gl, gs):
				t.Errorf("%s.Fit(%v) = %v, which the rule does not allow", r.Name, s, got)
			case got.W > s.W || got.H > s.H:
				t.Errorf("%s.Fit(%v) = %v, larger than its input", r.Name, s, got)
			case (got.W > got.H) != (s.W > s.H) && got.W != got.H:
				t.Errorf("%s.Fit(%v) = %v, turned sideways", r.Name, s, got)
			case gs != max(1, gl*short/long):
				t.Errorf("%s.Fit(%v) = %v, short side want floor(%d*%d/%d) = %d", r.Name, s, got, gl, short, long, gl*short/long)
			case r.Fit(got) != got:
				t.Errorf("%s.Fit(%v) = %v, but Fit(%v) = %v", r.Name, s, got, got, r.Fit(got))
			}
			if long > 10000 {
				continue
			}
			largest := 0
			for l := long; l >= 1; l-- {
				if r.allows(l, max(1, l*short/long)) {
					largest = l
					break
				}
			}
			if float64(gl) < float64(largest)*0.99 {
				t.Errorf("%s.Fit(%v) = %v, long side %d less than 99%% of the largest allowed, %d", r.Name, s, got, gl, largest)
			}
		}
	}
}

// TestDefaultRuleSuitsEveryone checks that the default rule's sizes are
// accepted unchanged by every provider's rule.
func TestDefaultRuleSuitsEveryone(t *testing.T) {
	d := RuleFor("", "")
	for _, s := range testSizes() {
		fit := d.Fit(s)
		for _, r := range allRules {
			if got := r.Fit(fit); got != fit {
				t.Errorf("%s.Fit(%v) = %v, want the default rule's size %v (from %v) unchanged", r.Name, fit, got, fit, s)
			}
		}
	}
}

func TestRuleFor(t *testing.T) {
	tests := []struct {
		provider, model string
		want            string
	}{
		{"anthropic", "claude-opus-4-7", "anthropic-large"},
		{"anthropic", "claude-opus-4-7-20260416", "anthropic-large"},
		{"anthropic", "Claude-Opus-4.7", "anthropic-large"},
		{"anthropic", "claude-opus-4-8", "anthropic-large"},
		{"anthropic", "claude-opus-4-10", "anthropic-large"},
		{"anthropic", "claude-opus-5", "anthropic-large"},
		{"anthropic", "claude-opus-5-1-20270101", "anthropic-large"},
		{"anthropic", "anthropic.claude-opus-4-7-v1:0", "anthropic-large"},
		{"anthropic", "claude-opus-4-7@20260416", "anthropic-large"},
		{"Anthropic", " claude-opus-4-7 ", "anthropic-large"},
		{"anthropic", "claude-opus-4-6", "anthropic"},
		{"anthropic", "claude-opus-4-1-20250805", "anthropic"},
		{"anthropic", "claude-opus-4-20250514", "anthropic"},
		{"anthropic", "claude-opus-4", "anthropic"},
		{"anthropic", "claude-sonnet-4-5-20250929", "anthropic"},
		{"anthropic", "claude-sonnet-5", "anthropic"}, // unknown: the always-safe rule
		{"anthropic", "claude-haiku-4-5", "anthropic"},
		{"anthropic", "claude-3-opus-20240229", "anthropic"},
		{"anthropic", "claude-3-7-sonnet-latest", "anthropic"},
		{"anthropic", "", "anthropic"},
		{"claude", "claude-sonnet-4-5", "anthropic"},
		{"openai", "computer-use-preview", "openai-preview"},
		{"openai", "computer-use-preview-2025-03-11", "openai-preview"},
		{" OpenAI ", "Computer-Use-Preview", "openai-preview"},
		{"openai", "gpt-5.4", "openai"},
		{"openai", "gpt-5.5-2026-04-23", "openai"},
		{"openai", "", "openai"},
		{"gemini", "gemini-2.5-computer-use-preview-10-2025", "gemini"},
		{"gemini", "models/gemini-3.5-flash", "gemini"},
		{"google", "gemini-3.5-flash", "gemini"},
		{"uitars", "ui-tars-1.5-7b", "uitars"},
		{"ui-tars", "", "uitars"},
		{"qwen", "qwen2.5-vl-7b-instruct", "uitars"},
		{"", "", "default"},
		{"", "claude-opus-4-7", "default"},
		{"mistral", "pixtral", "default"},
	}
	for _, tt := range tests {
		if got := RuleFor(tt.provider, tt.model); got.Name != tt.want {
			t.Errorf("RuleFor(%q, %q) = %q, want %q", tt.provider, tt.model, got.Name, tt.want)
		}
	}
}

func TestSmartResize(t *testing.T) {
	// Expected values computed with qwen-vl-utils' smart_resize (Python,
	// factor 28, min_pixels 100*28*28, max_pixels 16384*28*28).
	tests := []struct{ in, want Size }{
		{Size{1920, 1080}, Size{1932, 1092}},
		{Size{1280, 800}, Size{1288, 812}},
		{Size{1440, 900}, Size{1428, 896}},
		{Size{1024, 640}, Size{1036, 644}},
		{Size{1366, 768}, Size{1372, 756}},
		{Size{1092, 1092}, Size{1092, 1092}},
		{Size{3840, 2160}, Size{3836, 2156}},
		// Too many pixels: scaled down, rounded down.
		{Size{7680, 4320}, Size{4760, 2688}},
		{Size{10000, 10000}, Size{3556, 3556}},
		// Too few: scaled up, rounded up.
		{Size{100, 100}, Size{280, 280}},
		{Size{42, 42}, Size{280, 280}},
		{Size{14, 14}, Size{280, 280}},
		{Size{1, 1}, Size{280, 280}},
		{Size{280, 280}, Size{280, 280}},
		{Size{300, 50}, Size{700, 140}},
		{Size{700, 10}, Size{2352, 56}},
		// Halves round to even, as Python's round does.
		{Size{70, 2800}, Size{56, 2800}},
		{Size{98, 2800}, Size{112, 2800}},
		{Size{126, 2800}, Size{112, 2800}},
		{Size{2800, 70}, Size{2800, 56}},
		{Size{}, Size{}},
		{Size{-3, 100}, Size{}},
	}
	for _, tt := range tests {
		if got := SmartResize(tt.in); got != tt.want {
			t.Errorf("SmartResize(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestSmartResizeFixedPoint checks that a smart-resized size resizes to
// itself, so that sending it gives the identity mapping.
func TestSmartResizeFixedPoint(t *testing.T) {
	for _, s := range testSizes() {
		r := SmartResize(s)
		if r.W%28 != 0 || r.H%28 != 0 {
			t.Errorf("SmartResize(%v) = %v, not multiples of 28", s, r)
		}
		if area := r.W * r.H; area < 100*28*28 || area > 16384*28*28 {
			t.Errorf("SmartResize(%v) = %v, area %d outside [%d, %d]", s, r, area, 100*28*28, 16384*28*28)
		}
		if again := SmartResize(r); again != r {
			t.Errorf("SmartResize(%v) = %v, but SmartResize(%v) = %v", s, r, r, again)
		}
	}
}

func TestImageTokens(t *testing.T) {
	tests := []struct {
		provider string
		in       Size
		want     int
	}{
		{"anthropic", Size{1000, 1000}, 1334},
		{"anthropic", Size{1092, 1092}, 1590},
		{"anthropic", Size{1920, 1080}, 1590}, // the API resizes it to 1456x819 first
		{"anthropic", Size{750, 1}, 1},
		{"claude", Size{750, 2}, 2},
		{"openai", Size{512, 512}, 255},
		{"openai", Size{1024, 1024}, 765},  // OpenAI's worked example
		{"openai", Size{2048, 4096}, 1105}, // OpenAI's worked example
		{"openai", Size{1280, 800}, 1105},  // 1228x768: 3x2 tiles
		{"openai", Size{1024, 768}, 765},
		{"gemini", Size{384, 384}, 258},
		{"gemini", Size{385, 100}, 258},
		{"gemini", Size{1440, 900}, 1032},
		{"gemini", Size{1920, 1080}, 1548},
		{"google", Size{768, 768}, 258},
		{"uitars", Size{1280, 800}, 46 * 29},
		{"uitars", Size{1, 1}, 100},
		{"", Size{1000, 1000}, 1334},
		{"mistral", Size{1000, 1000}, 1334},
		{"openai", Size{}, 0},
		{"anthropic", Size{0, 100}, 0},
	}
	for _, tt := range tests {
		if got := ImageTokens(tt.provider, tt.in); got != tt.want {
			t.Errorf("ImageTokens(%q, %v) = %d, want %d", tt.provider, tt.in, got, tt.want)
		}
	}
}

// FuzzFit checks that Fit never panics and that its result obeys the rule,
// never grows and is stable, for any rule and size.
func FuzzFit(f *testing.F) {
	for _, r := range allRules {
		for _, s := range []Size{{1920, 1080}, {1, 1}, {1 << 40, 3}, {0, 5}} {
			f.Add(r.MaxLongEdge, r.MaxShortEdge, r.MaxPixels, r.Tile, r.MaxTiles, s.W, s.H)
		}
	}
	f.Add(math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt, math.MaxInt)
	f.Add(1, 1, 1, 1, 1, math.MaxInt, 1)
	f.Fuzz(func(t *testing.T, long, short, pixels, tile, tiles, w, h int) {
		r := SizeRule{MaxLongEdge: long, MaxShortEdge: short, MaxPixels: pixels, Tile: tile, MaxTiles: tiles}
		s := Size{w, h}
		got := r.Fit(s)
		if s.Empty() {
			if got != (Size{}) {
				t.Fatalf("%+v.Fit(%v) = %v, want the zero Size", r, s, got)
			}
			return
		}
		if got.Empty() {
			t.Fatalf("%+v.Fit(%v) = %v, empty", r, s, got)
		}
		if !r.allows(max(got.W, got.H), min(got.W, got.H)) {
			t.Fatalf("%+v.Fit(%v) = %v, which the rule does not allow", r, s, got)
		}
		if got.W > s.W || got.H > s.H {
			t.Fatalf("%+v.Fit(%v) = %v, larger than its input", r, s, got)
		}
		if again := r.Fit(got); again != got {
			t.Fatalf("%+v.Fit(%v) = %v, but Fit(%v) = %v", r, s, got, got, again)
		}
	})
}
