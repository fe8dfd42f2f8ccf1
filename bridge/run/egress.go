package run

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// providerEndpoints are the endpoints a container run of the copy's provider needs: the baseUrl's
// host, else the provider's known API host (cline.ProviderEndpoints). They are read from the
// settings copy just written, before the run (the container never wrote it yet). In provider
// mode a provider without any known endpoint gets a warning naming the fix.
func (p *prep) providerEndpoints(settingsPath, provider string, a *attempt) []string {
	if p.r.cfg.DockerEgress != sandbox.EgressProvider {
		return nil
	}
	var doc struct {
		Providers map[string]struct {
			Settings json.RawMessage `json:"settings"`
		} `json:"providers"`
	}
	if b, err := os.ReadFile(settingsPath); err == nil {
		_ = json.Unmarshal(b, &doc)
	}
	eps, known := cline.ProviderEndpoints(provider, doc.Providers[provider].Settings)
	if !known && len(p.r.cfg.EgressAllow) == 0 {
		a.warn(fmt.Sprintf("the egress proxy knows no API endpoint of provider %q (no baseUrl in its settings, and not in the catalog of Cline %s): the run cannot reach it unless the server allows it with --egress-allow host:port", provider, cline.PolicyCLIVersion))
	}
	return eps
}

// egressWarnings are the result's words about a container run's network: that it was open,
// which endpoints other than its provider it reached through the egress proxy (each a way out),
// and what the proxy refused (endpoint, count and reason; the CLI's own telemetry is refused
// quietly).
func (p *prep) egressWarnings(x sandbox.Exit) []string {
	var out []string
	if p.r.cfg.DockerEgress == sandbox.EgressOpen && !p.warned.open {
		p.warned.open = true
		out = append(out, "this Docker run's network was open (--docker-egress open): whatever ran in the container could reach any host its network reaches")
	}
	if x.Egress == nil {
		return out
	}
	for _, r := range x.Egress.Allowed {
		p.r.log.Debug("egress allowed", "target", r.Target, "count", r.Count, "rule", r.Rule)
		out = append(out, fmt.Sprintf("the run reached %s %s through the egress proxy (allowed by --egress-allow %s): not its provider, so a way out for what the run read", r.Target, times(r.Count), r.Rule))
	}
	for _, r := range x.Egress.Refused {
		p.r.log.Debug("egress refused", "target", r.Target, "count", r.Count, "reason", r.Reason)
		if slices.Contains(cline.TelemetryEndpoints, r.Target) {
			continue
		}
		out = append(out, fmt.Sprintf("the egress proxy refused %s %s: %s", r.Target, times(r.Count), strings.TrimSpace(r.Reason)))
	}
	return out
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}
