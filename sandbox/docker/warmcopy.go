package docker

import (
	"archive/tar"
	"context"
	"errors"
	"maps"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// Warm containers in copy mode. An engine that cannot see this machine's files cannot see a
// slot directory either, so a copy-mode warm container gets a volume of its own at the slot's
// path instead, and mounts the kept volumes (copycache.go) of the calls before it read-only —
// everything a call in copy mode mounts apart from its own writable directories, which the
// bridge puts in the slot. At the claim the call's kept volumes are brought up to date by the
// filler as for a cold call (only a call whose kept volumes are the container's can take it),
// its own directories are uploaded into the running container's slot volume, and so is the
// launch file; the copy back reads the exited container. A call with a writable tree outside the
// slot (an overlay, a busy kept volume's stand-in) has no warm shape and starts cold.

// errKeptBusy: a kept volume a warm container would mount is being filled; not a failure.
var errKeptBusy = errors.New("a kept volume is being filled")

// perCallMount reports whether a Spec's Mount is one of a call's own directories in slot: a
// writable directory at its own path (warm.go's perCall, before it becomes a bind mount or a
// volume).
func perCallMount(m sandbox.Mount, slot string) bool {
	return slot != "" && !m.ReadOnly && m.Source == m.Target && inDir(m.Source, slot)
}

// reservedSlot is the reserved warm container that holds one of spec's Mounts in its slot, nil
// when there is none (the call starts cold, its Mounts copied as usual).
func (e *Executor) reservedSlot(spec sandbox.Spec) *warmC {
	p := e.warm
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for slot, w := range p.reserved {
		for _, m := range spec.Mounts {
			if perCallMount(m, slot) {
				return w
			}
		}
	}
	return nil
}

// warmFits reports whether a copy-mode call can run in w as far as its Mounts tell before any
// fill: each directory is either its own in w's slot or a read-only tree whose kept volume w
// mounts. The claim compares the rest (and a kept volume the fill had to start anew).
func (e *Executor) warmFits(cs *copySet, w *warmC, id identity) bool {
	for _, d := range cs.dirs {
		if perCallMount(d.m, w.slot) {
			continue
		}
		if !d.m.ReadOnly {
			return false
		}
		e.cache.mu.Lock()
		ent := e.cache.entries[cacheKey(d, id)]
		fits := ent != nil && slices.Contains(w.kept, ent.volume)
		e.cache.mu.Unlock()
		if !fits {
			return false
		}
	}
	return true
}

// primeCopy creates the slot's volume of a copy-mode warm container and returns its mount; the
// kept volumes the shape mounts are recorded (retireVolume removes them only after w is gone).
func (e *Executor) primeCopy(ctx context.Context, w *warmC, host *container.HostConfig, labels map[string]string) (mount.Mount, error) {
	l := maps.Clone(labels)
	l[LabelInstance] = e.instance
	v, err := e.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: "cline-mcp-" + w.runID + "-slot", Labels: l})
	if err != nil {
		return mount.Mount{}, err
	}
	w.volume = v.Volume.Name
	for _, m := range host.Mounts {
		if m.Type == mount.TypeVolume && strings.HasPrefix(m.Source, keptPrefix) {
			w.kept = append(w.kept, m.Source)
		}
	}
	return mount.Mount{Type: mount.TypeVolume, Source: w.volume, Target: w.slot}, nil
}

// createWarm creates a warm container. The kept volumes it mounts must be the current ones of
// their trees for the whole create (a retired one would be gone, and an engine makes a missing
// named volume anew, empty): they are read-locked as a run's are, errKeptBusy when one is being
// filled or is no longer kept.
func (e *Executor) createWarm(ctx context.Context, w *warmC, cfg *container.Config, host *container.HostConfig) (client.ContainerCreateResult, error) {
	var locked []*cacheEntry
	defer func() {
		for _, ent := range locked {
			ent.mu.RUnlock()
		}
	}()
	for _, v := range w.kept {
		ent := e.keptEntry(v)
		if ent == nil || !ent.mu.TryRLock() {
			return client.ContainerCreateResult{}, errKeptBusy
		}
		locked = append(locked, ent)
		if ent.volume != v || ent.man == nil {
			return client.ContainerCreateResult{}, errKeptBusy
		}
	}
	return e.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
}

