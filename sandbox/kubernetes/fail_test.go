package kubernetes

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
)

// forbid makes the fake API server refuse verb on resource with a 403, as RBAC would.
func forbid(cs *fake.Clientset, verb, resource string) {
	cs.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New("RBAC: access denied"))
	})
}

// TestForbiddenIsALaunchError: a 403 is a LaunchError whose Op names the verb and resource the
// account lacks and whose hint points at the Role; whatever was created before is deleted.
func TestForbiddenIsALaunchError(t *testing.T) {
	for _, tt := range []struct{ verb, resource, op string }{
		{"create", "pods", "create pods"},
		{"create", "networkpolicies", "create networkpolicies"},
		{"get", "pods", "get pods"},
	} {
		t.Run(tt.op, func(t *testing.T) {
			e := testExecutor(t)
			cs := e.cs.(*fake.Clientset)
			forbid(cs, tt.verb, tt.resource)
			_, err := e.Run(t.Context(), sandbox.Spec{Path: "/usr/local/bin/cline"})
			var le *sandbox.LaunchError
			if !errors.As(err, &le) || le.Op != tt.op || !strings.Contains(le.Hint, "namespace ns") {
				t.Fatalf("got %v, want a LaunchError for %s", err, tt.op)
			}
			if tt.op == "get pods" {
				return // the fake cannot tell that the pod is gone without get
			}
			if pods, _ := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
				t.Errorf("a pod was left behind: %s", pods.Items[0].Name)
			}
		})
	}
}

// TestCannotStart: a pod whose image cannot be pulled is a LaunchError with Missing (the bridge
// treats it like a missing CLI), a container the runtime cannot create a LaunchError without,
// and a pod that is only slow is no error.
func TestCannotStart(t *testing.T) {
	waiting := func(reason string) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: mainName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "m"}}}}}}
	}
	for _, tt := range []struct {
		reason        string
		launch, missg bool
	}{
		{"ErrImagePull", true, true},
		{"ImagePullBackOff", true, true},
		{"ErrImageNeverPull", true, true},
		{"CreateContainerError", true, false},
		{"ContainerCreating", false, false},
		{"PodInitializing", false, false},
	} {
		err := cannotStart(waiting(tt.reason), "img:1")
		var le *sandbox.LaunchError
		if got := errors.As(err, &le); got != tt.launch || (got && le.Missing != tt.missg) {
			t.Errorf("%s: got %v, want launch error %v (missing %v)", tt.reason, err, tt.launch, tt.missg)
		}
	}
}

// TestRunReportsMissingImage: Run on a pod whose image cannot be pulled returns the LaunchError
// and deletes the pod.
func TestRunReportsMissingImage(t *testing.T) {
	e := testExecutor(t)
	cs := e.cs.(*fake.Clientset)
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", a.(k8stesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: mainName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}
		return true, p, nil
	})
	_, err := e.Run(t.Context(), sandbox.Spec{Path: "/usr/local/bin/cline"})
	var le *sandbox.LaunchError
	if !errors.As(err, &le) || !le.Missing || !strings.Contains(err.Error(), "img:1") {
		t.Fatalf("got %v, want a LaunchError naming the image", err)
	}
	if pods, _ := cs.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); len(pods.Items) != 0 {
		t.Errorf("the pod was left behind")
	}
	if pols, _ := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{}); len(pols.Items) != 0 {
		t.Errorf("the policy was left behind")
	}
}

