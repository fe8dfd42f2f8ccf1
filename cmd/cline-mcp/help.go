package main

import (
	"flag"
	"fmt"
	"io"
)

// flagGroup is one topic of --help.
type flagGroup struct {
	title string
	names []string
}

// flagGroups orders --help by topic. Every flag register adds belongs to exactly one group
// (TestHelpGroupsEveryFlag); a flag missing here is still printed, under "Other".
var flagGroups = []flagGroup{
	{"Cline", []string{"cline", "cline-protocol", "analysis-policy", "stop-grace"}},
	{"Isolation", []string{"isolation", "retry-isolation"}},
	{"Docker", []string{"docker-host", "docker-mounts", "docker-image", "docker-cline", "docker-env",
		"docker-memory", "docker-pids", "docker-cpus"}},
	{"Egress of Docker runs", []string{"docker-egress", "docker-network", "egress-allow", "docker-egress-image"}},
	{"Kubernetes (--isolation kubernetes: a pod per run)", k8sFlagNames},
	{"Workspace and worktree pool", []string{"worktree-root", "workspace-pool", "workspace-pool-idle"}},
	{"Sessions and warm agents (acp protocol)", []string{"sessions-dir", "session-idle", "warm-agents", "warm-idle"}},
	{"Background jobs and long results", []string{"jobs-dir", "job-max", "job-idle", "job-keep", "result-max-chars"}},
	{"Limits", []string{"max-concurrent", "max-cost-usd", "max-iterations"}},
	{"Logging", []string{"log-level", "log-file"}},
}

// printFlagGroups prints the flags of fs by topic, each in flag's own format.
func printFlagGroups(w io.Writer, fs *flag.FlagSet) {
	printed := map[string]bool{}
	for _, g := range flagGroups {
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			if f := fs.Lookup(name); f != nil {
				printFlag(w, f)
				printed[name] = true
			}
		}
	}
	other := false
	fs.VisitAll(func(f *flag.Flag) {
		if printed[f.Name] {
			return
		}
		if !other {
			fmt.Fprint(w, "\nOther:\n")
			other = true
		}
		printFlag(w, f)
	})
}

// printFlag prints one flag as flag.PrintDefaults would, with its registered default.
func printFlag(w io.Writer, f *flag.Flag) {
	one := flag.NewFlagSet("", flag.ContinueOnError)
	one.SetOutput(w)
	one.Var(f.Value, f.Name, f.Usage)
	one.Lookup(f.Name).DefValue = f.DefValue
	one.PrintDefaults()
}
