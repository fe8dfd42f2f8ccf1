// Package config is the server's configuration file: which keys it holds and the flag each one
// sets, reading it (a user's file, and a repository's that may only tighten), and where each
// effective value came from. The flags stay the one definition of every setting (name, default,
// parser, help); a key of the file is applied as if its flag had been given, unless the command
// line gave that flag itself, so a flag always overrides the file.
package config

// A Key is one setting of the file: its place in the file (section.name), the flag it sets, and
// whether --help shows that flag (what a client's server entry sets; the rest are set once per
// machine in the file, and documented in its reference, docs/configuration.md).
type Key struct {
	Name string // "docker.memory"
	Flag string // "docker-memory"
	Help bool
	// Repeated keys take an array in the file (each element one use of the flag).
	Repeated bool
}

// Egress keys are one shape for both container executors: [egress] mode, allow and dns set the
// Docker or the Kubernetes flags, whichever executor the server runs containers on.
const (
	EgressMode  = "egress.mode"
	EgressAllow = "egress.allow"
	EgressDNS   = "egress.dns"
)

// Keys are every key of the file, in the order of its reference.
var Keys = []Key{
	{Name: "cline.path", Flag: "cline", Help: true},
	{Name: "cline.protocol", Flag: "cline-protocol", Help: true},
	{Name: "cline.analysis-policy", Flag: "analysis-policy", Help: true},
	{Name: "cline.stop-grace", Flag: "stop-grace"},
	{Name: "cline.ask-commands", Flag: "ask-commands"},
	{Name: "cline.ask-timeout", Flag: "ask-timeout"},

	{Name: "isolation.floor", Flag: "isolation", Help: true},
	{Name: "isolation.retry", Flag: "retry-isolation", Help: true},

	{Name: EgressMode},
	{Name: EgressAllow, Repeated: true},
	{Name: EgressDNS},

	{Name: "docker.host", Flag: "docker-host", Help: true},
	{Name: "docker.image", Flag: "docker-image", Help: true},
	{Name: "docker.env", Flag: "docker-env", Help: true, Repeated: true},
	{Name: "docker.mounts", Flag: "docker-mounts"},
	{Name: "docker.cline", Flag: "docker-cline"},
	{Name: "docker.memory", Flag: "docker-memory"},
	{Name: "docker.pids", Flag: "docker-pids"},
	{Name: "docker.cpus", Flag: "docker-cpus"},
	{Name: "docker.network", Flag: "docker-network"},
	{Name: "docker.egress-image", Flag: "docker-egress-image"},
	{Name: "docker.warm", Flag: "docker-warm"},

	{Name: "kubernetes.context", Flag: "k8s-context", Help: true},
	{Name: "kubernetes.namespace", Flag: "k8s-namespace", Help: true},
	{Name: "kubernetes.image", Flag: "k8s-image", Help: true},
	{Name: "kubernetes.kubeconfig", Flag: "k8s-kubeconfig"},
	{Name: "kubernetes.cpu", Flag: "k8s-cpu"},
	{Name: "kubernetes.memory", Flag: "k8s-memory"},
	{Name: "kubernetes.runtime-class", Flag: "k8s-runtime-class"},
	{Name: "kubernetes.warm", Flag: "k8s-warm"},
	{Name: "kubernetes.warm-backend", Flag: "k8s-warm-backend"},

	{Name: "limits.max-concurrent", Flag: "max-concurrent", Help: true},
	{Name: "limits.max-cost-usd", Flag: "max-cost-usd", Help: true},
	{Name: "limits.max-iterations", Flag: "max-iterations", Help: true},
	{Name: "limits.result-max-chars", Flag: "result-max-chars", Help: true},

	{Name: "workspace.root", Flag: "worktree-root"},
	{Name: "workspace.pool", Flag: "workspace-pool"},
	{Name: "workspace.pool-idle", Flag: "workspace-pool-idle"},

	{Name: "sessions.dir", Flag: "sessions-dir"},
	{Name: "sessions.idle", Flag: "session-idle"},
	{Name: "sessions.warm-agents", Flag: "warm-agents"},
	{Name: "sessions.warm-idle", Flag: "warm-idle"},

	{Name: "jobs.dir", Flag: "jobs-dir"},
	{Name: "jobs.max", Flag: "job-max"},
	{Name: "jobs.idle", Flag: "job-idle"},
	{Name: "jobs.keep", Flag: "job-keep"},

	{Name: "log.level", Flag: "log-level", Help: true},
	{Name: "log.file", Flag: "log-file", Help: true},

	{Name: "service.http", Flag: "http"},
	{Name: "service.tokens", Flag: "http-tokens"},
	{Name: "service.repo-cache", Flag: "http-repo-cache"},
	{Name: "service.repo-hosts", Flag: "http-repo-hosts"},
	{Name: "service.max-bundle", Flag: "http-max-bundle"},
	{Name: "service.metrics-tenants", Flag: "http-metrics-tenants"},
}

// egressFlags are the flags the [egress] keys set for each container executor.
var egressFlags = map[string]map[string]string{
	"docker":     {EgressMode: "docker-egress", EgressAllow: "egress-allow"},
	"kubernetes": {EgressMode: "k8s-egress", EgressAllow: "k8s-egress-allow", EgressDNS: "k8s-egress-dns"},
}

// EgressFlags lists every flag an [egress] key may set, for the reference and --help.
func EgressFlags() []string {
	return []string{"docker-egress", "egress-allow", "k8s-egress", "k8s-egress-allow", "k8s-egress-dns"}
}

// KeyOf returns the key that sets flag, and whether there is one.
func KeyOf(flag string) (Key, bool) {
	for _, k := range Keys {
		if k.Flag == flag {
			return k, true
		}
	}
	for _, f := range egressFlags {
		for name, fl := range f {
			if fl == flag {
				return Key{Name: name, Flag: fl, Repeated: name == EgressAllow, Help: fl == "docker-egress" || fl == "egress-allow"}, true
			}
		}
	}
	return Key{}, false
}

// HelpFlags are the flags --help shows: the ones a client's server entry sets.
func HelpFlags() []string {
	var out []string
	for _, k := range Keys {
		if k.Help {
			out = append(out, k.Flag)
		}
	}
	return append(out, "docker-egress", "egress-allow", FileFlag)
}

// FileFlag names the configuration file on the command line (or "none": no file).
const FileFlag = "config-file"
