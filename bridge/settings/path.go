package settings

import "path/filepath"

// Path returns the providers.json the real Cline CLI (3.0.65) would use with this environment:
// $CLINE_PROVIDER_SETTINGS_PATH, else <dataDir>/settings/providers.json, where dataDir is DataDir's answer.
// getenv is usually os.Getenv; an empty value counts as unset, like the CLI's `||` fallbacks.
// home is the user's home directory (os.UserHomeDir).
func Path(getenv func(string) string, home string) string {
	if p := getenv("CLINE_PROVIDER_SETTINGS_PATH"); p != "" {
		return p
	}
	return filepath.Join(DataDir(getenv, home), "settings", "providers.json")
}

// DataDir returns Cline's data dir: $CLINE_DATA_DIR, else $CLINE_DIR/data, else <home>/.cline/data.
// (The CLI's `--config <dir>` sits between CLINE_DATA_DIR and CLINE_DIR; the bridge never passes it.)
func DataDir(getenv func(string) string, home string) string {
	if d := getenv("CLINE_DATA_DIR"); d != "" {
		return d
	}
	if d := getenv("CLINE_DIR"); d != "" {
		return filepath.Join(d, "data")
	}
	return filepath.Join(home, ".cline", "data")
}
