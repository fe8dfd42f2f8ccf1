// Package testcluster gives tests a real single-node Kubernetes cluster: etcd, kube-apiserver
// (its own CA and service-account key), scheduler, controller-manager and a kubelet on a private
// containerd with a CNI bridge, and kube-router's NetworkPolicy controller, all in a network
// namespace of their own (loopback and the pod bridge: nothing listens on the host's network, and
// pods have no route off the namespace). The test binary reaches the API server through a loopback port it forwards into the namespace.
// It is built from the Go module proxy and Debian packages (scripts/cluster.sh prepare: cached
// under the user's cache dir, keyed by version) and started once per test binary (Start); Main
// tears it down, and a watchdog tears it down when the test binary dies without Main (a panic, a
// kill). One cluster runs per machine: test binaries take turns through a file lock.
//
// Without its prerequisites (Linux, root, the built binaries) Start skips loudly, and fails under
// CI=true, where .ci/run provides them.
package testcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Version is the Kubernetes release the cluster runs (v1.37.x: the last to accept cgroup v1 and
// containerd 1.6, which Debian 12 has).
const Version = "v1.37.2"

// Cluster is a running test cluster.
type Cluster struct {
	Dir        string        // the cache dir: binaries, state, logs
	RunDir     string        // sockets and runtime state
	Netns      string        // the network namespace the cluster runs in (ip netns)
	Kubeconfig string        // an admin kubeconfig for this host (the forwarded port); gone after Stop
	UpTime     time.Duration // from starting etcd to a Ready node with its default service account (and kube-router synced)
	// EnforcesNetworkPolicy: kube-router's network-policy controller runs in the cluster's namespace
	// and had completed its first sync when Start returned, so NetworkPolicies (ingress and egress,
	// podSelector, namespaceSelector, ipBlock, ports) are enforced on the pods' traffic, 0.1–0.3 s
	// after each change. A new pod is covered only once kube-router sees its IP, so a dial at its
	// very start may pass (README). False when prepare did not build kube-router (a cache from
	// before it): then policies are accepted by the API server but not enforced, as with the bare
	// CNI bridge. A test of policy enforcement checks it (RequireNetworkPolicy).
	EnforcesNetworkPolicy bool

	cfg      *rest.Config
	fwd      *forwarder
	watchdog *exec.Cmd
	unlock   func()
}

// shared is the test binary's cluster: started by the first Start, torn down by Stop (after
// which a Start starts a new one). A skip or a failed start sticks for the whole binary.
var shared struct {
	mu   sync.Mutex
	c    *Cluster
	skip string
	err  error
}

// Start returns the test binary's cluster, starting it on first use. It skips (fails under
// CI=true) when the cluster cannot run here, and fails when it does not come up. When the test
// fails, the ends of the components' logs are logged.
func Start(t testing.TB) *Cluster {
	t.Helper()
	shared.mu.Lock()
	if shared.c == nil && shared.skip == "" && shared.err == nil {
		shared.c, shared.skip, shared.err = start()
	}
	c, skip, err := shared.c, shared.skip, shared.err
	shared.mu.Unlock()
	if skip != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Kubernetes test cluster is required under CI=true: %s", skip)
		}
		t.Skipf("!!! SKIPPED: no Kubernetes test cluster: %s", skip)
	}
	if err != nil {
		t.Fatalf("the Kubernetes test cluster did not start: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test cluster logs (%s):\n%s", filepath.Join(c.Dir, "cluster", "logs"), c.logTails(15))
		}
	})
	return c
}

// Main runs the tests and then tears the cluster down (when one was started).
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop tears the cluster down; nothing of it keeps running. It is safe to call without a cluster.
func Stop() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	c := shared.c
	if c == nil {
		return
	}
	if c.watchdog != nil && c.watchdog.Process != nil {
		_ = c.watchdog.Process.Kill()
		_ = c.watchdog.Wait()
	}
	asb.mu.Lock()
	stopAgentSandbox()
	asb.mu.Unlock()
	c.fwd.close()
	if out, err := script("down"); err != nil {
		fmt.Fprintf(os.Stderr, "testcluster: down: %v\n%s\n", err, out)
	}
	c.unlock()
	shared.c = nil
}

// RequireNetworkPolicy skips the test (fails it under CI=true) unless the cluster enforces
// NetworkPolicy (EnforcesNetworkPolicy).
func (c *Cluster) RequireNetworkPolicy(t testing.TB) {
	t.Helper()
	if c.EnforcesNetworkPolicy {
		return
	}
	msg := fmt.Sprintf("the test cluster does not enforce NetworkPolicy: kube-router is not built in %s: run `bash internal/testcluster/scripts/cluster.sh prepare` as root", filepath.Join(c.Dir, "bin"))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip("!!! SKIPPED: " + msg)
}

// RESTConfig is the admin's client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.cfg) }

// ImportDockerImage copies an image of the local Docker engine into the cluster's containerd, for
// pods with imagePullPolicy: Never.
func (c *Cluster) ImportDockerImage(t testing.TB, ref string) {
	t.Helper()
	tar := filepath.Join(t.TempDir(), "image.tar")
	if out, err := exec.Command("docker", "save", "-o", tar, ref).CombinedOutput(); err != nil {
		t.Fatalf("docker save %s: %v\n%s", ref, err, out)
	}
	c.ImportArchive(t, tar)
}

