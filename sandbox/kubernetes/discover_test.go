package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const twoContexts = `apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: dev
  cluster: {server: "https://dev.example:6443"}
- name: prod
  cluster: {server: "https://prod.example:6443"}
users:
- name: me
  user: {token: "t"}
contexts:
- name: dev
  context: {cluster: dev, user: me, namespace: agents}
- name: prod
  context: {cluster: prod, user: me}
`

// TestDiscover: like kubectl, the explicit kubeconfig wins over $KUBECONFIG, the explicit
// context over the current one, and the context's namespace comes along (else default); without any context
// and outside a pod there is an error telling what to pass.
func TestDiscover(t *testing.T) {
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "config")
	if err := os.WriteFile(cfgFile, []byte(twoContexts), 0o600); err != nil {
		t.Fatal(err)
	}
	noFile := filepath.Join(dir, "absent")
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a pod, also when the tests run in one
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	tests := []struct {
		name, env, kubeconfig, context string
		host, ns, from                 string
	}{
		{"current context of $KUBECONFIG", cfgFile, "", "", "https://dev.example:6443", "agents", "context dev of " + cfgFile},
		{"named context", cfgFile, "", "prod", "https://prod.example:6443", "default", "context prod of " + cfgFile},
		{"explicit kubeconfig over $KUBECONFIG", noFile, cfgFile, "", "https://dev.example:6443", "agents", "context dev of " + cfgFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", tt.env)
			cfg, ns, from, err := Discover(tt.kubeconfig, tt.context)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.host || ns != tt.ns || from != tt.from {
				t.Errorf("got %s, %q, %q; want %s, %q, %q", cfg.Host, ns, from, tt.host, tt.ns, tt.from)
			}
		})
	}
	t.Run("no context and not in a pod", func(t *testing.T) {
		t.Setenv("KUBECONFIG", noFile)
		if _, _, _, err := Discover("", ""); err == nil || !strings.Contains(err.Error(), "--k8s-context") {
			t.Errorf("got %v, want an error naming the flags", err)
		}
	})
	t.Run("a context that does not exist", func(t *testing.T) {
		t.Setenv("KUBECONFIG", cfgFile)
		if _, _, _, err := Discover("", "staging"); err == nil || !strings.Contains(err.Error(), "staging") {
			t.Errorf("got %v, want an error naming the context", err)
		}
	})
}
