package cline

import "strings"

// apiEndpoints are the requests a run of PolicyCLIVersion sends with the provider's key, below
// its base URL: the only ones the egress proxy adds a key it keeps to. Observed on the real CLI
// (contract TestProvidersHonourBaseURL and the recordings: it never lists models, counts tokens
// or reads a generation's cost).
var apiEndpoints = map[string][]string{
	"anthropic":         {"POST /messages"},
	"openai-native":     {"POST /responses"},
	"openai-compatible": {"POST /chat/completions"},
	"openrouter":        {"POST /chat/completions"},
}

// APIEndpoints are the "METHOD /suffix" below the base URL a run of provider calls with its key
// (nil for a provider without KeyAuth).
func APIEndpoints(provider string) []string {
	return append([]string(nil), apiEndpoints[provider]...)
}

// PlainBasePath reports whether p ("" or "/v1") is a base path the egress proxy lends a key
// below: visible ASCII without percent-encoding, backslash or ";", no empty, "." or ".." segment.
func PlainBasePath(p string) bool {
	if p == "" {
		return true
	}
	if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "%\\;?#") {
		return false
	}
	for _, c := range []byte(p) {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// TokenPrice is what the egress proxy assumes a model's tokens cost, in USD per million input
// and output tokens, to turn a call's maxCostUsd into a token allowance: the list price of the
// most expensive variant of the family the model's name names (longest prefix of its last
// path segment: "anthropic/claude-sonnet-4.5" is a claude-sonnet), else the highest price in
// the table — never less than the provider bills, so the proxy may stop a run earlier than the
// CLI's own cost figure, never later. known is false when the table does not name the model.
func TokenPrice(model string) (in, out float64, known bool) {
	name := strings.ToLower(model)
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	best := ""
	for prefix := range tokenPrices {
		if strings.HasPrefix(name, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best != "" {
		p := tokenPrices[best]
		return p[0], p[1], true
	}
	for _, p := range tokenPrices {
		in, out = max(in, p[0]), max(out, p[1])
	}
	return in, out, false
}

// tokenPrices are list prices (USD per million input, output tokens) of model families, each the
// family's most expensive current variant (long-context rates included).
var tokenPrices = map[string][2]float64{
	"claude-opus":     {15, 75},
	"claude-sonnet":   {6, 22.5},
	"claude-3-5-sonn": {3, 15},
	"claude-3-7-sonn": {3, 15},
	"claude-3-opus":   {15, 75},
	"claude-haiku":    {1, 5},
	"claude-3-5-haik": {0.8, 4},
	"claude-3-haiku":  {0.25, 1.25},
	"gpt-4o-mini":     {0.15, 0.6},
	"gpt-4o":          {5, 15},
	"gpt-4.1-nano":    {0.1, 0.4},
	"gpt-4.1-mini":    {0.4, 1.6},
	"gpt-4.1":         {2, 8},
	"gpt-5-nano":      {0.05, 0.4},
	"gpt-5-mini":      {0.25, 2},
	"gpt-5-pro":       {15, 120},
	"gpt-5":           {2.5, 20},
	"o1-pro":          {150, 600},
	"o1":              {15, 60},
	"o3-pro":          {20, 80},
	"o3-mini":         {1.1, 4.4},
	"o3":              {10, 40},
	"o4-mini":         {1.1, 4.4},
}
