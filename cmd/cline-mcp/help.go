package main

import (
	"flag"
	"fmt"
	"io"

	configfile "github.com/cline-mcp/cline-mcp/config"
)

// flagGroup is one topic of --help.
type flagGroup struct {
	title string
	names []string
}

// flagGroups orders --help by topic. It holds exactly the flags a client's server entry sets
// (configfile.HelpFlags, TestHelpGroupsEveryFlag); the others are set once per machine in the
// configuration file (docs/configuration.md), and are still taken on the command line.
var flagGroups = []flagGroup{
	{"Cline", []string{"cline", "cline-protocol", "analysis-policy"}},
	{"Isolation", []string{"isolation", "retry-isolation"}},
	{"Docker", []string{"docker-host", "docker-image", "docker-env", "docker-egress", "egress-allow"}},
	{"Kubernetes (--isolation kubernetes: a pod per run)", []string{"k8s-context", "k8s-namespace", "k8s-image"}},
	{"Limits", []string{"max-concurrent", "max-cost-usd", "max-iterations", "result-max-chars"}},
	{"Logging and configuration", []string{"log-level", "log-file", configfile.FileFlag}},
}

// printFlagGroups prints the flags of the groups by topic, each in flag's own format.
func printFlagGroups(w io.Writer, fs *flag.FlagSet) {
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			if f := fs.Lookup(name); f != nil {
				printFlag(w, f)
			}
		}
	}
}

// printFlag prints one flag as flag.PrintDefaults would, with its registered default.
func printFlag(w io.Writer, f *flag.Flag) {
	one := flag.NewFlagSet("", flag.ContinueOnError)
	one.SetOutput(w)
	one.Var(f.Value, f.Name, f.Usage)
	one.Lookup(f.Name).DefValue = f.DefValue
	one.PrintDefaults()
}
