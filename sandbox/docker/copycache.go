package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// Copy mode keeps the volume of a read-only directory Mount (an analysis's checkout, a
// worktree's .git) for the next call of the same tree: the next fill sends only the files whose
// size, modification time, mode or link target changed since, and starts a new volume when
// anything was removed or changed kind. Only read-only Mounts are kept: the run mounts the volume
// read-only and the filler that writes it is never started, so the volume holds exactly what the
// host sent. A writable Mount's volume is the run's to change and is never reused.
//
// A kept volume serves one call at a time while it is filled and any number of calls while
// they run (a lock); a call that finds it being filled, or a run holding it while it would
// need a refill, copies its tree into a volume of its own as before. The volumes carry the
// instance label: Close removes them, RemoveOwn and Sweep after a crash.

// racyWindow: a file modified this close to the time its stamp was taken may change again
// without its stamp changing (a coarse file system clock); it is sent again on the next fill.
const racyWindow = 2 * time.Second

// labelCache marks a kept volume (its value is the cache key); keptPrefix starts its name.
const (
	labelCache = "cline-mcp.copycache"
	keptPrefix = "cline-mcp-cache-"
)

// stamp is what the host's file looked like when it was sent.
type stamp struct {
	size  int64
	mtime int64
	mode  fs.FileMode
	link  string
	racy  bool
}

// cacheEntry is one kept volume: a tree, as one container user sees it.
type cacheEntry struct {
	key    string
	mu     sync.RWMutex // held for writing while filled, for reading while runs mount it
	volume string
	stamps map[string]stamp // what the volume holds; nil: start a new volume
	// sent is how many files and links the last fill sent (a new volume: all of them).
	sent int
	// man is what the volume holds, with the files' hashes (nil: start a new volume); mountpoint
	// is its path on the engine's machine (an overlay's lower layer).
	man        archive.Manifest
	mountpoint string
	// root is the tree's root directory's mode as the last fill sent it.
	root fs.FileMode
	used time.Time // the last claim, for the eviction (under copyCache.mu)
}

// maxKept bounds the kept volumes of an executor: a new tree beyond it evicts the least
// recently used idle one.
const maxKept = 8

type copyCache struct {
	mu      sync.Mutex
	entries map[string]*cacheEntry
	// retired are kept volumes replaced or evicted while a warm container mounted them: removed
	// once that container is gone (warmcopy.go).
	retired map[string]bool
	// overlay is whether writable trees are overlays of their kept volume ('y', 'n'; 0: not
	// probed yet), overlayWhy the probe's answer (overlay.go).
	overlayMu  sync.Mutex
	overlay    byte
	overlayWhy string
}

// cacheKey names a directory Mount's tree for one container identity.
func cacheKey(d *copied, id identity) string {
	h := sha256.New()
	for _, s := range append([]string{d.m.Source, d.m.Target, id.user.String(), id.userns}, d.nested...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// claimCache returns d's kept volume locked for filling, or nil when d cannot use one now (a
// writable Mount, or the volume is being filled or mounted by another call).
func (e *Executor) claimCache(d *copied, id identity) *cacheEntry {
	if !d.m.ReadOnly && !d.overlay {
		return nil
	}
	key := cacheKey(d, id)
	e.cache.mu.Lock()
	if e.cache.entries == nil {
		e.cache.entries = map[string]*cacheEntry{}
	}
	ent := e.cache.entries[key]
	if ent == nil {
		e.evictKept()
		ent = &cacheEntry{key: key}
		e.cache.entries[key] = ent
	}
	ent.used = time.Now()
	e.cache.mu.Unlock()
	if !ent.mu.TryLock() {
		return nil
	}
	return ent
}

// evictKept removes the least recently used idle kept volume while there are maxKept or more
// (e.cache.mu held). A volume in use stays.
func (e *Executor) evictKept() {
	for len(e.cache.entries) >= maxKept {
		var oldest *cacheEntry
		for _, ent := range e.cache.entries {
			if oldest == nil || ent.used.Before(oldest.used) {
				oldest = ent
			}
		}
		if !oldest.mu.TryLock() {
			return
		}
		delete(e.cache.entries, oldest.key)
		if v := oldest.volume; v != "" {
			e.background.Go(func() { e.retireVolume(v) })
		}
		// Left locked: nobody can find it any more.
	}
}

// walkStamps records the tree under src as WriteTree would send it (skip leaves paths out).
func walkStamps(src string, skip archive.SkipFunc) map[string]stamp {
	out := map[string]stamp{}
	now := time.Now()
	_ = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == src {
			if err != nil && d != nil && d.IsDir() && p != src {
				return fs.SkipDir
			}
			return nil
		}
		r, rerr := filepath.Rel(src, p)
		if rerr != nil {
			return nil
		}
		rel := filepath.ToSlash(r)
		if skip(rel) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, ierr := d.Info()
		if ierr != nil {
			return nil
		}
		s := stamp{size: info.Size(), mtime: info.ModTime().UnixNano(), mode: info.Mode()}
		if info.IsDir() {
			s.size, s.mtime = 0, 0 // a directory entry is sent on every fill anyway
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			s.link, _ = os.Readlink(p)
		}
		s.racy = !info.IsDir() && now.Sub(info.ModTime()) < racyWindow
		out[rel] = s
		return nil
	})
	return out
}

