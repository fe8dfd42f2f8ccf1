package sandbox

import (
	"fmt"
	"strings"
)

// EgressMode is the network policy of container runs. The zero value means "decide from the
// network" (ResolveEgressMode).
type EgressMode string

const (
	// EgressProvider: the run container has no network; its only way out is the executor's
	// egress proxy, which lets it reach exactly its provider's endpoints plus an allow-list.
	EgressProvider EgressMode = "provider"
	// EgressNone: no network at all.
	EgressNone EgressMode = "none"
	// EgressOpen: the container joins the executor's network as it is.
	EgressOpen EgressMode = "open"
	// EgressPolicy: the run reaches what a policy of its orchestrator allows (a Kubernetes pod's
	// NetworkPolicy); ContainerReport.Allowed says what, as the policy was stored. Not a Docker
	// mode.
	EgressPolicy EgressMode = "policy"
)

// EgressModes lists every EgressMode, strictest first.
var EgressModes = []EgressMode{EgressNone, EgressProvider, EgressOpen}

// ResolveEgressMode checks mode (a name, or "" for the default) against the executor's network
// and whether an allow-list was given. Unset, it is provider, or none when the network is none.
// A container:<name> or host network shares a namespace the proxy cannot guard: it must be
// asked for with open. Contradictions are errors, never silently resolved. This is the one
// place the modes' names and defaults are decided; its errors name the server's flags
// (--docker-egress, --docker-network, --egress-allow), which is where users choose them.
func ResolveEgressMode(mode, network string, allow bool) (EgressMode, error) {
	shared := network == "host" || strings.HasPrefix(network, "container:")
	m := EgressMode(mode)
	if m == "" {
		switch {
		case network == "none":
			m = EgressNone
		case shared:
			return "", fmt.Errorf("--docker-network %s shares a network namespace the egress proxy cannot guard: add --docker-egress open to run that way (the containers then reach whatever that namespace reaches)", network)
		default:
			m = EgressProvider
		}
	}
	switch m {
	case EgressProvider:
		if network == "none" || shared {
			return "", fmt.Errorf("--docker-egress provider needs --docker-network bridge or a named network for the proxy's way out, not %s", network)
		}
	case EgressNone:
		if network != "none" && network != "bridge" {
			return "", fmt.Errorf("--docker-egress none gives containers no network; drop --docker-network %s", network)
		}
	case EgressOpen:
	default:
		return "", fmt.Errorf("--docker-egress must be provider, none or open, not %q", mode)
	}
	if allow && m != EgressProvider {
		return "", fmt.Errorf("--egress-allow applies to --docker-egress provider, not %s", m)
	}
	return m, nil
}
