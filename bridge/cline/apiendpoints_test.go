package cline

import "testing"

// TestAPIEndpointsAndPrices: every provider whose key the proxy can keep has the endpoints its
// CLI calls; a model's price is its family's, the unknown model's the highest in the table.
func TestAPIEndpointsAndPrices(t *testing.T) {
	for p := range keyAuth {
		if len(APIEndpoints(p)) == 0 {
			t.Errorf("%s: no API endpoint", p)
		}
	}
	if APIEndpoints("cline") != nil {
		t.Error("an OAuth provider has endpoints")
	}
	for model, want := range map[string][2]float64{
		"claude-opus-4-1": {15, 75}, "anthropic/claude-sonnet-4.5": {6, 22.5}, "gpt-4o-mini": {0.15, 0.6},
		"gpt-4o-2024-08-06": {5, 15}, "openai/o1-pro": {150, 600}, "fake-model": {150, 600},
	} {
		in, out, _ := TokenPrice(model)
		if in != want[0] || out != want[1] {
			t.Errorf("%s: $%g/$%g, want $%g/$%g", model, in, out, want[0], want[1])
		}
	}
	if _, _, known := TokenPrice("fake-model"); known {
		t.Error("fake-model is known")
	}
}
