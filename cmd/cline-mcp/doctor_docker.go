package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/docker"
)

// imageProbeTimeout bounds one container the doctor starts.
const imageProbeTimeout = 90 * time.Second

// machineIDScript is the command the real CLI runs through /bin/sh for its machine id (observed
// with strace on 3.0.65); the doctor runs it through /bin/bash, which the CLI runs commands with.
const machineIDScript = `/bin/sh -c "( cat /var/lib/dbus/machine-id /etc/machine-id 2> /dev/null || hostname ) | head -n 1 || :"`

// imageChecks run after the engine and the image were found: the network (--docker-network
// must exist), `<docker-cline> --version` inside the image, `bash -c` running the CLI's
// machine-id command through /bin/sh, and git. The containers get the same hardening as a
// call's, without a network.
func imageChecks(ctx context.Context, cfg *config, needed bool) []check {
	optional := !needed
	out := []check{networkCheck(ctx, cfg, optional)}
	mem, err := parseBytes(cfg.dockerMemory)
	if err != nil {
		return out
	}
	ex, err := probeExecutor(cfg, docker.WithImage(cfg.dockerImage), docker.WithNetwork("none"), docker.WithMemory(mem),
		docker.WithPidsLimit(cfg.dockerPids), docker.WithCPUs(cfg.dockerCPUs))
	if err != nil {
		return out
	}
	defer ex.Close()

	c := check{name: "cline in image", optional: optional}
	stdout, stderr, err := probeImage(ctx, ex, cfg.dockerCline, "--version")
	switch v := strings.TrimSpace(stdout); {
	case err != nil:
		c.detail, c.fix = explain(err, "pass the CLI's path inside the image with --docker-cline, or rebuild the image: make image")
	case v == "":
		c.detail, c.fix = fmt.Sprintf("%s --version printed nothing in %s; stderr: %s", cfg.dockerCline, cfg.dockerImage, lastLine(stderr)), "rebuild the image: make image"
	default:
		c.ok, c.detail = true, fmt.Sprintf("%s --version in %s: %s", cfg.dockerCline, cfg.dockerImage, v)
	}
	out = append(out, c)
	if v := strings.TrimSpace(stdout); c.ok && v != cline.PolicyCLIVersion {
		out = append(out, check{name: "analysis tools", optional: true,
			detail: fmt.Sprintf("the CLI in %s is %s, the tool policy was written for %s: tools it added are not on its deny-list and may be offered to Docker analysis runs", cfg.dockerImage, v, cline.PolicyCLIVersion),
			fix:    fmt.Sprintf("rebuild the image with the pinned CLI (make image CLINE_VERSION=%s), or update cline-mcp", cline.PolicyCLIVersion)})
	}

	c = check{name: "shell in image", optional: optional}
	stdout, stderr, err = probeImage(ctx, ex, "/bin/bash", "-c", machineIDScript)
	switch {
	case err != nil:
		c.detail, _ = explain(err, "")
		c.fix = "rebuild the image (make image): Cline runs every command through /bin/bash"
	case strings.TrimSpace(stderr) != "" || strings.TrimSpace(stdout) == "":
		c.detail = fmt.Sprintf("the CLI's machine-id command (/bin/sh with cat, head, hostname) failed in %s: %s", cfg.dockerImage, lastLine(stderr))
		c.fix = "rebuild the image (make image): without sh, cat, head and hostname every run's stderr fills with \"not found\" lines"
	default:
		c.ok, c.detail = true, "/bin/bash and /bin/sh run the CLI's machine-id command (cat, head, hostname)"
	}
	out = append(out, c)

	// git is optional even for docker: without it the CLI still runs, without checkpoints and
	// repository context (the fake image has none).
	c = check{name: "git in image", optional: true}
	if stdout, _, err = probeImage(ctx, ex, "/bin/bash", "-c", "git --version"); err != nil {
		c.detail = "no git in " + cfg.dockerImage + ": Cline cannot take checkpoints or read the repository's history (" + lastLine(err.Error()) + ")"
		c.fix = "rebuild the image (make image)"
	} else {
		c.ok, c.detail = true, strings.TrimSpace(stdout)
	}
	out = append(out, c)
	return out
}

// probeExecutor is an executor for the doctor's own probes, on the engine that discovery chose
// (--docker-host, DOCKER_HOST, the Docker context, …: see discoverEngine), like every other
// check and every call: never the platform's default socket unless discovery chose it.
func probeExecutor(cfg *config, opts ...docker.Option) (*docker.Executor, error) {
	ep, err := discoverEngine(cfg)
	if err != nil {
		return nil, err
	}
	return docker.New(append([]docker.Option{docker.WithEndpoint(ep)}, opts...)...)
}

// probeImage runs one command in a container of ex's image and returns its output; a non-zero
// exit is an error carrying the last stderr line.
func probeImage(ctx context.Context, ex *docker.Executor, path string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(ctx, imageProbeTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	exit, err := ex.Run(ctx, sandbox.Spec{
		Path:   path,
		Args:   args,
		Env:    []string{"HOME=/tmp", "PATH=/usr/local/bin:/usr/bin:/bin", "CLINE_NO_AUTO_UPDATE=1", "CLINE_SESSION_BACKEND_MODE=local"},
		Dir:    "/",
		Tmpfs:  []sandbox.Tmpfs{{Target: "/tmp", SizeMB: 64}},
		Stdout: &stdout,
		Stderr: &stderr,
		Labels: map[string]string{"cline-mcp.doctor": "1"},
	})
	switch {
	case err != nil:
		return "", "", err
	case exit.Stopped:
		return stdout.String(), stderr.String(), fmt.Errorf("%s did not finish within %s", path, imageProbeTimeout)
	case exit.Code != 0:
		return stdout.String(), stderr.String(), fmt.Errorf("%s exited with %d: %s", path, exit.Code, lastLine(stderr.String()))
	}
	return stdout.String(), stderr.String(), nil
}

// networkCheck: --docker-network must name something a run can join. "none" works but leaves
// the real CLI without any provider, so it is a warning.
func networkCheck(ctx context.Context, cfg *config, optional bool) check {
	c := check{name: "docker network", optional: optional}
	ex, err := probeExecutor(cfg, docker.WithImage(cfg.dockerImage), docker.WithNetwork(cfg.dockerNetwork))
	if err != nil {
		c.detail, c.fix = err.Error(), "check --docker-network"
		return c
	}
	defer ex.Close()
	if err := ex.CheckNetwork(ctx); err != nil {
		c.detail, c.fix = explain(err, docker.HintNetwork)
		return c
	}
	if cfg.dockerNetwork == "none" {
		return check{name: "docker network", optional: true,
			detail: "none: the container has no network, so the real Cline CLI cannot reach any provider (it retries for ~62 s, then fails); fine for the fake CLI",
			fix:    "use --docker-network bridge, a network that reaches the provider, or container:<name> of the provider's container"}
	}
	c.ok, c.detail = true, cfg.dockerNetwork+" exists"
	return c
}

// explain splits err into what happened and the fix: a *sandbox.LaunchError's hint, else def.
func explain(err error, def string) (detail, fix string) {
	var le *sandbox.LaunchError
	if errors.As(err, &le) && le.Hint != "" {
		return le.Op + ": " + le.Err.Error(), le.Hint
	}
	return err.Error(), def
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