// keptEntry is the cache entry whose volume is v, nil if none.
func (e *Executor) keptEntry(v string) *cacheEntry {
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	for _, ent := range e.cache.entries {
		if ent.volume == v {
			return ent
		}
	}
	return nil
}

// retireVolume removes a kept volume that was replaced or evicted: first the ready warm
// containers that mount it (no call of the new volume can take them), then the volume; while a
// reserved or claimed one still mounts it, it is removed when that one is discarded.
func (e *Executor) retireVolume(v string) {
	if p := e.warm; p != nil {
		p.mu.Lock()
		var drop []*warmC
		keep := p.ready[:0]
		for _, w := range p.ready {
			if slices.Contains(w.kept, v) {
				drop = append(drop, w)
			} else {
				keep = append(keep, w)
			}
		}
		p.ready = keep
		p.mu.Unlock()
		for _, w := range drop {
			e.discard(w)
			_ = os.RemoveAll(w.slot)
		}
	}
	e.cache.mu.Lock()
	if e.cache.retired == nil {
		e.cache.retired = map[string]bool{}
	}
	e.cache.retired[v] = true
	e.cache.mu.Unlock()
	e.removeRetired()
}

// removeRetired removes the retired kept volumes that nothing mounts any more.
func (e *Executor) removeRetired() {
	e.cache.mu.Lock()
	names := make([]string, 0, len(e.cache.retired))
	for v := range e.cache.retired {
		names = append(names, v)
	}
	e.cache.mu.Unlock()
	for _, v := range names {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		_, err := e.cli.VolumeRemove(ctx, v, client.VolumeRemoveOptions{Force: true})
		cancel()
		if err == nil || isNotFound(err) {
			e.cache.mu.Lock()
			delete(e.cache.retired, v)
			e.cache.mu.Unlock()
		}
	}
}

// fillSlot uploads a copy-mode call's own directories (and single files in them) into the
// claimed warm container's slot volume, as the filler would have into volumes of their own (the
// same trees, owners and modes, the same record of what went in for a Return.Tree), and the
// launch file, readable by the run's user only: one archive.
func (cs *copySet) fillSlot(ctx context.Context, id, slot, script string, u runUser) error {
	return cs.e.upload(ctx, id, slot, func(tw *tar.Writer) error {
		made := map[string]bool{}
		for _, d := range cs.dirs {
			if !d.inSlot {
				continue
			}
			r := rel(slot, d.m.Target)
			// The directories from the slot down to the mount point first.
			parts := strings.Split(r, "/")
			for i := range parts[:len(parts)-1] {
				if p := path.Join(parts[:i+1]...); !made[p] {
					made[p] = true
					if err := archive.WriteDirEntry(tw, p, 0o700, u.owner()); err != nil {
						return err
					}
				}
			}
			var noRecord archive.SkipFunc
			if d.m.Return.Tree {
				d.man, noRecord = archive.Manifest{}, archive.HasGitPart
			}
			if err := archive.WriteTreeAs(tw, r, d.m.Source, u.owner(), archive.Under(d.nested), noRecord, d.man); err != nil {
				return err
			}
		}
		for _, f := range cs.files {
			if d := cs.enclosing(f.Target); d != nil && d.inSlot {
				if err := archive.WriteFile(tw, rel(slot, f.Target), f.Source, u.owner(), f.ReadOnly); err != nil {
					return err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: launchName, Typeflag: tar.TypeReg, Mode: 0o600,
			Size: int64(len(script)), Uid: u.uid, Gid: u.gid, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write([]byte(script))
		return err
	})
}
