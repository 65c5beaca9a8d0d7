package screen

import (
	"math"
	"math/bits"
	"regexp"
	"strconv"
	"strings"
)

// A SizeRule is the largest image a model accepts without resizing it on the
// provider's side. Sending a bigger screenshot is not just wasteful: when a
// provider silently downscales, the model answers in the smaller image's
// pixels and every click drifts. So the harness sends Fit(capture size) and
// declares exactly that size to the model. A zero (or negative) limit means
// no limit of that kind; the zero SizeRule allows any size.
type SizeRule struct {
	Name string // short name for logs and traces, e.g. "anthropic"

	MaxLongEdge  int // longest side, px
	MaxShortEdge int // shortest side, px (OpenAI "high" detail: 768)
	MaxPixels    int // width * height

	// Tile is the side of the square tiles or patches the provider cuts an
	// image into; with MaxTiles it bounds ceil(w/Tile) * ceil(h/Tile).
	Tile     int
	MaxTiles int
}

// aspectWindow is how much of the long side Fit gives up, at most, to keep
// the aspect ratio exact rather than rounded (see Fit); maxAspectSteps
// bounds the work for absurd sizes.
const (
	aspectWindow   = 0.01
	maxAspectSteps = 4096
)

// Fit returns the largest size with the aspect of s that r allows, never
// larger than s. If s is allowed, Fit returns it unchanged; an empty s, or a
// rule that allows not even 1x1, gives the zero Size.
//
// "The aspect of s" with whole pixels: a candidate's long side L' is
// chosen and its short side is the exact proportion rounded down,
// floor(L' * short/long) but at least 1 px, so the shape never grows on the
// short axis. Among
// the candidates r allows, Fit takes the one whose rounding loses the least
// (exact when possible), looking only within 1% of the largest one. So
// screens with simple ratios keep them exactly (16:10 stays 16:10: a
// 1280x800 capture fitted to a 768-px short side is 1224x765, not 1230x768),
// and Anthropic's published maxima come out as published (4:3 is 1268x951,
// not 1270x952). Either way the x and y scales of a Frame are kept
// separately, so a rounded aspect never shifts a click.
func (r SizeRule) Fit(s Size) Size {
	if s.Empty() {
		return Size{}
	}
	long, short := s.W, s.H
	portrait := s.H > s.W
	if portrait {
		long, short = short, long
	}
	if r.allows(long, short) {
		return s
	}
	shortFor := func(l int) int { return max(1, mulDiv(l, short, long)) }
	ok := func(l int) bool { return r.allows(l, shortFor(l)) }
	if !ok(1) {
		return Size{}
	}
	// The largest allowed long side: every limit grows with both sides, so
	// ok is monotone and a binary search finds it.
	lo, hi := 1, long // ok(lo), !ok(hi)
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The least rounding loss within the window; ties go to the larger.
	best, bestLoss := lo, lossFor(lo, short, long)
	floor := lo - min(int(float64(lo)*aspectWindow), maxAspectSteps)
	for l := lo - 1; l >= max(1, floor) && bestLoss > 0; l-- {
		if loss := lossFor(l, short, long); loss < bestLoss {
			best, bestLoss = l, loss
		}
	}
	w, h := best, shortFor(best)
	if portrait {
		w, h = h, w
	}
	return Size{W: w, H: h}
}

// allows reports whether an image with sides long >= short obeys r.
func (r SizeRule) allows(long, short int) bool {
	if r.MaxLongEdge > 0 && long > r.MaxLongEdge {
		return false
	}
	if r.MaxShortEdge > 0 && short > r.MaxShortEdge {
		return false
	}
	if r.MaxPixels > 0 && !mulAtMost(long, short, r.MaxPixels) {
		return false
	}
	if r.Tile > 0 && r.MaxTiles > 0 && !mulAtMost(ceilDiv(long, r.Tile), ceilDiv(short, r.Tile), r.MaxTiles) {
		return false
	}
	return true
}

// lossFor returns how far the short side of the candidate with long side l
// is from the exact proportion l*short/long, in units of 1/long pixel: the
// remainder of the division, or, where the short side is raised to 1 px,
// the distance up to it.
func lossFor(l, short, long int) uint64 {
	hi, lo := bits.Mul64(uint64(l), uint64(short))
	q, rem := bits.Div64(hi, lo, uint64(long))
	if q == 0 {
		return uint64(long) - lo // l*short < long, so hi == 0
	}
	return rem
}

// mulDiv returns floor(a*b/c) for non-negative a <= c, without overflow.
func mulDiv(a, b, c int) int {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	q, _ := bits.Div64(hi, lo, uint64(c)) // hi < c because a <= c
	return int(q)
}

// mulAtMost reports whether a*b <= limit for non-negative a, b, limit.
func mulAtMost(a, b, limit int) bool {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return hi == 0 && lo <= uint64(limit)
}

