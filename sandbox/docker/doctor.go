package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/engine"
)

// Doctor is what doctor's Docker lines probe: the executor a call gets, the engine discovery
// chose, and the settings both were made from.
type Doctor struct {
	// New is the executor of the server's settings, as a call gets it (it does not contact the
	// engine); its error is reported as it is.
	New func() (*Executor, error)
	// Endpoint is the engine that discovery chose (--docker-host, DOCKER_HOST, the context, …).
	Endpoint func() (engine.Endpoint, error)

	Image, Network, Cline, EgressImage string
	Egress                             sandbox.EgressMode // resolved: provider, none or open
	EgressAllow                        []string
	Memory, Pids                       int64
	CPUs                               float64

	// Needed: Docker isolation is configured, so a failure is required, not a warning.
	Needed bool
	// CLIVersion, when set, is told the version of the CLI found in the image and returns lines
	// to print after it (the analysis policy's verdict on that version).
	CLIVersion func(image, version string) []sandbox.Check
}

// Checks are doctor's Docker lines: the engine and image, which engine and how it is used, and,
// when the engine answers, the network, the CLI, the shell and git inside the image and the
// egress policy.
func (d Doctor) Checks(ctx context.Context) []sandbox.Check {
	eng := d.engineImageCheck(ctx)
	out := []sandbox.Check{eng, d.EngineCheck(ctx)}
	if eng.OK {
		out = append(out, d.imageChecks(ctx)...)
		out = append(out, d.egressCheck(ctx))
	}
	return out
}

// engineImageCheck reports the engine and the configured image; it is required only when Docker
// isolation is configured.
func (d Doctor) engineImageCheck(ctx context.Context) sandbox.Check {
	c := sandbox.Check{Name: "docker", Optional: !d.Needed}
	suffix := ""
	if !d.Needed {
		suffix = " (only needed for --isolation docker or calls with isolation:\"docker\")"
	}
	ex, err := d.New()
	if err != nil {
		c.Detail, c.Fix = err.Error()+suffix, "check the --docker-* flags, DOCKER_HOST and the Docker context"
		return c
	}
	defer ex.Close()
	if err := ex.Ping(ctx); err != nil {
		c.Detail, c.Fix = err.Error()+suffix, HintEngine
		return c
	}
	ok, err := ex.ImagePresent(ctx)
	switch {
	case err != nil:
		c.Detail, c.Fix = fmt.Sprintf("image %s: %v%s", d.Image, err, suffix), HintImage
	case !ok:
		c.Detail, c.Fix = fmt.Sprintf("engine reachable, but image %s is missing%s", d.Image, suffix), HintImage
	default:
		c.OK = true
		c.Detail = fmt.Sprintf("engine reachable, image %s present, network %s", d.Image, d.Network)
	}
	return c
}

// EngineCheck is doctor's line on the engine: which one was chosen and why, what it is (Docker
// or Podman, rootless or not), which user runs Cline, and whether the checkout is bind-mounted or
// copied in and out.
func (d Doctor) EngineCheck(ctx context.Context) sandbox.Check {
	c := sandbox.Check{Name: "docker engine", Optional: !d.Needed}
	ep, err := d.Endpoint()
	if err != nil {
		c.Detail, c.Fix = err.Error(), "fix or switch the Docker context (docker context ls / docker context use default), or pass --docker-host"
		return c
	}
	ex, err := d.New()
	if err != nil {
		c.Detail = fmt.Sprintf("%s (from %s): %v", ep.Host, ep.Source, err)
		return c
	}
	defer ex.Close()
	e, err := ex.Describe(ctx)
	if err != nil {
		c.Detail, c.Fix = fmt.Sprintf("%s (from %s): %v", ep.Host, ep.Source, err), HintEngine
		return c
	}
	c.OK = true
	c.Detail = DescribeEngine(e)
	return c
}

// DescribeEngine is one line a user can act on.
func DescribeEngine(d Engine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (from %s)", d.Endpoint.Host, d.Endpoint.Source)
	if d.Endpoint.TLS != nil {
		b.WriteString(", TLS")
		if !d.Endpoint.TLS.Verify {
			b.WriteString(" without verification")
		}
	}
	fmt.Fprintf(&b, "; %s %s", d.Product, d.Version)
	if d.Rootless {
		b.WriteString(", rootless")
	}
	if d.User != "" {
		fmt.Fprintf(&b, "; runs Cline as %s", d.User)
	}
	if d.Mounts != "" {
		fmt.Fprintf(&b, "; mounts: %s — %s", d.Mounts, d.MountsWhy)
	} else {
		fmt.Fprintf(&b, "; mounts: %s", d.MountsWhy)
	}
	return b.String()
}

// egressCheck reports the network policy of Docker runs: provider needs the proxy's image;
// open is a warning (the containers reach whatever the network reaches).
func (d Doctor) egressCheck(ctx context.Context) sandbox.Check {
	c := sandbox.Check{Name: "docker egress", Optional: !d.Needed}
	switch d.Egress {
	case sandbox.EgressNone:
		c.OK, c.Detail = true, "none: containers have no network"
		return c
	case sandbox.EgressOpen:
		c.Optional = true
		c.Detail = fmt.Sprintf("open: containers reach whatever the %s network reaches; a prompt injection in the analysed code can send it anywhere", d.Network)
		c.Fix = "drop --docker-egress open (the default, provider, lets runs reach only their provider's API)"
		return c
	}
	ex, err := d.New()
	if err != nil {
		c.Detail, c.Fix = err.Error(), "check the --docker-* flags"
		return c
	}
	defer ex.Close()
	ok, err := ex.EgressImagePresent(ctx)
	if err == nil && ok {
		err = ex.CheckEgressImage(ctx)
	}
	switch {
	case err != nil:
		c.Detail, c.Fix = explain(err, HintEgressImage)
		c.Detail = "provider: " + c.Detail
	case !ok:
		c.Detail, c.Fix = fmt.Sprintf("provider: the egress proxy image %s is missing", d.EgressImage), HintEgressImage
	default:
		allow := "nothing else"
		if len(d.EgressAllow) > 0 {
			allow = strings.Join(d.EgressAllow, ", ") + ", each named in the result when a run uses it"
		}
		c.OK = true
		c.Detail = fmt.Sprintf("provider: each run reaches only its provider's API (and %s) through the proxy %s, over a unix socket in its volume; runs have no network (not the host, not each other), only the proxy reaches out, through %s", allow, d.EgressImage, d.Network)
	}
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