// diff is what a fill of a volume holding old must send to hold cur: the changed paths, or
// full when something was removed or changed kind (an upload cannot remove).
func diff(old, cur map[string]stamp) (changed map[string]bool, full bool) {
	if old == nil {
		return nil, true
	}
	changed = map[string]bool{}
	for rel, o := range old {
		c, ok := cur[rel]
		if !ok || c.mode.Type() != o.mode.Type() {
			return nil, true
		}
	}
	for rel, c := range cur {
		o, ok := old[rel]
		if !ok || o.racy || o.size != c.size || o.mtime != c.mtime || o.mode != c.mode || o.link != c.link {
			changed[rel] = true
		}
	}
	return changed, false
}

// prepareCached gives d its kept volume, a new one when it must start over. It returns the skip
// of the fill: everything but the changed files (directories are always sent: cheap, and their
// modes may have changed). The entry's new stamps are taken before the fill, so a file changing
// during it is sent again next time.
func (e *Executor) prepareCached(ctx context.Context, d *copied, runID string, idx int, labels map[string]string) (archive.SkipFunc, error) {
	ent := d.cache
	skipNested := archive.Under(d.nested)
	cur := walkStamps(d.m.Source, skipNested)
	changed, full := diff(ent.stamps, cur)
	full = full || ent.man == nil
	d.man = archive.Manifest{}
	if !full {
		d.man = maps.Clone(ent.man)
	}
	ent.stamps, ent.man = nil, nil // until the fill succeeded
	if full || ent.volume == "" {
		old := ent.volume
		ent.volume = ""
		if old != "" {
			e.background.Go(func() { e.retireVolume(old) })
		}
		l := maps.Clone(labels)
		delete(l, LabelRun)
		l[labelCache] = ent.key
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		v, err := e.cli.VolumeCreate(vctx, client.VolumeCreateOptions{Name: keptPrefix + runID + "-" + strconv.Itoa(idx), Labels: l})
		cancel()
		if err != nil {
			return nil, e.launchError("volume create", runID, err)
		}
		ent.volume, ent.mountpoint = v.Volume.Name, v.Volume.Mountpoint
		changed = nil
	}
	d.volume = ent.volume
	d.pending = cur
	if fi, err := os.Stat(d.m.Source); err == nil {
		d.root = fi.Mode()
		// Nothing to send: no filler needed for this tree.
		d.unchanged = changed != nil && len(changed) == 0 && d.root == ent.root
	}
	if changed == nil {
		ent.sent = 0
		for _, s := range cur {
			if !s.mode.IsDir() {
				ent.sent++
			}
		}
		return skipNested, nil
	}
	ent.sent = 0
	for rel := range changed {
		if !cur[rel].mode.IsDir() {
			ent.sent++
		}
	}
	return func(rel string) bool {
		if skipNested(rel) {
			return true
		}
		s := cur[rel]
		return !s.mode.IsDir() && !changed[rel]
	}, nil
}

// settle ends d's fill: a successful one records what the volume now holds and lets runs mount
// it (the read lock, released by release); a failed one makes the next fill start over.
func (d *copied) settle(ok bool) {
	ent := d.cache
	if ent == nil || d.cacheState != 'w' {
		return
	}
	if ok {
		ent.stamps, ent.man, ent.root = d.pending, d.man, d.root
		ent.mu.Unlock()
		ent.mu.RLock()
		d.cacheState = 'r'
		return
	}
	ent.stamps, ent.man = nil, nil
	ent.mu.Unlock()
	d.cacheState = 0
}

// release lets the next fill of d's kept volume go ahead (its run's container is gone).
func (d *copied) release() {
	if d.cache == nil {
		return
	}
	switch d.cacheState {
	case 'w':
		d.settle(false)
	case 'r':
		d.cache.mu.RUnlock()
	}
	d.cacheState = 0
}

// removeVolume removes one volume (best effort, on its own timeout).
func (e *Executor) removeVolume(ctx context.Context, name string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = e.cli.VolumeRemove(rctx, name, client.VolumeRemoveOptions{Force: true})
}

// closeCache removes the kept volumes (Close: no run is in flight, no warm container left).
func (e *Executor) closeCache() {
	e.removeRetired()
	e.cache.mu.Lock()
	defer e.cache.mu.Unlock()
	for k, ent := range e.cache.entries {
		if ent.volume != "" {
			e.removeVolume(context.Background(), ent.volume)
		}
		delete(e.cache.entries, k)
	}
}
