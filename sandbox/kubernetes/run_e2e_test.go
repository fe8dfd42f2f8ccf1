//go:build e2e && linux

package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/cline-mcp/cline-mcp/internal/mcpsession"
	"github.com/cline-mcp/cline-mcp/internal/testcluster"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

func TestMain(m *testing.M) { testcluster.Main(m) }

var importOnce sync.Once

// clusterExecutor is an executor on the test cluster, in a namespace of the test's own, with
// the fake CLI's image imported into the node.
func clusterExecutor(t testing.TB) *Executor {
	t.Helper()
	c := testcluster.Start(t)
	importOnce.Do(func() {
		bins, err := mcpsession.Build(t.TempDir())
		if err == nil {
			err = mcpsession.BuildFakeImage(bins)
		}
		if err == nil {
			err = mcpsession.BuildK8sFakeImage()
		}
		if err != nil {
			t.Fatal(err)
		}
		c.ImportDockerImage(t, mcpsession.K8sFakeImage)
	})
	e, err := New(Config{REST: c.RESTConfig(), Namespace: "default", Image: mcpsession.K8sFakeImage, UID: 1000, GID: 1000,
		Instance: "testhost-" + t.Name(), CPU: "500m", Memory: "256Mi", PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	ns, err := e.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cline-mcp-test-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.cfg.Namespace = ns.Name
	t.Cleanup(func() {
		left, _ := e.cs.CoreV1().Pods(ns.Name).List(context.Background(), metav1.ListOptions{})
		if left != nil && len(left.Items) > 0 {
			t.Errorf("pods left behind: %d", len(left.Items))
		}
		pols, _ := e.cs.NetworkingV1().NetworkPolicies(ns.Name).List(context.Background(), metav1.ListOptions{})
		if pols != nil && len(pols.Items) > 0 {
			t.Errorf("network policies left behind: %d", len(pols.Items))
		}
		_ = e.cs.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
		if t.Failed() {
			t.Logf("kubelet:\n%s", c.LogTail("kubelet", 40))
		}
	})
	return e
}

func fakeSpec(work, prompt string) (sandbox.Spec, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return sandbox.Spec{Path: "/usr/local/bin/cline", Args: []string{"--json", "-y", "-c", work, prompt},
		Env: []string{"HOME=/home/cline", "CLINE_DATA_DIR=/home/cline/.cline"}, Dir: work,
		Mounts: []sandbox.Mount{{Source: work, Target: work, Return: sandbox.Return{Tree: true}}},
		Tmpfs:  []sandbox.Tmpfs{{Target: "/home/cline", SizeMB: 64}, {Target: "/tmp", SizeMB: 64}},
		Stdout: &out, Stderr: &errb}, &out, &errb
}

// TestRunInPod: the fake CLI runs in a pod of the real cluster: its JSON stream arrives on stdout
// (stderr apart), it exits 0, the checkout it changed comes back through the hostile-archive
// checks — a modified, a deleted, a created file, and a symbolic link to / kept as a link, never
// followed — and the pod and its policy are gone afterwards.
func TestRunInPod(t *testing.T) {
	e := clusterExecutor(t)
	work := t.TempDir()
	for name, body := range map[string]string{"README.md": "hello\n", "src/a.go": "package a\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(work, 0o777); err != nil {
		t.Fatal(err)
	}
	// Copy in: a link stays a link (never followed into the host's /etc), a FIFO stays out.
	if err := os.Symlink("/etc", filepath.Join(work, "etc-link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(work, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec, out, errb := fakeSpec(work, "Change things fake:attack_leftovers")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	x, err := e.Run(ctx, spec)
	if err != nil {
		t.Fatalf("run: %v (stderr %s)", err, errb)
	}
	t.Logf("a run in a pod took %v (wall %v)", x.Duration, time.Since(start))
	if x.Code != 0 || x.Stopped || !strings.Contains(out.String(), `"type":"run_result"`) {
		t.Errorf("exit %+v, stdout %s, stderr %s", x, out, errb)
	}
	got, _ := os.ReadFile(filepath.Join(work, "README.md"))
	if string(got) != "hello\nchanged by the run\n" {
		t.Errorf("README.md came back as %q", got)
	}
	if _, err := os.Stat(filepath.Join(work, "src/a.go")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("src/a.go was not deleted: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "new_file.txt")); string(b) != "created by the run\n" {
		t.Errorf("new_file.txt: %q", b)
	}
	if l, err := os.Readlink(filepath.Join(work, "etc-link")); err != nil || l != "/etc" {
		t.Errorf("the host's link came back as %q, %v", l, err)
	}
	if fi, err := os.Lstat(filepath.Join(work, "pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("the host's FIFO (never copied in) was touched: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(work, "outside")); err != nil || l != "/" {
		t.Errorf("the planted link came back as %q, %v; want the link itself", l, err)
	}
}

// TestPodAsStored: the pod's hardening and QoS class as the API server stored it, while the run hangs; then
// cancelling the run's context deletes the pod (Stopped) and nothing is left.
func TestPodAsStored(t *testing.T) {
	e := clusterExecutor(t)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	spec, _, _ := fakeSpec(work, "Wait fake:hang")
	spec.Mounts[0].ReadOnly, spec.Mounts[0].Return = true, sandbox.Return{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan sandbox.Exit, 1)
	go func() {
		x, err := e.Run(ctx, spec)
		if err != nil {
			t.Errorf("run: %v", err)
		}
		done <- x
	}()
	var pod *corev1.Pod
	for i := 0; i < 600; i++ {
		list, _ := e.cs.CoreV1().Pods(e.cfg.Namespace).List(context.Background(), metav1.ListOptions{})
		if list != nil && len(list.Items) == 1 && started(&list.Items[0], mainName) {
			pod = &list.Items[0]
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pod == nil {
		cancel()
		t.Fatal("the run's pod never started")
	}
	ps := pod.Spec
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("stored pod's QoS class %q, want Guaranteed (the fill, the CLI's container and the keeper bounded)", pod.Status.QOSClass)
	}
	if *ps.AutomountServiceAccountToken || *ps.SecurityContext.RunAsUser != 1000 || !*ps.SecurityContext.RunAsNonRoot ||
		ps.SecurityContext.SeccompProfile == nil || ps.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("stored pod security: %+v", ps.SecurityContext)
	}
	for _, c := range append(ps.InitContainers, ps.Containers...) {
		sc := c.SecurityContext
		if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
			t.Errorf("stored container %s: %+v", c.Name, sc)
		}
	}
	for _, v := range ps.Volumes {
		if v.Projected != nil || v.Secret != nil {
			t.Errorf("a token or secret volume was mounted: %+v", v)
		}
	}
	if _, err := e.cs.NetworkingV1().NetworkPolicies(e.cfg.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the run's deny-all policy: %v", err)
	}
	cancel()
	select {
	case x := <-done:
		if !x.Stopped {
			t.Errorf("a cancelled run: %+v, want Stopped", x)
		}
	case <-time.After(time.Minute):
		t.Fatal("the cancelled run did not return")
	}
	if _, err := e.cs.CoreV1().Pods(e.cfg.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the cancelled run's pod is still there: %v", err)
	}
}

// TestMissingImage: an image the node does not have is a LaunchError naming it, and no pod stays.
func TestMissingImage(t *testing.T) {
	e := clusterExecutor(t)
	e.cfg.Image = "cline-mcp/no-such-image:never"
	spec, _, _ := fakeSpec(t.TempDir(), "hi")
	spec.Mounts = nil
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := e.Run(ctx, spec)
	var le *sandbox.LaunchError
	if !errors.As(err, &le) || !le.Missing || !strings.Contains(err.Error(), "no-such-image") {
		t.Errorf("got %v, want a LaunchError for the missing image", err)
	}
}

// TestCopyBackRefusesSparseFile: a run that leaves a 2.4 GB sparse file (free in the pod) gets
// a CopyBackError naming it and its declared size, refused on the tar header before a byte is
// staged; the checkout is as it was, also where the run changed it.
func TestCopyBackRefusesSparseFile(t *testing.T) {
	e := clusterExecutor(t)
	work := t.TempDir()
	_ = os.Chmod(work, 0o777)
	if err := os.WriteFile(filepath.Join(work, "README.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := fakeSpec(work, "Grow fake:attack_copy_sparse?size=2600000000")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := e.Run(ctx, spec)
	var cb *sandbox.CopyBackError
	if !errors.As(err, &cb) || !strings.Contains(err.Error(), `"big.bin" declares 2.4 GiB`) {
		t.Fatalf("got %v, want a CopyBackError naming big.bin and its size", err)
	}
	if _, err := os.Stat(filepath.Join(work, "big.bin")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big.bin reached the checkout: %v", err)
	}
}

// TestMissingPermission: an account that may only read pods gets a LaunchError naming the verb
// and resource it lacks, and Check lists every missing permission.
func TestMissingPermission(t *testing.T) {
	e := clusterExecutor(t)
	ctx := context.Background()
	ns := e.cfg.Namespace
	sa, err := e.cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "reader"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	if _, err := e.cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "reader"}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: ns}}}
	if _, err := e.cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tok, err := e.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc := rest.AnonymousClientConfig(e.rest)
	rc.BearerToken = tok.Status.Token
	limited, err := New(Config{REST: rc, Namespace: ns, Image: e.cfg.Image, PullPolicy: "Never", UID: 1000, GID: 1000, Instance: "limited"})
	if err != nil {
		t.Fatal(err)
	}
	_, missing, err := limited.Check(ctx)
	if err != nil || !slices.Contains(missing, "create pods") || !slices.Contains(missing, "create pods/exec") || slices.Contains(missing, "get pods") {
		t.Errorf("Check: missing %v, %v", missing, err)
	}
	spec, _, _ := fakeSpec(t.TempDir(), "hi")
	spec.Mounts = nil
	_, err = limited.Run(ctx, spec)
	var le *sandbox.LaunchError
	if !errors.As(err, &le) || le.Op != "create pods" || !strings.Contains(le.Hint, "create pods") {
		t.Errorf("got %v, want a LaunchError naming create pods", err)
	}
}

// TestPodHasNoWayOut: a run in the test cluster reaches nothing outside: no route for a TCP
// connect to a public address, no resolver for a name (the cluster's pods get neither; the
// NetworkPolicy is not enforced by its bridge CNI, so this is the cluster's own promise).
func TestPodHasNoWayOut(t *testing.T) {
	e := clusterExecutor(t)
	spec, out, errb := fakeSpec(t.TempDir(), "Probe fake:probe_net?addr=1.1.1.1:443&host=example.com")
	spec.Mounts = nil
	spec.Dir = "/tmp"
	spec.Args = []string{"--json", "-y", "Probe fake:probe_net?addr=1.1.1.1:443&host=example.com"}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e.Run(ctx, spec); err != nil {
		t.Fatalf("run: %v %s", err, errb)
	}
	s := out.String()
	if !strings.Contains(s, `\"tcp\"`) || !strings.Contains(s, `\"dns\"`) {
		t.Fatalf("the probe did not report (it never ran?): %s", s)
	}
	if strings.Contains(s, `\"result\":\"ok\"`) {
		t.Errorf("the pod reached outside: %s", s)
	}
}
