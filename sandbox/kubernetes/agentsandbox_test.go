package kubernetes

import (
	"errors"
	"strings"
	"testing"

	"github.com/cline-mcp/cline-mcp/sandbox"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// TestWarmBackendConfig: the agent-sandbox backend replaces the own pool, only with warm pods; an
// unknown backend is refused by New.
func TestWarmBackendConfig(t *testing.T) {
	base := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Namespace: "ns", Image: "img:1"}
	for _, c := range []struct {
		warm        int
		backend     string
		asb, own    bool
		errContains string
	}{
		{warm: 2, backend: WarmAgentSandbox, asb: true},
		{warm: 2, own: true},
		{warm: 0, backend: WarmAgentSandbox},
		{warm: 2, backend: "kata", errContains: "unknown warm backend"},
	} {
		cfg := base
		cfg.Warm, cfg.WarmBackend = c.warm, c.backend
		e, err := New(cfg)
		if c.errContains != "" {
			if err == nil || !strings.Contains(err.Error(), c.errContains) {
				t.Errorf("%+v: error %v, want %q", c, err, c.errContains)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if (e.asb != nil) != c.asb || (e.warm != nil) != c.own {
			t.Errorf("%+v: agent-sandbox pool %v, own pool %v", c, e.asb != nil, e.warm != nil)
		}
	}
}

// TestAPIGroup: the permissions doctor checks name the groups the requests go to.
func TestAPIGroup(t *testing.T) {
	for res, want := range map[string]string{"pods": "", "networkpolicies": "networking.k8s.io",
		"sandboxclaims": "extensions.agents.x-k8s.io", "sandboxtemplates": "extensions.agents.x-k8s.io", "sandboxes": "agents.x-k8s.io"} {
		if got := apiGroup(res); got != want {
			t.Errorf("apiGroup(%s) = %q, want %q", res, got, want)
		}
	}
	for _, n := range asbNeeds {
		if n[1] != "pods" && apiGroup(n[1]) == "" {
			t.Errorf("%v has no group", n)
		}
	}
}

// TestASBError: a resource the cluster does not serve, and the API server's refusal while the
// CRDs are being deleted, are agent-sandbox missing (the install hint); any other refusal is a
// missing permission (the RBAC hint).
func TestASBError(t *testing.T) {
	e := &Executor{cfg: Config{Namespace: "ns"}}
	gr := schema.GroupResource{Group: "extensions.agents.x-k8s.io", Resource: "sandboxtemplates"}
	for _, c := range []struct {
		err  error
		hint string
	}{
		{apierrors.NewGenericServerResponse(404, "POST", gr, "", "the server could not find the requested resource", 0, false), "install agent-sandbox"},
		{apierrors.NewForbidden(gr, "t", errors.New("create not allowed while custom resource definition is terminating")), "install agent-sandbox"},
		{apierrors.NewForbidden(gr, "t", errors.New(`User "x" cannot create resource`)), "RBAC"},
	} {
		var le *sandbox.LaunchError
		if err := e.asbError("create sandboxtemplates", c.err); !errors.As(err, &le) || !strings.Contains(le.Hint, c.hint) {
			t.Errorf("%v: got %v, want a LaunchError with a hint containing %q", c.err, err, c.hint)
		}
	}
}
