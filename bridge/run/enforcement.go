package run

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Enforcement is what was enforced for a call's last attempt, from what the executor reports it
// asked of the engine (sandbox.ContainerReport) and the egress proxy's record, never from the
// server's flags alone: a user or a CI job can assert it instead of trusting a flag.
type Enforcement struct {
	// Isolation is where the attempt ran: host (no container) or docker.
	Isolation sandbox.Isolation `json:"isolation"`
	// Container is what the container was created with; absent on the host and when no
	// container was created (the attempt failed before).
	Container *ContainerEnforcement `json:"container,omitempty"`
	// Egress is the container's egress mode (none, provider, open).
	Egress sandbox.EgressMode `json:"egress,omitempty"`
	// AllowedEndpoints are the endpoints the egress proxy let this run reach (its provider's and
	// the server's --egress-allow; a pod's: what its NetworkPolicy allows); RefusedEndpoints those
	// the proxy refused (the CLI's telemetry too; a pod's sidecar: provider requests it lent no key).
	AllowedEndpoints []string `json:"allowedEndpoints,omitempty"`
	RefusedEndpoints []string `json:"refusedEndpoints,omitempty"`
	// CredentialOutside is true when the provider's credential never entered the run's
	// environment or files: the egress proxy added it to the run's provider requests, and the
	// container had a placeholder. Otherwise CredentialInside says why the container got its
	// one provider's credential (least privilege); a host run uses the user's own settings.
	CredentialOutside bool   `json:"credentialOutside"`
	CredentialInside  string `json:"credentialInside,omitempty"`
	// CredentialVariables name the credential-looking variables of the user's (--docker-env) the
	// container's environment held with a value other than the run's placeholder (names only);
	// any makes CredentialOutside false.
	CredentialVariables []string `json:"credentialVariables,omitempty"`
	// Summary is the same in one line of text (the result's text says "Enforced: " and it).
	Summary string `json:"summary"`
}

// ContainerEnforcement is sandbox.ContainerReport in the result's words.
type ContainerEnforcement struct {
	Engine          string             `json:"engine"`
	Image           string             `json:"image"`
	ImageID         string             `json:"imageId"`
	CLI             string             `json:"cli,omitempty"`
	User            string             `json:"user"`
	UsernsMode      string             `json:"usernsMode,omitempty"`
	ReadOnlyRoot    bool               `json:"readOnlyRoot"`
	CapDrop         []string           `json:"capDrop"`
	NoNewPrivileges bool               `json:"noNewPrivileges"`
	Privileged      bool               `json:"privileged"`
	Network         string             `json:"network"`
	Mounts          []MountEnforcement `json:"mounts"`
	MemoryBytes     int64              `json:"memoryBytes,omitempty"`
	PidsLimit       int64              `json:"pidsLimit,omitempty"`
}

// MountEnforcement is one mount of the container: where, read-only or not, and its kind
// (bind, copy or tmpfs).
type MountEnforcement struct {
	Target   string `json:"target"`
	ReadOnly bool   `json:"readOnly"`
	Kind     string `json:"kind"`
}

// enforcementOf is what an attempt in iso had enforced; spec.Egress are the provider endpoints
// the attempt was given (provider mode).
func (p *prep) enforcementOf(iso sandbox.Isolation, spec sandbox.Spec, x sandbox.Exit, credNote string) *Enforcement {
	e := &Enforcement{Isolation: iso}
	if !iso.Container() {
		e.Summary = "host: no container; Cline ran as this server's user, with its files and network"
		return e
	}
	c := x.Container
	if c == nil {
		e.Summary = "docker: no container was created"
		return e
	}
	e.Container = containerEnforcement(c)
	e.Egress = c.Egress
	e.CredentialOutside = c.CredentialOutside
	if !e.CredentialOutside {
		e.CredentialInside = credNote
	}
	if names := p.credentialVariables(spec.Env); len(names) > 0 {
		e.CredentialVariables = names
		if e.CredentialOutside { // the proxy held the provider's key, not these
			e.CredentialOutside = false
			e.CredentialInside = "the proxy held the provider's key, but the container's environment held " + strings.Join(names, ", ") +
				" with a value of yours that the proxy does not stand in for"
		}
	}
	if c.Egress == sandbox.EgressPolicy {
		// Kubernetes: what the run's NetworkPolicy allows, as the API server stored it.
		e.AllowedEndpoints = c.Allowed
	}
	if c.Egress == sandbox.EgressProvider {
		e.AllowedEndpoints = slices.Concat(spec.Egress, p.egressAllow())
	}
	if x.Egress != nil && (c.Egress == sandbox.EgressProvider || c.Egress == sandbox.EgressPolicy) {
		// What the egress proxy refused (a pod's: its sidecar's, for the provider alone).
		for _, r := range x.Egress.Refused {
			e.RefusedEndpoints = append(e.RefusedEndpoints, r.Target)
		}
	}
	e.Summary = summary(e)
	return e
}