// ceilDiv returns ceil(a/b) for a >= 0, b > 0, without overflow.
func ceilDiv(a, b int) int {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// The size rules, one per provider family. Sources, as of late 2026:
//
//   - Anthropic (docs "Vision" and the computer-use reference): the API
//     downscales an image whose long edge exceeds 1568 px or that needs more
//     than about 1.15 MP; in 28-px tiles, ceil(w/28)*ceil(h/28) <= 1568. Its
//     published per-aspect maxima (1092x1092, 1268x951, 1344x896, 1456x819,
//     1568x784) all satisfy this rule and are what Fit produces.
//   - Anthropic, Claude Opus 4.7 and later: long edge up to 2576 px and about
//     3.75 MP. UNVERIFIED (from PROVIDERS.md, not confirmed in Anthropic's
//     docs); change it here.
//   - OpenAI computer-use-preview (a GPT-4o-class tile model): in "high"
//     detail an image is fitted into 2048x2048, then scaled so its short
//     side is 768 px, then cut into 512-px tiles (OpenAI "Images and
//     vision", calculating costs). An image with long side <= 2048 and
//     short side <= 768 is left as it is. Whether a smaller image is scaled
//     up is not stated; sizes within the rule were never reported to move.
//   - OpenAI GA computer tool (gpt-5.4 and later, patch models): an image is
//     cut into 32-px patches and shrunk until the patches fit a budget. The
//     smallest budget OpenAI documents for a patch model is 1536 patches
//     (gpt-4.1-mini); gpt-5.4's "high" and "original" detail allow more
//     (about 2.5 MP and 10.24 MP with a 6000-px long side: third-party
//     reports, UNVERIFIED). Staying within 1536 patches and 2048 px
//     guarantees no server-side resize at any detail level. Adapters should
//     still send detail "original" where the API accepts it.
//   - Gemini: coordinates are normalized to a 0..999 grid, so a downscaled
//     image never causes drift. Google recommends a 1440x900 screen for
//     computer use; larger captures are fitted into that box, which also
//     caps the token cost (258 tokens per 768x768 tile on Gemini 2.x; a
//     fixed per-image budget set by media_resolution on Gemini 3).
//   - UI-TARS / Qwen2.5-VL: the server smart-resizes every image (see
//     SmartResize) and the model answers in the resized image's pixels
//     (ResizedSpace), so any size maps correctly; the rule only keeps the
//     image inside the default max_pixels (16384 28-px patches) so that the
//     resize stays a small rounding.
//   - Default, for providers and models not in the table: every rule above
//     at once (except the UI-TARS one, which any of them satisfies).
var (
	ruleAnthropic      = SizeRule{Name: "anthropic", MaxLongEdge: 1568, Tile: 28, MaxTiles: 1568}
	ruleAnthropicLarge = SizeRule{Name: "anthropic-large", MaxLongEdge: 2576, MaxPixels: 3_750_000}
	ruleOpenAIPreview  = SizeRule{Name: "openai-preview", MaxLongEdge: 2048, MaxShortEdge: 768}
	ruleOpenAI         = SizeRule{Name: "openai", MaxLongEdge: 2048, Tile: 32, MaxTiles: 1536}
	ruleGemini         = SizeRule{Name: "gemini", MaxLongEdge: 1440, MaxShortEdge: 900}
	ruleUITARS         = SizeRule{Name: "uitars", Tile: 28, MaxTiles: 16384}
	ruleDefault        = SizeRule{Name: "default", MaxLongEdge: 1440, MaxShortEdge: 768, Tile: 28, MaxTiles: 1568}
)

// rules is the one table RuleFor reads: the first row whose provider
// matches and whose model test (nil: any model) accepts the model wins.
var rules = []struct {
	provider string
	model    func(model string) bool
	rule     SizeRule
}{
	{"anthropic", claudeOpusAtLeast(4, 7), ruleAnthropicLarge},
	{"anthropic", nil, ruleAnthropic},
	{"openai", contains("computer-use-preview"), ruleOpenAIPreview},
	{"openai", nil, ruleOpenAI},
	{"gemini", nil, ruleGemini},
	{"uitars", nil, ruleUITARS},
}

// providerAliases maps other spellings of a provider to its name in rules.
var providerAliases = map[string]string{
	"claude":  "anthropic",
	"google":  "gemini",
	"vertex":  "gemini",
	"ui-tars": "uitars",
	"qwen":    "uitars",
}

// RuleFor returns the image size rule for a provider ("anthropic",
// "openai", "gemini", "uitars") and model. Models are matched by family,
// not full name, so new dated names ("claude-opus-4-7-20260101",
// "computer-use-preview-2025-03-11") match too. An unknown provider, or
// "", gives a conservative default that every provider accepts unchanged.
// Matching ignores case.
func RuleFor(provider, model string) SizeRule {
	p := strings.ToLower(strings.TrimSpace(provider))
	if a, ok := providerAliases[p]; ok {
		p = a
	}
	m := strings.ToLower(strings.TrimSpace(model))
	for _, row := range rules {
		if row.provider == p && (row.model == nil || row.model(m)) {
			return row.rule
		}
	}
	return ruleDefault
}

func contains(sub string) func(string) bool {
	return func(m string) bool { return strings.Contains(m, sub) }
}

// claudeVersion finds a Claude family and version in a model name such as
// "claude-opus-4-7", "claude-opus-4-7-20260101", "claude-opus-4.7",
// "anthropic.claude-opus-4-7-v1:0" or "claude-opus-4-7@20260101". Versions
// have one or two digits, so a date is never read as one: legacy names
// ("claude-3-opus-20240229") do not match.
var claudeVersion = regexp.MustCompile(`(opus|sonnet|haiku)-(\d{1,2})(?:[-.](\d{1,2}))?(?:[^0-9]|$)`)

// claudeOpusAtLeast matches Claude Opus models of version major.minor or
// later. Other families, legacy names ("claude-3-opus-...") and names it
// cannot read do not match, so they keep the smaller, always-safe rule.
func claudeOpusAtLeast(major, minor int) func(string) bool {
	return func(m string) bool {
		g := claudeVersion.FindStringSubmatch(m)
		if g == nil || g[1] != "opus" {
			return false
		}
		ma, err := strconv.Atoi(g[2])
		if err != nil {
			return false
		}
		mi := 0
		if g[3] != "" {
			mi, _ = strconv.Atoi(g[3])
		}
		return ma > major || ma == major && mi >= minor
	}
}

// SmartResize returns the size UI-TARS 1.5 and Qwen2.5-VL servers resize an
// image of size s to before the model sees it, and whose pixels the model
// answers in: each side rounded to the nearest multiple of 28 (halves to
// even, as Python's round does), then, if the area falls outside
// [100*28*28, 16384*28*28], both sides scaled by the same factor into that
// range, rounding down when shrinking and up when growing. This follows the
// reference smart_resize of qwen-vl-utils with UI-TARS's limits; a server
// started with other min_pixels or max_pixels resizes differently. An empty
// s gives the zero Size.
func SmartResize(s Size) Size {
	const (
		factor    = 28
		minPixels = 100 * factor * factor
		maxPixels = 16384 * factor * factor
	)
	if s.Empty() {
		return Size{}
	}
	w, h := float64(s.W), float64(s.H)
	byFactor := func(v float64, round func(float64) float64) int {
		return int(round(v/factor)) * factor
	}
	rw := max(factor, byFactor(w, math.RoundToEven))
	rh := max(factor, byFactor(h, math.RoundToEven))
	switch area := float64(rw) * float64(rh); {
	case area > maxPixels:
		beta := math.Sqrt(h * w / maxPixels)
		rh = max(factor, byFactor(h/beta, math.Floor))
		rw = max(factor, byFactor(w/beta, math.Floor))
	case area < minPixels:
		beta := math.Sqrt(minPixels / (h * w))
		rh = byFactor(h*beta, math.Ceil)
		rw = byFactor(w*beta, math.Ceil)
	}
	return Size{W: rw, H: rh}
}

// ImageTokens estimates the input tokens a provider charges for an image of
// size s sent as it is (after the provider's own resizing, if s is larger
// than it accepts). Estimates, from each provider's published formula:
//
//   - "anthropic": about w*h/750, rounded up, after fitting the image to
//     the pre-Opus-4.7 rule (Anthropic, "Vision": image costs).
//   - "openai": 85 + 170 per 512-px tile after "high" detail's resize (fit
//     into 2048x2048, then short side down to 768); this is the GPT-4o /
//     computer-use-preview formula (OpenAI, "Images and vision"). Patch
//     models (gpt-4.1-mini, gpt-5.x) bill 32-px patches times a per-model
//     multiplier instead, not modelled here.
//   - "gemini": 258 for an image with both sides <= 384 px, otherwise 258
//     per 768x768 tile (Gemini 2.x, "Understand and count tokens"). Gemini 3
//     charges a fixed budget per image set by media_resolution, not modelled.
//   - "uitars": one token per 28x28 block of the smart-resized image
//     (Qwen2.5-VL merges 2x2 patches of 14 px).
//
// Other providers get the Anthropic estimate. An empty s costs 0.
func ImageTokens(provider string, s Size) int {
	if s.Empty() {
		return 0
	}
	p := strings.ToLower(strings.TrimSpace(provider))
	if a, ok := providerAliases[p]; ok {
		p = a
	}
	switch p {
	case "openai":
		w, h := float64(s.W), float64(s.H)
		if w > 2048 || h > 2048 {
			k := 2048 / math.Max(w, h)
			w, h = math.Floor(w*k), math.Floor(h*k)
		}
		if short := math.Min(w, h); short > 768 {
			k := 768 / short
			w, h = math.Floor(w*k), math.Floor(h*k)
		}
		tiles := math.Ceil(w/512) * math.Ceil(h/512)
		return 85 + 170*int(tiles)
	case "gemini":
		if s.W <= 384 && s.H <= 384 {
			return 258
		}
		return 258 * ceilDiv(s.W, 768) * ceilDiv(s.H, 768)
	case "uitars":
		r := SmartResize(s)
		return (r.W / 28) * (r.H / 28)
	}
	f := ruleAnthropic.Fit(s)
	return ceilDiv(f.W*f.H, 750)
}
