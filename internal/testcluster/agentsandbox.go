package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// AgentSandboxVersion is the kubernetes-sigs/agent-sandbox release prepare builds (its
// controller, from the Go module proxy) and whose CRDs it keeps beside the binaries.
const AgentSandboxVersion = "v1.0.1"

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// asb is the agent-sandbox controller the test binary started (one cluster per binary).
var asb struct {
	mu  sync.Mutex
	cmd *exec.Cmd
}

// AgentSandbox installs agent-sandbox on the cluster when it is not: its four CRDs (Sandbox,
// SandboxTemplate, SandboxClaim, SandboxWarmPool), then its controller with the extensions
// controllers, as a process in the cluster's network namespace with the admin kubeconfig (as
// kube-router). The controller lives until RemoveAgentSandbox or the cluster's teardown (which
// kills what runs in the namespace). It skips (fails under CI=true) when prepare did not build it.
func (c *Cluster) AgentSandbox(t testing.TB) {
	t.Helper()
	bin, crds := filepath.Join(c.Dir, "bin", "agent-sandbox-controller"), filepath.Join(c.Dir, "agent-sandbox", "crds")
	v, _ := os.ReadFile(filepath.Join(c.Dir, "bin", ".agent-sandbox-version"))
	if strings.TrimSpace(string(v)) != AgentSandboxVersion {
		msg := fmt.Sprintf("agent-sandbox %s is not built in %s: run `bash internal/testcluster/scripts/cluster.sh prepare` as root", AgentSandboxVersion, filepath.Join(c.Dir, "bin"))
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip("!!! SKIPPED: " + msg)
	}
	asb.mu.Lock()
	defer asb.mu.Unlock()
	if asb.cmd != nil {
		return
	}
	begin := time.Now()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := applyCRDs(dyn, crds); err != nil {
		t.Fatalf("agent-sandbox CRDs: %v", err)
	}
	logf, err := os.OpenFile(filepath.Join(c.Dir, "cluster", "logs", "agent-sandbox.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command("nsenter", "--net=/run/netns/"+c.Netns, "--", bin, "--extensions", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--enable-warm-pool-eviction=false")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Dir, "cluster", "admin.kubeconfig"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = ownGroup()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start agent-sandbox-controller: %v", err)
	}
	asb.cmd = cmd
	t.Logf("agent-sandbox %s: CRDs established and its controller started in %v", AgentSandboxVersion, time.Since(begin).Round(time.Millisecond))
	// down.sh stops it by this pid's process group, like the components up.sh starts.
	_ = os.WriteFile(filepath.Join(c.Dir, "cluster", "run", "agent-sandbox.pid"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
}

// RemoveAgentSandbox stops the controller and deletes agent-sandbox's CRDs (and with them every
// object of theirs), for a test of a cluster without agent-sandbox. A later AgentSandbox installs
// it again.
func (c *Cluster) RemoveAgentSandbox(t testing.TB) {
	t.Helper()
	asb.mu.Lock()
	defer asb.mu.Unlock()
	stopAgentSandbox()
	dyn, err := dynamic.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := dyn.Resource(crdGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var served []schema.GroupVersionResource
	for _, crd := range list.Items {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); strings.HasSuffix(g, "agents.x-k8s.io") {
			names = append(names, crd.GetName())
			served = append(served, crdResources(crd)...)
			if err := dyn.Resource(crdGVR).Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	for _, n := range names {
		waitGone(t, ctx, "CRD "+n, func() error { _, err := dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{}); return err })
	}
	// The API server serves a deleted CRD's resources a moment longer than the object lives: until
	// then a create is refused "while custom resource definition is terminating". Gone means a
	// list of each resource is not found.
	for _, r := range served {
		waitGone(t, ctx, "resource "+r.String(), func() error {
			_, err := dyn.Resource(r).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		})
	}
}

// crdResources are the resources a CRD serves, one per served version.
func crdResources(crd unstructured.Unstructured) []schema.GroupVersionResource {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	var out []schema.GroupVersionResource
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if name, _ := m["name"].(string); name != "" && m["served"] == true {
			out = append(out, schema.GroupVersionResource{Group: group, Version: name, Resource: plural})
		}
	}
	return out
}

// waitGone polls get until it answers not found (100 ms apart), failing the test when ctx ends
// first.
func waitGone(t testing.TB, ctx context.Context, what string, get func() error) {
	t.Helper()
	for !apierrors.IsNotFound(get()) {
		if ctx.Err() != nil {
			t.Fatalf("%s is still there", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stopAgentSandbox ends the controller's process group (asb.mu held).
func stopAgentSandbox() {
	if asb.cmd == nil {
		return
	}
	signalGroup(asb.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = asb.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		signalGroup(asb.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	asb.cmd = nil
}

// applyCRDs creates (or replaces) the CRDs of dir's YAML files and waits until each is
// Established.
func applyCRDs(dyn dynamic.Interface, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: %v", dir, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crds := dyn.Resource(crdGVR)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(b, &obj); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		u := &unstructured.Unstructured{Object: obj}
		_, err = crds.Create(ctx, u, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			var old *unstructured.Unstructured
			if old, err = crds.Get(ctx, u.GetName(), metav1.GetOptions{}); err == nil {
				u.SetResourceVersion(old.GetResourceVersion())
				_, err = crds.Update(ctx, u, metav1.UpdateOptions{})
			}
		}
		if err != nil {
			return fmt.Errorf("CRD %s: %w", u.GetName(), err)
		}
		for !established(ctx, crds, u.GetName()) {
			if ctx.Err() != nil {
				return fmt.Errorf("CRD %s never became Established", u.GetName())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func established(ctx context.Context, crds dynamic.NamespaceableResourceInterface, name string) bool {
	u, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// AgentSandboxRSS is the resident memory of the agent-sandbox controller the test binary started
// (0 when none runs).
func (c *Cluster) AgentSandboxRSS() int64 {
	asb.mu.Lock()
	defer asb.mu.Unlock()
	if asb.cmd == nil {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", asb.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			var kb int64
			_, _ = fmt.Sscan(f[1], &kb)
			return kb << 10
		}
	}
	return 0
}