// ImportArchive imports a docker-archive tar into the cluster's containerd.
func (c *Cluster) ImportArchive(t testing.TB, tarPath string) {
	t.Helper()
	out, err := exec.Command("ctr", "-a", filepath.Join(c.RunDir, "containerd.sock"), "-n", "k8s.io",
		"images", "import", "--no-unpack=false", tarPath).CombinedOutput()
	if err != nil {
		t.Fatalf("import %s into the cluster: %v\n%s", tarPath, err, out)
	}
}

// LogTail is the end of a component's log: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, containerd, kubelet or kube-router.
func (c *Cluster) LogTail(component string, n int) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "cluster", "logs", component+".log"))
	lines := strings.Split(string(b), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func (c *Cluster) logTails(n int) string {
	var b strings.Builder
	for _, comp := range []string{"kubelet", "containerd", "kube-apiserver", "kube-scheduler", "kube-controller-manager", "etcd", "kube-router"} {
		fmt.Fprintf(&b, "--- %s\n%s\n", comp, c.LogTail(comp, n))
	}
	return b.String()
}

func start() (*Cluster, string, error) {
	if runtime.GOOS != "linux" {
		return nil, "it runs only on Linux", nil
	}
	if os.Geteuid() != 0 {
		return nil, "it needs root (its own containerd and kubelet)", nil
	}
	dir, run := dirs()
	if !built(dir) {
		if os.Getenv("CLINE_MCP_K8S_BUILD") == "" {
			return nil, fmt.Sprintf("Kubernetes %s is not built in %s: run `bash internal/testcluster/scripts/cluster.sh prepare` as root (apt packages and a build of about 7–9 minutes cold, cached after), or set CLINE_MCP_K8S_BUILD=1 to let the tests run it", Version, dir), nil
		}
		if out, err := script("prepare"); err != nil {
			return nil, "", fmt.Errorf("prepare: %w\n%s", err, tail(out))
		}
	}
	unlock, lock, err := lockCluster(run)
	if err != nil {
		return nil, "", fmt.Errorf("lock the cluster: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			unlock()
		}
	}()
	_, _ = script("down") // what a killed earlier run left
	c := &Cluster{Dir: dir, RunDir: run, Netns: filepath.Base(run), Kubeconfig: filepath.Join(run, "host.kubeconfig"), unlock: unlock}
	begin := time.Now()
	if out, err := script("up"); err != nil || bytes.Contains(out, []byte("TIMEOUT")) {
		logs := c.logTails(15)
		down, _ := script("down")
		return nil, "", fmt.Errorf("up (%v): %v\n%s\n%s\n%s", time.Since(begin).Round(time.Millisecond), err, tail(out), logs, tail(down))
	}
	if err := c.connect(); err != nil {
		_, _ = script("down")
		return nil, "", err
	}
	c.UpTime = time.Since(begin)
	_, nperr := os.Stat(filepath.Join(run, "networkpolicy")) // written by up.sh once kube-router synced
	c.EnforcesNetworkPolicy = nperr == nil
	c.watchdog = watchdog(lock)
	ok = true
	return c, "", nil
}

// connect forwards a host port to the API server in the namespace and writes the host's
// kubeconfig: the cluster's admin kubeconfig with that port.
func (c *Cluster) connect() error {
	admin := filepath.Join(c.Dir, "cluster", "admin.kubeconfig")
	kc, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		return err
	}
	fwd, err := forward(filepath.Join("/run/netns", c.Netns), "127.0.0.1:16443")
	if err != nil {
		return fmt.Errorf("forward to the API server: %w", err)
	}
	for _, cl := range kc.Clusters {
		cl.Server = "https://" + fwd.addr()
	}
	if err := clientcmd.WriteToFile(*kc, c.Kubeconfig); err != nil {
		fwd.close()
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		fwd.close()
		return err
	}
	c.cfg, c.fwd = cfg, fwd
	return nil
}

// watchdog tears the cluster down when this process ends without Stop (a panic, a kill): a
// process of its own session that polls this pid, then takes the cluster's lock (another test
// binary may have started its own cluster meanwhile: it waits for that one to end).
func watchdog(lock string) *exec.Cmd {
	self := strconv.Itoa(os.Getpid())
	cmd := exec.Command("setsid", "bash", "-c", `while kill -0 "$1" 2>/dev/null; do sleep 1; done; exec flock "$3" "$2" down`, "watchdog", self, scriptPath(), lock)
	cmd.Env = scriptEnv()
	if err := cmd.Start(); err != nil {
		return nil
	}
	return cmd
}

func dirs() (dir, run string) {
	dir = os.Getenv("CLUSTER_DIR")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "cline-mcp", "k8s-"+Version)
	}
	run = os.Getenv("CLUSTER_RUN_DIR")
	if run == "" {
		run = "/run/cline-mcp-k8s"
	}
	return dir, run
}

// built: the version stamp prepare writes after a build, the four binaries, the kubeconfigs.
func built(dir string) bool {
	v, err := os.ReadFile(filepath.Join(dir, "bin", ".version"))
	if err != nil || strings.TrimSpace(string(v)) != Version {
		return false
	}
	for _, f := range []string{"bin/kube-apiserver", "bin/kube-controller-manager", "bin/kube-scheduler", "bin/kubelet", "cluster/admin.kubeconfig"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return false
		}
	}
	return true
}

func scriptPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "scripts", "cluster.sh")
}

func scriptEnv() []string {
	dir, run := dirs()
	return append(os.Environ(), "CLUSTER_DIR="+dir, "CLUSTER_RUN_DIR="+run, "K8S_VERSION="+Version)
}

func script(verb string) ([]byte, error) {
	cmd := exec.Command("bash", scriptPath(), verb)
	cmd.Env = scriptEnv()
	return cmd.CombinedOutput()
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}
