package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/config"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// repoTop is the top of the git repository dir is in (the nearest directory upwards that holds a
// .git entry), or "" outside one. Only names are looked at: nothing is run and no link followed.
func repoTop(dir string) string {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return ""
		}
		d = up
	}
}

// repoPolicy reads what the repository of the call's directory asks (config.RepoFileName at its
// top): a policy that may only tighten the server's. A file that cannot be read or says what it
// may not is a failure of the call: the server never runs a call looser than its repository asks.
func (r *Runner) repoPolicy(c Call) (config.Policy, error) {
	dir := c.Cwd
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return config.Policy{}, nil
		}
		dir = wd
	}
	top := repoTop(dir)
	if top == "" {
		return config.Policy{}, nil
	}
	root, err := os.OpenRoot(top)
	if errors.Is(err, fs.ErrNotExist) {
		return config.Policy{}, nil
	}
	if err != nil {
		return config.Policy{}, fmt.Errorf("the repository at %s: %w", top, err)
	}
	defer root.Close()
	p, err := config.ReadRepoPolicy(root)
	if err != nil {
		return config.Policy{}, fmt.Errorf("the repository's policy at %s: %w", top, err)
	}
	if p.Path != "" {
		p.Path = filepath.Join(top, p.Path)
	}
	return p, nil
}

// tighten applies the repository's policy to the call before it is planned: the isolation
// floor, the spend limits, and what its container runs may reach. What the server cannot narrow
// for one call (its egress mode) must already be at least as tight, or the call fails. It returns
// the part of --egress-allow the repository keeps (nil: all of it).
func (k *call) tighten(p config.Policy) (allowOnly *[]string, _ *failure) {
	if p.Path == "" {
		return nil, nil
	}
	if p.Floor != "" && !k.iso.Container() {
		k.iso = k.r.cfg.Container
		k.warnings = append(k.warnings, fmt.Sprintf("%s asks for isolation %s: this call runs in a container", p.Path, p.Floor))
	}
	if c := config.Ceiling(k.MaxCostUSD, p.MaxCostUSD); c != k.MaxCostUSD {
		k.MaxCostUSD = c
		k.warnings = append(k.warnings, fmt.Sprintf("%s lowers maxCostUsd to %.4f", p.Path, c))
	}
	if n := config.Ceiling(k.MaxIterations, p.MaxIterations); n != k.MaxIterations {
		k.MaxIterations = n
		k.warnings = append(k.warnings, fmt.Sprintf("%s lowers maxIterations to %d", p.Path, n))
	}
	if !k.iso.Container() {
		return nil, nil // egress is a container's; a host run has the host's network
	}
	mode := k.r.cfg.DockerEgress
	if k.r.cfg.Container == sandbox.IsolationKubernetes {
		mode = sandbox.EgressPolicy
	}
	switch {
	case p.Egress == "none" && mode != sandbox.EgressNone:
		return nil, &failure{cline.KindLaunchFailed, fmt.Sprintf("%s asks for egress none; this server's container runs have egress %s (set the server's egress mode to none for this repository)", p.Path, mode)}
	case p.Egress == "provider" && mode == sandbox.EgressOpen:
		return nil, &failure{cline.KindLaunchFailed, fmt.Sprintf("%s asks for egress provider; this server's container runs have egress open", p.Path)}
	case p.AllowSet && mode == sandbox.EgressPolicy:
		return nil, &failure{cline.KindLaunchFailed, fmt.Sprintf("%s narrows egress.allow; a Kubernetes run's NetworkPolicy takes the server's list only", p.Path)}
	}
	if p.AllowSet {
		kept, refused := p.AllowWithin(k.r.cfg.EgressAllow)
		allowOnly = &kept
		if len(refused) > 0 {
			k.warnings = append(k.warnings, fmt.Sprintf("%s names endpoints this server does not allow (not granted): %v", p.Path, refused))
		}
	}
	return allowOnly, nil
}

// egressAllow is what the server allows this call's container runs besides their provider: its
// --egress-allow list, or the part of it the repository's policy keeps.
func (p *prep) egressAllow() []string {
	if p.allowOnly != nil {
		return *p.allowOnly
	}
	return p.r.cfg.EgressAllow
}
