// Package deploy holds the manifests that run cline-mcp as a shared service on Kubernetes
// (kustomize/base, docs/deploy.md) and the tests that check them; it has no code of its own.
package deploy
