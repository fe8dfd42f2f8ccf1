package acp

import (
	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// Args is the argv of one ACP process, without argv[0]. Only `--acp`: in ACP mode the CLI
// ignores -P/-m/-k/-c/--data-dir (docs/acp.md §10), and `--auto-approve true` would switch off the
// permission requests that are the engine's control point (docs/acp.md §5).
func Args() []string { return []string{"--acp"} }

// Child is what the ACP process needs from its environment besides the caller's base.
type Child struct {
	// Provider is the provider id (CLINE_PROVIDER). ACP mode takes the provider only from the
	// environment (or an OAuth credential); -P and lastUsedProvider are ignored (docs/acp.md §10).
	Provider string
	// APIKey is the key the CLI sends (CLINE_API_KEY): the env key, not providers.json's,
	// reaches the provider, and without it session/new fails with -32000 (docs/acp.md §1). Empty: unset.
	APIKey string
	// DataDir, when set, is CLINE_DATA_DIR: where the CLI keeps settings and sessions.
	DataDir string
}

// Env returns the child's environment: base, then bridge/cline's fixed entries
// (CLINE_NO_AUTO_UPDATE=1; CLINE_SESSION_BACKEND_MODE=local, without which a hub daemon outlives
// the process, docs/acp.md §12), then CLINE_PROVIDER, CLINE_API_KEY and CLINE_DATA_DIR from c, then
// extra. Later entries replace earlier ones with the same key, as in cline.Env. The result holds
// the API key: never log it.
func Env(base []string, c Child, extra map[string]string) []string {
	all := make(map[string]string, len(extra)+3)
	if c.Provider != "" {
		all["CLINE_PROVIDER"] = c.Provider
	}
	if c.APIKey != "" {
		all["CLINE_API_KEY"] = c.APIKey
	}
	if c.DataDir != "" {
		all["CLINE_DATA_DIR"] = c.DataDir
	}
	for k, v := range extra {
		all[k] = v
	}
	return cline.Env(base, all)
}
