package kubernetes

import (
	"context"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// needs are the permissions a run needs in its namespace: verb, resource, subresource.
var needs = [][3]string{
	{"create", "pods", ""}, {"get", "pods", ""}, {"list", "pods", ""}, {"watch", "pods", ""}, {"delete", "pods", ""},
	{"create", "pods", "attach"}, {"create", "pods", "exec"}, {"get", "pods", "log"},
	{"create", "networkpolicies", ""}, {"delete", "networkpolicies", ""},
}

// warmNeeds are what warm pods need besides (Config.Warm): the claim sets the policy's egress
// and the run's labels.
var warmNeeds = [][3]string{{"update", "networkpolicies", ""}, {"patch", "pods", ""}}

// Check asks the cluster for its version and whether this client may do what runs need in the
// namespace (SelfSubjectAccessReview); it returns the version and the missing permissions in
// words ("create pods/exec").
func (e *Executor) Check(ctx context.Context) (version string, missing []string, err error) {
	v, err := e.cs.Discovery().ServerVersion()
	if err != nil {
		return "", nil, fmt.Errorf("the cluster does not answer: %w", err)
	}
	all := needs
	if e.warm != nil {
		all = append(append([][3]string(nil), needs...), warmNeeds...)
	}
	if e.asb != nil {
		all = append(append([][3]string(nil), needs...), asbNeeds...)
	}
	for _, n := range all {
		group := apiGroup(n[1])
		r := &authv1.SelfSubjectAccessReview{Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
			Namespace: e.cfg.Namespace, Verb: n[0], Group: group, Resource: n[1], Subresource: n[2]}}}
		got, err := e.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, r, metav1.CreateOptions{})
		if err != nil {
			return v.GitVersion, nil, fmt.Errorf("access review: %w", err)
		}
		if !got.Status.Allowed {
			what := n[1]
			if n[2] != "" {
				what += "/" + n[2]
			}
			missing = append(missing, n[0]+" "+what)
		}
	}
	return v.GitVersion, missing, nil
}

// Namespace is where the executor runs pods.
func (e *Executor) Namespace() string { return e.cfg.Namespace }
