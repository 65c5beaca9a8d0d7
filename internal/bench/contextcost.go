package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/jpeg" // image.DecodeConfig of JPEG screenshots
	_ "image/png"  // image.DecodeConfig of PNG screenshots
	"math"
	"strings"

	"github.com/spotter-harness/spotter/screen"
)

// This file prices the requests of the context section: it cuts each
// request body into the blocks a provider's prompt cache sees, counts each
// block's tokens, and replays the provider's published caching rules over
// the task's requests. docs/PERFORMANCE.md ("Context") cites each rule.

// cacheRules are a provider's prompt-caching rules, as its documentation
// states them, and its prices as multiples of the input price.
type cacheRules struct {
	// explicit caching (Anthropic) caches the prefix up to each block
	// marked with cache_control; implicit caching (OpenAI, Gemini) caches
	// every prefix a request had and matches the longest one. none: no
	// cache price (a model on one's own server).
	kind string
	// min is the shortest prefix, in tokens, that is cached.
	min int
	// step: an implicit cache hit is counted in steps of this many tokens
	// after the first min (OpenAI: 128); 0 or 1 counts every token.
	step int
	// lookback is how many blocks before a breakpoint explicit caching
	// also checks for a cached prefix.
	lookback int
	// write and read are the prices of cache writes and reads per input
	// token, as multiples of the input price.
	write, read float64
	// overhead is the tokens the provider adds to every request's tools
	// (Anthropic's computer tool definition and tool-use system prompt).
	overhead int
	// tokens names the image token formula (screen.ImageTokens).
	tokens string
}

var (
	// Anthropic prompt caching: up to 4 breakpoints, each caching the
	// prefix through its block for 5 minutes; a hit is also looked for at
	// the 20 block boundaries before a breakpoint; at least 1024 tokens
	// (Sonnet); writes cost 1.25x the input price and reads 0.1x. The
	// computer tool adds 735 tokens of definition and a 466-token tool-use
	// system prompt.
	anthropicCache = cacheRules{kind: "explicit", min: 1024, lookback: 20, write: 1.25, read: 0.1,
		overhead: 735 + 466, tokens: "anthropic"}
	// OpenAI prompt caching: automatic for prompts of 1024 tokens or more,
	// on the longest prefix seen before, in steps of 128 tokens; cached
	// input of gpt-5.4 costs $0.25 against $2.50 (0.1x).
	openaiCache = cacheRules{kind: "implicit", min: 1024, step: 128, write: 1, read: 0.1, tokens: "openai"}
	// Gemini implicit caching: automatic on 2.5 and later models from
	// 1024 tokens (Flash); cached input of gemini-3.5-flash costs $0.15
	// against $1.50 (0.1x); no storage cost.
	geminiCache = cacheRules{kind: "implicit", min: 1024, write: 1, read: 0.1, tokens: "gemini"}
	// A model on one's own server bills nothing per token: every token
	// counts once per request (vLLM's prefix cache saves compute, not
	// tokens).
	noCache = cacheRules{kind: "none", write: 1, read: 1, tokens: "uitars"}
)

// block is one cacheable unit of a request: a tool, a system block, a
// message's content block (Anthropic), an input item (OpenAI), a part
// (Gemini), a message (chat).
type block struct {
	key         []byte // what the provider compares: the block without cache marks, images as hashes
	tokens      int    // text and images
	images      int
	imageTokens int
	breakpoint  bool
}

// price prices the task's request bodies under the provider's cache rules
// and returns the cost and the billed-equivalent input tokens.
func price(provider, strategy string, bodies [][]byte, rules cacheRules) (ContextCost, float64, error) {
	var (
		c     ContextCost
		value float64
		cache = map[[32]byte]bool{}
	)
	for i, body := range bodies {
		blocks, err := cut(provider, body, rules)
		if err != nil {
			return c, 0, fmt.Errorf("request %d: %w", i, err)
		}
		if provider == "anthropic" && strategy == "reference" {
			referenceBreakpoints(blocks)
		}
		c.Requests++
		c.RequestBytes += len(body)
		c.MaxRequestBytes = max(c.MaxRequestBytes, len(body))
		total := 0
		for _, b := range blocks {
			total += b.tokens
			c.Images += b.images
			c.ImageTokens += b.imageTokens
		}
		c.InputTokens += total
		read, write := replay(blocks, rules, cache)
		c.CacheReadTokens += read
		c.CacheWriteTokens += write
		value += float64(total-read-write) + float64(write)*rules.write + float64(read)*rules.read
	}
	return c, math.Round(value), nil
}

