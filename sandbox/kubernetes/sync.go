package kubernetes

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

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
		man, err := manifestOf(c)
		if err != nil {
			return &sandbox.CopyBackError{Source: c.m.Source, Err: err}
		}
		c.man = man
	}
	return nil
}

// manifestOf is the manifest of c's source as it is now, as writeMount records it.
func manifestOf(c *copied) (archive.Manifest, error) {
	man := archive.Manifest{}
	tw := tar.NewWriter(io.Discard)
	if err := archive.WriteTree(tw, c.m.Source, archive.Owner{}, archive.Under(c.nested), archive.HasGitPart, man); err != nil {
		return nil, fmt.Errorf("the manifest of %s: %w", c.m.Source, err)
	}
	return man, tw.Close()
}