func containerEnforcement(c *sandbox.ContainerReport) *ContainerEnforcement {
	ce := &ContainerEnforcement{
		Engine: c.Engine, Image: c.Image, ImageID: c.ImageID, CLI: c.CLI, User: c.User,
		UsernsMode: c.UsernsMode, ReadOnlyRoot: c.ReadOnlyRoot, CapDrop: c.CapDrop,
		NoNewPrivileges: c.NoNewPrivileges, Privileged: c.Privileged, Network: c.Network,
		MemoryBytes: c.MemoryBytes, PidsLimit: c.PidsLimit, Mounts: []MountEnforcement{},
	}
	if ce.CapDrop == nil {
		ce.CapDrop = []string{}
	}
	for _, m := range c.Mounts {
		ce.Mounts = append(ce.Mounts, MountEnforcement{Target: m.Target, ReadOnly: m.ReadOnly, Kind: m.Kind})
	}
	return ce
}

// summary is the one line of text of a container's enforcement.
func summary(e *Enforcement) string {
	c := e.Container
	parts := []string{fmt.Sprintf("%s container of %s", c.Engine, c.Image)}
	if c.CLI != "" {
		parts[0] += " (" + c.CLI + ")"
	}
	parts = append(parts, "user "+c.User)
	if c.ReadOnlyRoot {
		parts = append(parts, "read-only root")
	}
	if len(c.CapDrop) > 0 {
		parts = append(parts, "capabilities dropped: "+strings.Join(c.CapDrop, ","))
	}
	if c.NoNewPrivileges {
		parts = append(parts, "no-new-privileges")
	}
	if c.Privileged {
		parts = append(parts, "PRIVILEGED")
	}
	var writable []string
	for _, m := range c.Mounts {
		if !m.ReadOnly && m.Kind != "tmpfs" {
			writable = append(writable, m.Target)
		}
	}
	parts = append(parts, "writable mounts: "+orNothing(writable))
	net := "network " + c.Network
	switch e.Egress {
	case sandbox.EgressProvider:
		net += ", egress only through the proxy to " + orNothing(e.AllowedEndpoints)
		if n := len(e.RefusedEndpoints); n > 0 {
			net += fmt.Sprintf(" (%d refused)", n)
		}
	case sandbox.EgressOpen:
		net += ", egress open"
	case sandbox.EgressPolicy:
		net += ", egress only where its NetworkPolicy allows: " + orNothing(e.AllowedEndpoints)
	}
	parts = append(parts, net)
	switch {
	case len(e.CredentialVariables) > 0:
		parts = append(parts, "credentials were inside the container ("+e.CredentialInside+"; variables of yours passed with --docker-env: "+strings.Join(e.CredentialVariables, ", ")+")")
	case e.CredentialOutside:
		parts = append(parts, "the provider's credential stayed outside (the proxy added it; the container had a placeholder)")
	case e.CredentialInside != "":
		parts = append(parts, "the provider's credential was inside the container (that provider's only: "+e.CredentialInside+")")
	default:
		parts = append(parts, "the provider's credential was inside the container (that provider's only)")
	}
	return strings.Join(parts, "; ")
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
