package run

import (
	"slices"
	"testing"
)

// TestCredentialVariables: a --docker-env variable that looks like a credential and holds anything
// but the run's placeholder is named (never its value); other variables, and ones not passed with
// --docker-env, are not.
func TestCredentialVariables(t *testing.T) {
	p := &prep{r: &Runner{cfg: Config{DockerEnv: []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GH_TOKEN", "MY_SECRET_X", "E2E_RUN_TAG", "EMPTY_KEY"}}}}
	env := []string{
		"OPENAI_API_KEY=sk-other-account", "ANTHROPIC_API_KEY=" + placeholderPrefix + "abc", "GH_TOKEN=ghp_x",
		"MY_SECRET_X=s", "E2E_RUN_TAG=tag", "EMPTY_KEY=", "CLINE_API_KEY=sk-provider", "AWS_SECRET_ACCESS_KEY=x",
	}
	got := p.credentialVariables(env)
	if want := []string{"GH_TOKEN", "MY_SECRET_X", "OPENAI_API_KEY"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