// replay applies the cache rules to one request's blocks, given what
// earlier requests put in the cache, and returns the tokens read from the
// cache and written to it. It adds this request's entries to cache.
func replay(blocks []block, rules cacheRules, cache map[[32]byte]bool) (read, write int) {
	sums := make([][32]byte, len(blocks))
	upto := make([]int, len(blocks)) // tokens through block i
	h := sha256.New()
	t := 0
	for i, b := range blocks {
		h.Write(b.key)
		h.Write([]byte{0})
		copy(sums[i][:], h.Sum(nil))
		t += b.tokens
		upto[i] = t
	}
	switch rules.kind {
	case "explicit":
		hit, last := -1, -1
		for i, b := range blocks {
			if !b.breakpoint {
				continue
			}
			for j := i; j >= max(0, i-rules.lookback); j-- {
				if cache[sums[j]] {
					hit = max(hit, j)
					break
				}
			}
			if upto[i] >= rules.min {
				last = i
			}
		}
		for i, b := range blocks { // this request's entries serve the next ones
			if b.breakpoint && upto[i] >= rules.min {
				cache[sums[i]] = true
			}
		}
		if hit >= 0 {
			read = upto[hit]
		}
		if last > hit {
			write = upto[last] - read
		}
	case "implicit":
		hit := -1
		for i := range blocks {
			if cache[sums[i]] {
				hit = i
			}
		}
		if hit >= 0 && upto[hit] >= rules.min {
			read = upto[hit]
			if rules.step > 1 {
				read = rules.min + (read-rules.min)/rules.step*rules.step
			}
		}
		for i := range blocks {
			cache[sums[i]] = true
		}
	}
	return read, write
}

// referenceBreakpoints moves Anthropic's cache breakpoints to where the
// computer-use demo puts them: on the system prompt and on the last block
// of each of the 3 newest user messages; none on the tools.
func referenceBreakpoints(blocks []block) {
	users := 0
	for i := len(blocks) - 1; i >= 0; i-- {
		b := &blocks[i]
		switch {
		case bytes.HasPrefix(b.key, []byte("tool:")):
			b.breakpoint = false
		case bytes.HasPrefix(b.key, []byte("system:")):
		case bytes.HasPrefix(b.key, []byte("user:")):
			last := i == len(blocks)-1 || !bytes.Equal(msgOf(blocks[i+1].key), msgOf(b.key))
			b.breakpoint = last && users < 3
			if last {
				users++
			}
		default:
			b.breakpoint = false
		}
	}
}

// msgOf is the message prefix of a block key: "user:12:".
func msgOf(key []byte) []byte {
	parts := bytes.SplitN(key, []byte(":"), 3)
	if len(parts) < 3 {
		return key
	}
	return key[:len(parts[0])+len(parts[1])+2]
}

