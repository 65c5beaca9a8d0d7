package gemini

import (
	"strings"

	"google.golang.org/genai"

	"github.com/spotter-harness/spotter/harness"
)

// price is what a model charges, in USD per million tokens.
type price struct {
	input, cachedInput, output float64
}

// prices are ESTIMATES from Google's public price lists (mid 2026), for
// prompts under 200k tokens; longer prompts cost more. Matched by the
// longest model-name prefix; unknown models cost 0.
var prices = []struct {
	prefix string
	price  price
}{
	{"gemini-2.5-computer-use", price{input: 1.25, cachedInput: 0.125, output: 10}},
	{"gemini-2.5-pro", price{input: 1.25, cachedInput: 0.125, output: 10}},
	{"gemini-2.5-flash", price{input: 0.30, cachedInput: 0.03, output: 2.50}},
	{"gemini-3-flash", price{input: 0.50, cachedInput: 0.05, output: 3}},
	{"gemini-3-pro", price{input: 2, cachedInput: 0.20, output: 12}},
	{"gemini-3.1-pro", price{input: 2, cachedInput: 0.20, output: 12}},
	{"gemini-3.5-flash", price{input: 1.50, cachedInput: 0.15, output: 9}},
}

func priceFor(model string) price {
	model = strings.TrimPrefix(model, "models/")
	best, p := -1, price{}
	for _, e := range prices {
		if strings.HasPrefix(model, e.prefix) && len(e.prefix) > best {
			best, p = len(e.prefix), e.price
		}
	}
	return p
}

// usage converts usageMetadata. Thinking tokens are billed as output, so
// they count in OutputTokens; CachedTokens are part of InputTokens.
func usage(m *genai.GenerateContentResponseUsageMetadata, p price) harness.Usage {
	if m == nil {
		return harness.Usage{}
	}
	u := harness.Usage{
		InputTokens:  int(m.PromptTokenCount) + int(m.ToolUsePromptTokenCount),
		OutputTokens: int(m.CandidatesTokenCount) + int(m.ThoughtsTokenCount),
		CachedTokens: int(m.CachedContentTokenCount),
	}
	uncached := max(u.InputTokens-u.CachedTokens, 0)
	u.CostUSD = (float64(uncached)*p.input + float64(u.CachedTokens)*p.cachedInput + float64(u.OutputTokens)*p.output) / 1e6
	return u
}

func addUsage(a, b harness.Usage) harness.Usage {
	return harness.Usage{
		InputTokens:  a.InputTokens + b.InputTokens,
		OutputTokens: a.OutputTokens + b.OutputTokens,
		CachedTokens: a.CachedTokens + b.CachedTokens,
		CostUSD:      a.CostUSD + b.CostUSD,
	}
}
