package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
)

// policyChecks report what the analysis tool policy can and cannot switch off on this machine:
// the CLI's version against the one the policy was written for, the user's MCP servers (off for
// analysis), and hooks or plugins the CLI reads from places no setting moves (a WARN naming
// them). version is the host CLI's, "" when unknown.
func policyChecks(version string) []check {
	c := check{name: "analysis tools", optional: true, ok: true,
		detail: fmt.Sprintf("allow-list: %s on the host, %s in Docker; every other tool of Cline %s disabled",
			strings.Join(cline.AnalysisTools(false), ", "), strings.Join(cline.AnalysisTools(true), ", "), cline.PolicyCLIVersion)}
	if version != "" && version != cline.PolicyCLIVersion {
		c.ok = false
		c.detail = fmt.Sprintf("the Cline CLI is %s, the tool policy was written for %s: tools the CLI added are not on its deny-list and may be offered to ask_cline (results report any such tool a run calls)", version, cline.PolicyCLIVersion)
		c.fix = fmt.Sprintf("install cline@%s (npm install -g cline@%s), or update cline-mcp", cline.PolicyCLIVersion, cline.PolicyCLIVersion)
	}
	out := []check{c}

	home, _ := os.UserHomeDir()
	getenv := os.Getenv
	mcpPath := getenv("CLINE_MCP_SETTINGS_PATH")
	if mcpPath == "" {
		mcpPath = filepath.Join(settings.DataDir(getenv, home), "settings", "cline_mcp_settings.json")
	}
	if names := mcpServers(mcpPath); len(names) > 0 {
		out = append(out, check{name: "mcp servers", optional: true, ok: true,
			detail: fmt.Sprintf("%s configures %s: switched off for the analysis tools (ask_cline, ask_cline_workspace, review_cline; an empty CLINE_MCP_SETTINGS_PATH), on for apply_cline_edits", mcpPath, strings.Join(names, ", "))})
	}
	var code []string
	for _, d := range cline.UserCodeDirs(home) {
		if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
			code = append(code, d)
		}
	}
	if len(code) > 0 {
		out = append(out, check{name: "cline hooks", optional: true,
			detail: "hooks or plugins in " + strings.Join(code, ", ") + " run in every host analysis call: the CLI reads them from your home directory and has no setting that switches them off (those in ~/.cline are switched off)",
			fix:    "move them out if analysis must not run them, or use --isolation docker (a container sees none of them)"})
	}
	return out
}

// mcpServers lists the server names of a cline_mcp_settings.json, sorted; nil when there are
// none or the file cannot be read.
func mcpServers(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var doc struct {
		MCPServers map[string]json.RawMessage `json:"mcpServers"`
	}
	if json.Unmarshal(b, &doc) != nil {
		return nil
	}
	names := make([]string, 0, len(doc.MCPServers))
	for n := range doc.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// egressCheck reports the network policy of Docker runs: provider needs the proxy's image;
// open is a warning (the containers reach whatever --docker-network reaches).
func egressCheck(ctx context.Context, cfg *config, optional bool) check {
	c := check{name: "docker egress", optional: optional}
	switch sandbox.EgressMode(cfg.dockerEgress) {
	case sandbox.EgressNone:
		c.ok, c.detail = true, "none: containers have no network"
		return c
	case sandbox.EgressOpen:
		c.optional = true
		c.detail = fmt.Sprintf("open: containers reach whatever the %s network reaches; a prompt injection in the analysed code can send it anywhere", cfg.dockerNetwork)
		c.fix = "drop --docker-egress open (the default, provider, lets runs reach only their provider's API)"
		return c
	}
	ex, err := newDocker(cfg)
	if err != nil {
		c.detail, c.fix = err.Error(), "check the --docker-* flags"
		return c
	}
	defer ex.Close()
	ok, err := ex.EgressImagePresent(ctx)
	if err == nil && ok {
		err = ex.CheckEgressImage(ctx)
	}
	switch {
	case err != nil:
		c.detail, c.fix = explain(err, docker.HintEgressImage)
		c.detail = "provider: " + c.detail
	case !ok:
		c.detail, c.fix = fmt.Sprintf("provider: the egress proxy image %s is missing", cfg.dockerEgressImage), docker.HintEgressImage
	default:
		allow := "nothing else"
		if len(cfg.egressAllow) > 0 {
			allow = strings.Join(cfg.egressAllow, ", ") + ", each named in the result when a run uses it"
		}
		c.ok = true
		c.detail = fmt.Sprintf("provider: each run reaches only its provider's API (and %s) through the proxy %s, over a unix socket in its volume; runs have no network (not the host, not each other), only the proxy reaches out, through %s", allow, cfg.dockerEgressImage, cfg.dockerNetwork)
	}
	return c
}
