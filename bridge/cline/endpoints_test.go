package cline

import (
	"slices"
	"testing"
)

func TestProviderEndpoints(t *testing.T) {
	for _, tc := range []struct {
		name, provider, settings string
		want                     []string
		known                    bool
	}{
		{"baseUrl wins", "openai-compatible", `{"baseUrl":"http://provider:18080/v1"}`, []string{"provider:18080"}, true},
		{"https default port", "openai-compatible", `{"baseUrl":"https://LLM.example.com/v1"}`, []string{"llm.example.com:443"}, true},
		{"catalog default", "anthropic", `{"apiKey":"k"}`, []string{"api.anthropic.com:443"}, true},
		{"openai-compatible default", "openai-compatible", `{}`, []string{"api.openai.com:443"}, true},
		{"cline adds its auth host", "cline", `{"baseUrl":"https://proxy.corp:8443/api/v1"}`, []string{"proxy.corp:8443", "api.cline.bot:443"}, true},
		{"bedrock region", "bedrock", `{"aws":{"region":"eu-west-1"}}`, []string{"bedrock-runtime.eu-west-1.amazonaws.com:443", "bedrock.eu-west-1.amazonaws.com:443"}, true},
		{"vertex region", "vertex", `{"gcp":{"region":"europe-west4"}}`, []string{"europe-west4-aiplatform.googleapis.com:443", "aiplatform.googleapis.com:443", "oauth2.googleapis.com:443"}, true},
		{"loopback baseUrl is the container itself", "lmstudio", `{"baseUrl":"http://localhost:1234/v1"}`, nil, false},
		{"unknown provider", "no-such-provider", `{}`, nil, false},
		{"invalid settings", "anthropic", `not json`, []string{"api.anthropic.com:443"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, known := ProviderEndpoints(tc.provider, []byte(tc.settings))
			if !slices.Equal(got, tc.want) || known != tc.known {
				t.Errorf("got %q known %v, want %q known %v", got, known, tc.want, tc.known)
			}
		})
	}
}
