package anthropic

import (
	"fmt"
	"strings"
)

// ToolVersion is the type of Anthropic's computer tool, which fixes its
// action set and its beta header.
type ToolVersion string

const (
	// Computer20241022 is the first version (Claude 3.5 Sonnet v2): clicks
	// act at the cursor and a drag starts there.
	Computer20241022 ToolVersion = "computer_20241022"
	// Computer20250124 adds scroll, hold_key, wait, triple_click and
	// left_mouse_down/up; clicks take a coordinate and modifiers in text.
	Computer20250124 ToolVersion = "computer_20250124"
	// Computer20251124 adds zoom (with enable_zoom).
	Computer20251124 ToolVersion = "computer_20251124"
)

// ToolVersions lists the versions this package speaks, oldest first.
var ToolVersions = []ToolVersion{Computer20241022, Computer20250124, Computer20251124}

// Beta returns the anthropic-beta header value that enables v.
func (v ToolVersion) Beta() string {
	switch v {
	case Computer20241022:
		return "computer-use-2024-10-22"
	case Computer20250124:
		return "computer-use-2025-01-24"
	case Computer20251124:
		return "computer-use-2025-11-24"
	}
	return ""
}

func (v ToolVersion) check() error {
	if v.Beta() == "" {
		return fmt.Errorf("unknown computer tool version %q (want %s, %s or %s)", string(v), Computer20241022, Computer20250124, Computer20251124)
	}
	return nil
}

// toolVersions maps model families (see family) to the tool version they
// were trained on, from Anthropic's computer use documentation.
var toolVersions = map[string]ToolVersion{
	"claude-opus-4-7":   Computer20251124,
	"claude-opus-4-6":   Computer20251124,
	"claude-sonnet-4-6": Computer20251124,
	"claude-opus-4-5":   Computer20251124,
	"claude-sonnet-4-5": Computer20250124,
	"claude-haiku-4-5":  Computer20250124,
	"claude-opus-4-1":   Computer20250124,
	"claude-opus-4":     Computer20250124,
	"claude-sonnet-4":   Computer20250124,
	"claude-3-7-sonnet": Computer20250124,
	"claude-3-5-sonnet": Computer20241022,
}

// ToolVersionFor returns the computer tool version for a model id, such as
// "claude-sonnet-4-5-20250929", "claude-opus-4-5@20251101" (Vertex) or
// "us.anthropic.claude-3-7-sonnet-20250219-v1:0" (Bedrock). Models it does
// not know get the newest version.
func ToolVersionFor(model string) ToolVersion {
	if v, ok := toolVersions[family(model)]; ok {
		return v
	}
	return Computer20251124
}

// family reduces a model id to its family: lower case, without a platform
// prefix, a dated snapshot, "-latest", or a Bedrock "-v1:0" suffix.
// "us.anthropic.claude-sonnet-4-5-20250929-v1:0" is "claude-sonnet-4-5".
func family(model string) string {
	s := strings.ToLower(strings.TrimSpace(model))
	if i := strings.Index(s, "claude-"); i >= 0 {
		s = s[i:]
	}
	if i := strings.IndexAny(s, "@:"); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSuffix(s, "-latest")
	if i := strings.LastIndex(s, "-v"); i >= 0 && allDigits(s[i+2:]) {
		s = s[:i]
	}
	if i := strings.LastIndex(s, "-"); i >= 0 && len(s)-i-1 == 8 && allDigits(s[i+1:]) {
		s = s[:i]
	}
	return s
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
