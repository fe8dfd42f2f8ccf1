package docker

import (
	"context"
	"fmt"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// copySync brings a copy-mode container's changes back while it runs, between the turns of a
// kept process (sandbox.Syncer): the copy back of its end — the engine's archive of each
// writable Mount, through sandbox/archive's checks — taken under the lock the end's copy back
// takes. A Mount that came back is then recorded as what went in (its manifest renewed from the
// host's own tree, never from the container), so the next copy back deletes on the host only
// what the run removed since; an overlay's upper would say what changed since the start, so a
// tree read once this way is read whole from then on.
type copySync struct {
	cs *copySet
	id string
}

func (s copySync) Sync(ctx context.Context) error {
	cs := s.cs
	cs.back.Lock()
	defer cs.back.Unlock()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), copyTimeout)
	defer cancel()
	for _, d := range cs.dirs {
		tree := !d.m.ReadOnly && d.m.Return.Tree
		if tree {
			d.whole = true
		}
		if err := cs.mountBack(bctx, s.id, d); err != nil {
			return err
		}
		if !tree {
			continue
		}
		man, err := archive.ManifestOf(d.m.Source, archive.Under(d.nested), archive.HasGitPart)
		if err != nil {
			return &sandbox.CopyBackError{Source: d.m.Source, Err: fmt.Errorf("the manifest of %s: %w", d.m.Source, err)}
		}
		d.man = man // a map of its own: a kept volume's entry keeps the one it had
	}
	return nil
}
