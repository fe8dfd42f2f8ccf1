package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// CLIChecks are doctor's lines on the Cline CLI on this machine: the executable found by find
// (ClineResolver) and its version, then PolicyChecks for that version. container is the
// isolation floor when it runs every call in a container ("docker" or "kubernetes"): the host
// CLI is then not needed, and its failure is a warning.
func CLIChecks(ctx context.Context, find func() (string, error), container string) []sandbox.Check {
	hostOptional := container == "docker" || container == "kubernetes"
	suffix := ""
	if hostOptional {
		suffix = " (not needed: --isolation " + container + " runs Cline in the image)"
	}
	c := sandbox.Check{Name: "cline executable", Optional: hostOptional}
	version := ""
	path, err := find()
	if err != nil {
		c.Detail = err.Error() + suffix
		c.Fix = "install it with `npm install -g cline` and run `cline auth`, or pass --cline PATH / set CLINE_MCP_CLINE"
	} else if v, verr := clineVersion(ctx, path); verr != nil {
		c.Detail = fmt.Sprintf("%s does not answer `version`: %v%s", path, verr, suffix)
		c.Fix = "reinstall the CLI: npm install -g cline"
	} else {
		version = v
		c = sandbox.Check{Name: "cline executable", OK: true, Detail: fmt.Sprintf("%s (version %s)", path, v)}
	}
	return append([]sandbox.Check{c}, PolicyChecks(version)...)
}

func clineVersion(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Env = append(os.Environ(), "CLINE_NO_AUTO_UPDATE=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Run(); err != nil {
		return "", err
	}
	v := strings.TrimSpace(stdout.String())
	if v == "" {
		return "", fmt.Errorf("empty output")
	}
	return v, nil
}

// PolicyChecks report what the analysis tool policy can and cannot switch off on this machine:
// the CLI's version against the one the policy was written for, the user's MCP servers (off for
// analysis), and hooks or plugins the CLI reads from places no setting moves (a WARN naming
// them). version is the host CLI's, "" when unknown.
func PolicyChecks(version string) []sandbox.Check {
	c := sandbox.Check{Name: "analysis tools", Optional: true, OK: true,
		Detail: fmt.Sprintf("allow-list: %s on the host, %s in Docker; every other tool of Cline %s disabled",
			strings.Join(cline.AnalysisTools(false), ", "), strings.Join(cline.AnalysisTools(true), ", "), cline.PolicyCLIVersion)}
	if version != "" && version != cline.PolicyCLIVersion {
		c.OK = false
		c.Detail = fmt.Sprintf("the Cline CLI is %s, the tool policy was written for %s: tools the CLI added are not on its deny-list and may be offered to ask_cline (results report any such tool a run calls)", version, cline.PolicyCLIVersion)
		c.Fix = fmt.Sprintf("install cline@%s (npm install -g cline@%s), or update cline-mcp", cline.PolicyCLIVersion, cline.PolicyCLIVersion)
	}
	out := []sandbox.Check{c}

	home, _ := os.UserHomeDir()
	getenv := os.Getenv
	mcpPath := getenv("CLINE_MCP_SETTINGS_PATH")
	if mcpPath == "" {
		mcpPath = filepath.Join(settings.DataDir(getenv, home), "settings", "cline_mcp_settings.json")
	}
	if names := mcpServers(mcpPath); len(names) > 0 {
		out = append(out, sandbox.Check{Name: "mcp servers", Optional: true, OK: true,
			Detail: fmt.Sprintf("%s configures %s: switched off for the analysis tools (ask_cline, ask_cline_workspace, review_cline; an empty CLINE_MCP_SETTINGS_PATH), on for apply_cline_edits", mcpPath, strings.Join(names, ", "))})
	}
	var code []string
	for _, d := range cline.UserCodeDirs(home) {
		if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
			code = append(code, d)
		}
	}
	if len(code) > 0 {
		out = append(out, sandbox.Check{Name: "cline hooks", Optional: true,
			Detail: "hooks or plugins in " + strings.Join(code, ", ") + " run in every host analysis call: the CLI reads them from your home directory and has no setting that switches them off (those in ~/.cline are switched off)",
			Fix:    "move them out if analysis must not run them, or use --isolation docker (a container sees none of them)"})
	}
	return out
}

// ImagePolicyChecks is the analysis policy's verdict on the CLI version found in a Docker image:
// nothing when it is the version the policy was written for, else a warning.
func ImagePolicyChecks(image, version string) []sandbox.Check {
	if version == cline.PolicyCLIVersion {
		return nil
	}
	return []sandbox.Check{{Name: "analysis tools", Optional: true,
		Detail: fmt.Sprintf("the CLI in %s is %s, the tool policy was written for %s: tools it added are not on its deny-list and may be offered to Docker analysis runs", image, version, cline.PolicyCLIVersion),
		Fix:    fmt.Sprintf("rebuild the image with the pinned CLI (make image CLINE_VERSION=%s), or update cline-mcp", cline.PolicyCLIVersion)}}
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

// SettingsCheck reads providers.json at path and reports the default provider without any
// secret.
func SettingsCheck(path string) sandbox.Check {
	c := sandbox.Check{Name: "cline settings"}
	b, err := os.ReadFile(path)
	if err != nil {
		c.Detail = fmt.Sprintf("%s: %v", path, err)
		c.Fix = "authenticate the CLI: cline auth (or set CLINE_PROVIDER_SETTINGS_PATH / CLINE_DATA_DIR)"
		return c
	}
	var doc struct {
		LastUsedProvider string                     `json:"lastUsedProvider"`
		Providers        map[string]json.RawMessage `json:"providers"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		c.Detail = fmt.Sprintf("%s is not valid JSON: %v", path, err)
		c.Fix = "repair or remove the file, then run cline auth"
		return c
	}
	if len(doc.Providers) == 0 {
		c.Detail = fmt.Sprintf("%s has no providers", path)
		c.Fix = "run cline auth"
		return c
	}
	c.OK = true
	def := doc.LastUsedProvider
	if def == "" {
		def = "(none set; Cline falls back to `cline`)"
	}
	c.Detail = fmt.Sprintf("%s (%d provider(s); default provider %s)", path, len(doc.Providers), def)
	return c
}