// cut cuts a request body into its blocks, in the order the provider
// caches them.
func cut(provider string, body []byte, rules cacheRules) ([]block, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("body is not a JSON object: %w", err)
	}
	var blocks []block
	add := func(prefix string, raw json.RawMessage) error {
		b, err := blockOf(prefix, raw, rules)
		if err == nil {
			blocks = append(blocks, b)
		}
		return err
	}
	list := func(raw json.RawMessage) ([]json.RawMessage, error) {
		var l []json.RawMessage
		if len(raw) == 0 {
			return nil, nil
		}
		return l, json.Unmarshal(raw, &l)
	}
	switch provider {
	case "anthropic":
		for _, field := range []string{"tools", "system"} {
			items, err := list(req[field])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			for _, it := range items {
				if err := add(strings.TrimSuffix(field, "s")+":", it); err != nil {
					return nil, err
				}
			}
		}
		if len(blocks) > 0 {
			blocks[0].tokens += rules.overhead
		}
		msgs, err := list(req["messages"])
		if err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		for i, raw := range msgs {
			var msg struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(raw, &msg); err != nil {
				return nil, fmt.Errorf("message %d: %w", i, err)
			}
			content, err := list(msg.Content)
			if err != nil {
				content = []json.RawMessage{msg.Content} // a string
			}
			for _, b := range content {
				if err := add(fmt.Sprintf("%s:%d:", msg.Role, i), b); err != nil {
					return nil, err
				}
			}
		}
	case "openai":
		if err := add("head:", head(req, "tools", "instructions")); err != nil {
			return nil, err
		}
		items, err := list(req["input"])
		if err != nil {
			return nil, fmt.Errorf("input: %w", err)
		}
		for _, it := range items {
			if err := add("item:", it); err != nil {
				return nil, err
			}
		}
	case "gemini":
		if err := add("head:", head(req, "tools", "systemInstruction", "toolConfig")); err != nil {
			return nil, err
		}
		contents, err := list(req["contents"])
		if err != nil {
			return nil, fmt.Errorf("contents: %w", err)
		}
		for i, raw := range contents {
			var c struct {
				Role  string            `json:"role"`
				Parts []json.RawMessage `json:"parts"`
			}
			if err := json.Unmarshal(raw, &c); err != nil {
				return nil, fmt.Errorf("content %d: %w", i, err)
			}
			for _, p := range c.Parts {
				if err := add(fmt.Sprintf("%s:%d:", c.Role, i), p); err != nil {
					return nil, err
				}
			}
		}
	default:
		if err := add("head:", head(req, "tools")); err != nil {
			return nil, err
		}
		msgs, err := list(req["messages"])
		if err != nil {
			return nil, fmt.Errorf("messages: %w", err)
		}
		for _, m := range msgs {
			if err := add("message:", m); err != nil {
				return nil, err
			}
		}
	}
	return blocks, nil
}

// head is the fields of req that come before the conversation, as one
// JSON object.
func head(req map[string]json.RawMessage, fields ...string) json.RawMessage {
	h := map[string]json.RawMessage{}
	for _, f := range fields {
		if v, ok := req[f]; ok {
			h[f] = v
		}
	}
	b, _ := json.Marshal(h) // raw JSON values always marshal
	return b
}

// blockOf measures one block: its text tokens (its JSON without images and
// cache marks, at 4 bytes a token) and its images' tokens by the
// provider's formula.
func blockOf(prefix string, raw json.RawMessage, rules cacheRules) (block, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return block{}, fmt.Errorf("block %.60s: %w", raw, err)
	}
	b := block{}
	if m, ok := v.(map[string]any); ok {
		if _, ok := m["cache_control"]; ok {
			b.breakpoint = true
			delete(m, "cache_control")
		}
	}
	var sizes []screen.Size
	v = strip(v, &sizes)
	text, err := json.Marshal(v)
	if err != nil {
		return block{}, err
	}
	b.key = append([]byte(prefix), text...)
	b.tokens = (len(text) + 3) / 4
	for _, s := range sizes {
		b.imageTokens += screen.ImageTokens(rules.tokens, s)
		if s.W > 16 || s.H > 10 {
			b.images++
		}
	}
	b.tokens += b.imageTokens
	return b, nil
}

// strip returns v with every image (a base64 string, plain or a data URL,
// that decodes to a PNG or JPEG) replaced by its hash, and appends the
// images' sizes to sizes.
func strip(v any, sizes *[]screen.Size) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = strip(e, sizes)
		}
		return v
	case []any:
		for i, e := range v {
			v[i] = strip(e, sizes)
		}
		return v
	case string:
		if len(v) < 64 {
			return v
		}
		s := v
		if strings.HasPrefix(s, "data:image/") {
			if _, after, ok := strings.Cut(s, ","); ok {
				s = after
			}
		}
		data, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return v
		}
		cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			return v
		}
		*sizes = append(*sizes, screen.Size{W: cfg.Width, H: cfg.Height})
		sum := sha256.Sum256(data)
		return "image:" + hex.EncodeToString(sum[:8])
	}
	return v
}
