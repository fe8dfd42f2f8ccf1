// Package egress is the egress proxy of Docker runs: a small HTTP proxy (CONNECT tunnels and
// absolute-form forwarding) through which a container without a network reaches exactly the
// endpoints its run was granted, and the JSON-lines protocol the server uses to grant and revoke
// runs and to collect what they did.
//
// The proxy runs alone in its own container (cmd/cline-mcp-egress in the FROM scratch image
// images/egress): the only container of a server with a network. It listens on a unix socket
// (SocketPath) in the volume its image declares; run containers (network none) mount that volume
// read-only and start through the forwarder in it, which carries their loopback port
// (ForwardAddr) to the socket. Each run gets a random token; the run's container finds the proxy
// through HTTPS_PROXY/HTTP_PROXY with the token as the user name (http://<token>:x@127.0.0.1:3128),
// which the Cline CLI (a Bun binary) sends as Proxy-Authorization on every CONNECT and forwarded
// request.
//
// Targets and allow-list entries are parsed strictly (match.go: no zones, IPv4-mapped literals,
// percent-encoding, user info or odd names; an IP literal matches only the same IP entry), and
// the proxy resolves names itself and dials only addresses the matching entry may reach
// (addrs.go). A request without a granted token, or for an endpoint outside its run's grant, is
// refused with 403 and a reason, and counted per run; the counts (endpoint, number, reason or
// the entry that allowed it — never a payload) are what Revoke returns.
//
// The package imports only the standard library.
package egress

// Port is where the proxy listens in its container.
const Port = 3128

// Count is how often a run reached (or was refused) one endpoint.
type Count struct {
	Target string `json:"target"`
	Count  int    `json:"count"`
	Reason string `json:"reason,omitempty"` // refusals only
	Rule   string `json:"rule,omitempty"`   // allowed only: the allow-list entry that matched
	// Budget marks refusals of provider requests past the run's allowance (BudgetRefusal).
	Budget bool `json:"budget,omitempty"`
}

// Summary is what a run did through the proxy.
type Summary struct {
	Allowed []Count `json:"allowed,omitempty"`
	Refused []Count `json:"refused,omitempty"`
	// Answers and SpentUSD are what the run's kept credential was used for: successful provider
	// answers, and their tokens priced at the grant's allowance (0 without a cost limit).
	Answers  int     `json:"answers,omitempty"`
	SpentUSD float64 `json:"spentUsd,omitempty"`
}

// Where the proxy and the runs meet (cmd/cline-mcp-egress, images/egress): the proxy's image
// declares VolumeDir a volume holding a copy of the proxy's binary (Forwarder); the proxy
// listens on SocketPath in it. A run container, which has no network, mounts the volume
// read-only and starts through `Forwarder forward -- <program>`, which listens on ForwardAddr
// (the run's own loopback) and carries each connection to the socket.
const (
	VolumeDir   = "/opt/cline-mcp-egress"
	SocketPath  = VolumeDir + "/proxy.sock"
	Forwarder   = VolumeDir + "/cline-mcp-egress"
	ForwardAddr = "127.0.0.1:3128"
)
