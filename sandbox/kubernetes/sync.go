package kubernetes

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// tellLive gives spec what a run that outlives its call needs (a kept process's): the report of
// what its pod enforces (Started), a way to bring its changes back between turns (Sync, holding
// back) and, with the credential outside, to settle the sidecar's grant between them (Live).
func (e *Executor) tellLive(ctx context.Context, pod *corev1.Pod, pol *networkingv1.NetworkPolicy, spec sandbox.Spec, copies []*copied, line *sidecarLine, outside bool, back *sync.Mutex) {
	if spec.Started != nil {
		spec.Started(*e.storedReport(ctx, pod, pol, spec, outside))
	}
	if spec.Sync != nil {
		spec.Sync(&podSync{e: e, pod: pod.Name, copies: copies, mu: back})
	}
	if outside && spec.Live != nil {
		spec.Live(e.settlerFor(pod.Name, line))
	}
}

// podSync brings a running pod's changes back between the turns of a kept process
// (sandbox.Syncer): the copy back of the run's end, from the keeper, while the main container
// still runs. The copy back at the end takes the same lock, so the two never write a mount's
// source at once.
type podSync struct {
	e      *Executor
	pod    string
	copies []*copied
	mu     *sync.Mutex
}

// Sync copies back what each writable mount's Return names, then records what the host holds now
// as what went in: the next copy back (a later Sync, or the run's end) deletes on the host only
// what the run removed since.
func (s *podSync) Sync(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.copies {
		if err := s.e.copyBack(ctx, s.pod, []*copied{c}); err != nil {
			return &sandbox.CopyBackError{Source: err.source, Err: err.err}
		}
		if c.man == nil {
			continue
		}
		man, err := archive.ManifestOf(c.m.Source, archive.Under(c.nested), archive.HasGitPart)
		if err != nil {
			return &sandbox.CopyBackError{Source: c.m.Source, Err: fmt.Errorf("the manifest of %s: %w", c.m.Source, err)}
		}
		c.man = man
	}
	return nil
}
