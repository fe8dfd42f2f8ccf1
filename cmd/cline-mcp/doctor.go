package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"

	"github.com/cline-mcp/cline-mcp/bridge/run"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
	"github.com/cline-mcp/cline-mcp/sandbox/git"
	"github.com/cline-mcp/cline-mcp/sandbox/worktree"
)

// doctor prints one OK/FAIL line per check and returns 1 when a required check failed. It never
// prints secret values. Each check lives beside what it probes (sandbox.Check): the host CLI and
// the analysis policy in bridge/run (optional when the floor is a container), git in sandbox/git,
// the worktree root in sandbox/worktree, and either the cluster (sandbox/kubernetes) or the
// Docker engine, image, network and egress (sandbox/docker), required when Docker isolation is
// configured and warnings otherwise.
func doctor(ctx context.Context, cfg *config, out io.Writer) int {
	container := ""
	if cfg.isolation == "docker" || cfg.isolation == "kubernetes" {
		container = cfg.isolation
	}
	checks := run.CLIChecks(ctx, run.ClineResolver(cfg.cline, os.Getenv, runtime.GOOS), container)
	home, _ := os.UserHomeDir()
	checks = append(checks, run.SettingsCheck(settings.Path(os.Getenv, home)), git.DoctorCheck(ctx), worktree.DoctorCheck(cfg.worktreeRoot))
	if cfg.container() == sandbox.IsolationKubernetes {
		checks = append(checks, k8sChecks(ctx, cfg)...)
	} else {
		checks = append(checks, dockerDoctor(cfg, cfg.isolation == "docker" || cfg.retryIsolation == "docker").Checks(ctx)...)
	}
	return printChecks(out, checks)
}

// printChecks prints the lines and the verdict; 1 when a required check failed.
func printChecks(out io.Writer, checks []sandbox.Check) int {
	failed := false
	for _, c := range checks {
		status := "OK  "
		if !c.OK {
			status = "FAIL"
			if c.Optional {
				status = "WARN"
			} else {
				failed = true
			}
		}
		fmt.Fprintf(out, "%s %-18s %s\n", status, c.Name, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(out, "     %-18s fix: %s\n", "", c.Fix)
		}
	}
	if failed {
		fmt.Fprintln(out, "doctor: some required checks failed")
		return 1
	}
	fmt.Fprintln(out, "doctor: all required checks passed")
	return 0
}

// dockerDoctor is what doctor's Docker lines probe, from the flags: the executor a call would
// get and the engine discovery chooses. needed: Docker isolation is configured.
func dockerDoctor(cfg *config, needed bool) docker.Doctor {
	mem, _ := parseBytes(cfg.dockerMemory) // a bad value fails newDocker, and the image is not probed
	return docker.Doctor{
		New:      func() (*docker.Executor, error) { return newDocker(cfg) },
		Endpoint: func() (engine.Endpoint, error) { return discoverEngine(cfg) },
		Image:    cfg.dockerImage, Network: cfg.dockerNetwork, Cline: cfg.dockerCline, EgressImage: cfg.dockerEgressImage,
		Egress: sandbox.EgressMode(cfg.dockerEgress), EgressAllow: cfg.egressAllow,
		Memory: mem, Pids: cfg.dockerPids, CPUs: cfg.dockerCPUs,
		Needed: needed, CLIVersion: run.ImagePolicyChecks,
	}
}

// k8sChecks are doctor's lines for --isolation kubernetes: the executor of the flags, then its
// own checks (the cluster, the permissions runs need, the egress policy).
func k8sChecks(ctx context.Context, cfg *config) []sandbox.Check {
	e, where, err := newKubernetes(cfg)
	if err != nil {
		return []sandbox.Check{{Name: "kubernetes", Detail: err.Error(), Fix: "pass --k8s-kubeconfig/--k8s-context, or run the server in a pod with a service account"}}
	}
	return e.DoctorChecks(ctx, where)
}
