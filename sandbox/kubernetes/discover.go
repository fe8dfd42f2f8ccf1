package kubernetes

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Discover finds the cluster like kubectl: the kubeconfig (kubeconfig, else $KUBECONFIG, else
// ~/.kube/config) and its context (context, else the current one), else the pod's in-cluster
// service account. It returns the client configuration, the namespace that source names
// ("default" when a context names none) and, in words, where it came from.
func Discover(kubeconfig, context string) (*rest.Config, string, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: context})
	raw, err := cc.RawConfig()
	if err == nil && (raw.CurrentContext != "" || context != "") {
		cfg, err := cc.ClientConfig()
		if err != nil {
			return nil, "", "", fmt.Errorf("kubeconfig: %w", err)
		}
		ns, _, _ := cc.Namespace()
		name := context
		if name == "" {
			name = raw.CurrentContext
		}
		return cfg, ns, fmt.Sprintf("context %s of %s", name, strings.Join(rules.GetLoadingPrecedence(), string(os.PathListSeparator))), nil
	}
	cfg, ierr := rest.InClusterConfig()
	if ierr != nil {
		return nil, "", "", fmt.Errorf("no kubeconfig context (%v) and not in a pod (%v): pass --k8s-kubeconfig or --k8s-context", err, ierr)
	}
	ns, _ := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	return cfg, strings.TrimSpace(string(ns)), "the pod's in-cluster service account", nil
}

// SetLogger sends client-go's own messages (klog: a stream copy that failed, a watch the server
// ended) to l instead of klog's lines on stderr. It is process-wide.
func SetLogger(l *slog.Logger) { klog.SetSlogLogger(l) }