// TestPolicyOutlivesPod: while a deleted pod is still terminating (running out its stop grace),
// its deny-all policy stays; the policy goes once the pod is gone, and the pod is not deleted in
// the foreground (where the garbage collector removes dependents first).
func TestPolicyOutlivesPod(t *testing.T) {
	e := testExecutor(t)
	cs := e.cs.(*fake.Clientset)
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	terminating := 0
	var violations []string
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if pp := a.(k8stesting.DeleteAction).GetDeleteOptions().PropagationPolicy; pp != nil && *pp == metav1.DeletePropagationForeground {
			violations = append(violations, "a foreground deletion")
		}
		terminating = 3 // the kubelet takes three polls to stop the containers
		return false, nil, nil
	})
	cs.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.GetAction).GetName()
		if terminating > 0 {
			terminating--
			if _, err := cs.Tracker().Get(networkingv1.SchemeGroupVersion.WithResource("networkpolicies"), "ns", name); err != nil {
				violations = append(violations, "no policy while the pod terminates")
			}
			return true, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}, nil
		}
		obj, err := cs.Tracker().Get(pods, "ns", name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: mainName,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}
		return true, p, nil
	})
	if _, err := e.Run(t.Context(), sandbox.Spec{Path: "/usr/local/bin/cline"}); err == nil {
		t.Fatal("got no error, want the image pull's")
	}
	if len(violations) > 0 || terminating != 0 {
		t.Errorf("got %v (%d polls left), want the policy kept until the pod was gone", violations, terminating)
	}
	if pols, _ := cs.NetworkingV1().NetworkPolicies("ns").List(context.Background(), metav1.ListOptions{}); len(pols.Items) != 0 {
		t.Errorf("the policy was left behind")
	}
}

// TestRunFollowsThePodByWatch: Run learns that the main container started and then ended from
// the pod's watch events (not by polling), and the exit is the container's; an OOM kill adds a
// line saying so to stderr, and a log that is not the wrapper's stream (the fake's) a line saying
// output was lost. A 127 is the CLI's own unless the helper's termination message says it could
// not start the CLI: then it is a LaunchError (Missing), as Docker's check of the path.
func TestRunFollowsThePodByWatch(t *testing.T) {
	for _, tt := range []struct {
		name   string
		term   corev1.ContainerStateTerminated
		code   int
		oom    bool
		stderr []string
	}{
		{"exit 3", corev1.ContainerStateTerminated{ExitCode: 3}, 3, false, []string{"output is lost"}},
		{"OOM", corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}, 137, true, []string{"output is lost", "memory limit (2Gi)"}},
		{"the CLI's own 127", corev1.ContainerStateTerminated{ExitCode: 127}, 127, false, nil},
		{"no CLI in the image", corev1.ContainerStateTerminated{ExitCode: 127, Message: helperStartFailed + " fork/exec /usr/local/bin/cline: no such file or directory"}, -1, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := testExecutor(t)
			cs := e.cs.(*fake.Clientset)
			gets := 0
			cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				gets++
				return false, nil, nil
			})
			go endRun(t, cs.CoreV1().Pods("ns"), tt.term)
			var stderr strings.Builder
			x, err := e.Run(t.Context(), sandbox.Spec{Path: "/usr/local/bin/cline", SettleGrace: time.Millisecond, Stderr: &stderr})
			if tt.code == -1 {
				var le *sandbox.LaunchError
				if !errors.As(err, &le) || !le.Missing || !strings.Contains(err.Error(), "/usr/local/bin/cline") {
					t.Errorf("got %v, want a LaunchError naming the missing CLI", err)
				}
				return
			}
			if err != nil || x.Code != tt.code || x.OOMKilled != tt.oom {
				t.Fatalf("got %+v, %v; want exit %d (OOM %v)", x, err, tt.code, tt.oom)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("stderr %q does not say %q", stderr.String(), want)
				}
			}
			if gets > 5 { // one more is the report's read of the pod's status (its imageID)
				t.Errorf("got %d gets of the pod, want it watched", gets)
			}
		})
	}
}

// endRun plays the kubelet for the first pod created through pods: the main container runs,
// then ends as term says.
func endRun(t *testing.T, pods typedcorev1.PodInterface, term corev1.ContainerStateTerminated) {
	w, err := pods.Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	defer w.Stop()
	ev := <-w.ResultChan() // the run's pod, created
	p := ev.Object.(*corev1.Pod).DeepCopy()
	for _, st := range []corev1.ContainerState{{Running: &corev1.ContainerStateRunning{}}, {Terminated: &term}} {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: mainName, State: st}}
		if p, err = pods.UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Error(err)
			return
		}
	}
}
