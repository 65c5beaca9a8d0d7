package anthropic

import (
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/spotter-harness/spotter/harness"
)

// price is a model's list price in US dollars per million tokens.
type price struct{ in, out float64 }

// prices are ESTIMATES from Anthropic's public price list (standard tier,
// prompts under 200k tokens), by model family. Cache writes (5 minute TTL)
// cost 1.25 times the input price and cache reads 0.1 times.
var prices = map[string]price{
	"claude-opus-4-7":   {5, 25},
	"claude-opus-4-6":   {5, 25},
	"claude-opus-4-5":   {5, 25},
	"claude-opus-4-1":   {15, 75},
	"claude-opus-4":     {15, 75},
	"claude-3-opus":     {15, 75},
	"claude-sonnet-4-6": {3, 15},
	"claude-sonnet-4-5": {3, 15},
	"claude-sonnet-4":   {3, 15},
	"claude-3-7-sonnet": {3, 15},
	"claude-3-5-sonnet": {3, 15},
	"claude-haiku-4-5":  {1, 5},
	"claude-3-5-haiku":  {0.8, 4},
	"claude-3-haiku":    {0.25, 1.25},
}

// priceFor returns the price of model, guessing by tier name (the newest
// price of an opus, sonnet or haiku) for families the table lacks.
func priceFor(model string) (price, bool) {
	f := family(model)
	if p, ok := prices[f]; ok {
		return p, true
	}
	for _, tier := range []struct {
		name string
		p    price
	}{{"opus", price{5, 25}}, {"sonnet", price{3, 15}}, {"haiku", price{1, 5}}} {
		if strings.Contains(f, tier.name) {
			return tier.p, true
		}
	}
	return price{}, false
}

// usage converts the API's usage. InputTokens counts every prompt token,
// cached or not (the API's input_tokens excludes both cache writes and
// reads); CachedTokens counts cache reads. CostUSD is an estimate, zero for
// a model of unknown price.
func usage(model string, u anthropic.BetaUsage) harness.Usage {
	h := harness.Usage{
		InputTokens:  int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
		OutputTokens: int(u.OutputTokens),
		CachedTokens: int(u.CacheReadInputTokens),
	}
	if p, ok := priceFor(model); ok {
		h.CostUSD = (float64(u.InputTokens)*p.in +
			float64(u.CacheCreationInputTokens)*p.in*1.25 +
			float64(u.CacheReadInputTokens)*p.in*0.1 +
			float64(u.OutputTokens)*p.out) / 1e6
	}
	return h
}

func addUsage(a, b harness.Usage) harness.Usage {
	return harness.Usage{
		InputTokens:  a.InputTokens + b.InputTokens,
		OutputTokens: a.OutputTokens + b.OutputTokens,
		CachedTokens: a.CachedTokens + b.CachedTokens,
		CostUSD:      a.CostUSD + b.CostUSD,
	}
}
