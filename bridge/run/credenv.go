package run

import (
	"slices"
	"strings"
)

// credentialVariables names the variables of a container's environment that look like a
// credential (a provider's key variable such as OPENAI_API_KEY, any *_KEY, *_TOKEN, *SECRET*,
// *PASSWORD*, *CREDENTIAL*), were passed with --docker-env and carry a value other than the run's
// placeholder (keyOutside swaps the variable that held the provider's key). Only names: the
// values are secrets. A run whose environment holds one cannot be said to have its credential
// outside, whatever the proxy did for the provider's own key.
func (p *prep) credentialVariables(env []string) []string {
	var names []string
	for _, kv := range env {
		name, v, ok := strings.Cut(kv, "=")
		if !ok || v == "" || strings.HasPrefix(v, placeholderPrefix) || !credentialName(name) {
			continue
		}
		if slices.Contains(p.r.cfg.DockerEnv, name) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// credentialName: a variable name that looks like it holds a credential.
func credentialName(name string) bool {
	n := strings.ToUpper(name)
	if strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "APIKEY") || strings.HasSuffix(n, "_TOKEN") {
		return true
	}
	for _, w := range []string{"SECRET", "PASSWORD", "CREDENTIAL"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
