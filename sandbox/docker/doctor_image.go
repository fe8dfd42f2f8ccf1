package docker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// imageProbeTimeout bounds one container the doctor starts.
const imageProbeTimeout = 90 * time.Second

// machineIDScript is the command the real CLI runs through /bin/sh for its machine id (observed
// with strace on 3.0.65); the doctor runs it through /bin/bash, which the CLI runs commands with.
const machineIDScript = `/bin/sh -c "( cat /var/lib/dbus/machine-id /etc/machine-id 2> /dev/null || hostname ) | head -n 1 || :"`

// imageChecks run after the engine and the image were found: the network (Network must exist),
// `<Cline> --version` inside the image, `bash -c` running the CLI's machine-id command through
// /bin/sh, and git. The containers get the same hardening as a call's, without a network.
func (d Doctor) imageChecks(ctx context.Context) []sandbox.Check {
	optional := !d.Needed
	out := []sandbox.Check{d.networkCheck(ctx, optional)}
	ex, err := d.probeExecutor(WithImage(d.Image), WithNetwork("none"), WithMemory(d.Memory),
		WithPidsLimit(d.Pids), WithCPUs(d.CPUs))
	if err != nil {
		return out
	}
	defer ex.Close()

	c := sandbox.Check{Name: "cline in image", Optional: optional}
	stdout, stderr, err := probeImage(ctx, ex, d.Cline, "--version")
	switch v := strings.TrimSpace(stdout); {
	case err != nil:
		c.Detail, c.Fix = explain(err, "pass the CLI's path inside the image with --docker-cline, or rebuild the image: make image")
	case v == "":
		c.Detail, c.Fix = fmt.Sprintf("%s --version printed nothing in %s; stderr: %s", d.Cline, d.Image, lastLine(stderr)), "rebuild the image: make image"
	default:
		c.OK, c.Detail = true, fmt.Sprintf("%s --version in %s: %s", d.Cline, d.Image, v)
	}
	out = append(out, c)
	if c.OK && d.CLIVersion != nil {
		out = append(out, d.CLIVersion(d.Image, strings.TrimSpace(stdout))...)
	}

	c = sandbox.Check{Name: "shell in image", Optional: optional}
	stdout, stderr, err = probeImage(ctx, ex, "/bin/bash", "-c", machineIDScript)
	switch {
	case err != nil:
		c.Detail, _ = explain(err, "")
		c.Fix = "rebuild the image (make image): Cline runs every command through /bin/bash"
	case strings.TrimSpace(stderr) != "" || strings.TrimSpace(stdout) == "":
		c.Detail = fmt.Sprintf("the CLI's machine-id command (/bin/sh with cat, head, hostname) failed in %s: %s", d.Image, lastLine(stderr))
		c.Fix = "rebuild the image (make image): without sh, cat, head and hostname every run's stderr fills with \"not found\" lines"
	default:
		c.OK, c.Detail = true, "/bin/bash and /bin/sh run the CLI's machine-id command (cat, head, hostname)"
	}
	out = append(out, c)

	// git is optional even for docker: without it the CLI still runs, without checkpoints and
	// repository context (the fake image has none).
	c = sandbox.Check{Name: "git in image", Optional: true}
	if stdout, _, err = probeImage(ctx, ex, "/bin/bash", "-c", "git --version"); err != nil {
		c.Detail = "no git in " + d.Image + ": Cline cannot take checkpoints or read the repository's history (" + lastLine(err.Error()) + ")"
		c.Fix = "rebuild the image (make image)"
	} else {
		c.OK, c.Detail = true, strings.TrimSpace(stdout)
	}
	out = append(out, c)
	return out
}

// probeExecutor is an executor for the doctor's own probes, on the engine that discovery chose,
// like every other check and every call: never the platform's default socket unless discovery
// chose it.
func (d Doctor) probeExecutor(opts ...Option) (*Executor, error) {
	ep, err := d.Endpoint()
	if err != nil {
		return nil, err
	}
	return New(append([]Option{WithEndpoint(ep)}, opts...)...)
}

// probeImage runs one command in a container of ex's image and returns its output; a non-zero
// exit is an error carrying the last stderr line.
func probeImage(ctx context.Context, ex *Executor, path string, args ...string) (string, string, error) {
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

// networkCheck: Network must name something a run can join. "none" works but leaves the real
// CLI without any provider, so it is a warning.
func (d Doctor) networkCheck(ctx context.Context, optional bool) sandbox.Check {
	c := sandbox.Check{Name: "docker network", Optional: optional}
	ex, err := d.probeExecutor(WithImage(d.Image), WithNetwork(d.Network))
	if err != nil {
		c.Detail, c.Fix = err.Error(), "check --docker-network"
		return c
	}
	defer ex.Close()
	if err := ex.CheckNetwork(ctx); err != nil {
		c.Detail, c.Fix = explain(err, HintNetwork)
		return c
	}
	if d.Network == "none" {
		return sandbox.Check{Name: "docker network", Optional: true,
			Detail: "none: the container has no network, so the real Cline CLI cannot reach any provider (it retries for ~62 s, then fails); fine for the fake CLI",
			Fix:    "use --docker-network bridge, a network that reaches the provider, or container:<name> of the provider's container"}
	}
	c.OK, c.Detail = true, d.Network+" exists"
	return c
}
