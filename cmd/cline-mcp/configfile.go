package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	configfile "github.com/cline-mcp/cline-mcp/config"
)

// applyConfigFile reads the configuration file (--config-file, $CLINE_MCP_CONFIG, else the
// user's) and sets on fs every flag it names that the command line did not; cfg.args become the
// flags in effect (for the watchdog). It returns where each value came from and a line on the
// file for `cline-mcp config`.
func applyConfigFile(fs *flag.FlagSet, cfg *config) (configfile.Origins, string, error) {
	path, explicit := configfile.Locate(cfg.configFile, os.Getenv(configfile.EnvFile))
	var f *configfile.File
	status := "none"
	if path != "" {
		var err error
		f, err = configfile.Load(path)
		switch {
		case errors.Is(err, configfile.ErrNoFile) && !explicit:
			status, f = path+" (not there: defaults and flags only)", nil
		case err != nil:
			return nil, "", err
		default:
			status = path
		}
	}
	origins, err := configfile.Apply(fs, f, func() string { return string(cfg.container()) })
	if err != nil {
		return nil, "", err
	}
	if v := os.Getenv("CLINE_MCP_CLINE"); v != "" && cfg.cline == "" {
		origins["cline"] = configfile.Source{Kind: "env", Where: "CLINE_MCP_CLINE=" + v}
	}
	cfg.args = serverArgs(fs)
	return origins, status, nil
}

// showConfig is `cline-mcp config`: the configuration in effect, the file's way, each value with
// where it came from (flag, file, environment or default).
func showConfig(w io.Writer, fs *flag.FlagSet, cfg *config, origins configfile.Origins, status string) int {
	fmt.Fprintf(w, "# configuration file: %s\n# flags override the file; keys and their flags: docs/configuration.md\n\n", status)
	configfile.Print(w, fs, origins, string(cfg.container()))
	return 0
}
