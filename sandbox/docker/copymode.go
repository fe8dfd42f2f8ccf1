package docker

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// volumeAPI is what copy mode calls on the engine: labelled volumes, filled and read back
// through the archive API; the sweep lists and removes the volumes of dead instances.
type volumeAPI interface {
	CopyToContainer(ctx context.Context, id string, options client.CopyToContainerOptions) (client.CopyToContainerResult, error)
	CopyFromContainer(ctx context.Context, id string, options client.CopyFromContainerOptions) (client.CopyFromContainerResult, error)
	VolumeCreate(ctx context.Context, options client.VolumeCreateOptions) (client.VolumeCreateResult, error)
	VolumeRemove(ctx context.Context, id string, options client.VolumeRemoveOptions) (client.VolumeRemoveResult, error)
	VolumeList(ctx context.Context, options client.VolumeListOptions) (client.VolumeListResult, error)
}

// copyTimeout bounds the copy back after the run's ctx ended (a stop); a tree of 10,000 files
// takes a second or two on a local engine.
const copyTimeout = 5 * time.Minute

// copied is one directory Mount in copy mode: a labelled volume filled from the host.
type copied struct {
	m      sandbox.Mount
	volume string
	// nested are the Targets of the other Mounts inside this one, relative and slash-separated:
	// they have their own volume or upload, and never come back through this one.
	nested []string
	// man records what went in, for a Return.Tree mount.
	man archive.Manifest
	// cache is the kept volume of a read-only Mount (copycache.go), nil for a volume of the
	// run's own; cacheState is 'w' while this run fills it, 'r' once it may mount it. fillSkip
	// leaves out what the kept volume already holds; pending is what it will hold.
	cache      *cacheEntry
	cacheState byte
	fillSkip   archive.SkipFunc
	pending    map[string]stamp
	// overlay: the run mounts merged, an overlay of the kept volume and upper, a volume of its
	// own that the filler mounts at upperAt (overlay.go); upperPoint is upper's path on the
	// engine's machine.
	overlay                            bool
	upper, upperPoint, upperAt, merged string
	// whole: a Sync brought d back while the run went on (copysync.go) and renewed man, so the
	// overlay's upper no longer says what changed since man: every later read is of the whole tree.
	whole bool
	// inSlot: one of the call's own directories in a reserved warm container's slot; it has no
	// volume, it is uploaded into that container at the claim (warmcopy.go).
	inSlot bool
	// unchanged: a kept volume that already holds the host's tree (its stamps and its root's
	// mode, root); the fill sends nothing.
	unchanged bool
	root      fs.FileMode
}

// copySet is the copy-mode state of one run: its volumes and how to bring changes back.
type copySet struct {
	e    *Executor
	dirs []*copied
	// files are single-file Mounts; each lies inside a directory Mount and is uploaded into
	// its volume (a read-only one without its write bits, which is all a file in a volume can
	// have; never brought back).
	files []sandbox.Mount
	// filler is kept until the copy back when a directory is an overlay: it reads the upper
	// volumes.
	filler string
	// back is held by each copy back, a Sync's or the end's: both write the Mounts' sources.
	back sync.Mutex
	// warm is the reserved warm container whose slot holds the call's own directories (inSlot);
	// nil when each directory has a volume of its own.
	warm *warmC
}

// prepareCopy creates one volume per directory Mount, fills them through a filler container
// (created, never started, removed before prepareCopy returns; none when every volume already
// holds what it must, a kept one whose tree did not change) and returns the mounts of the
// run container: each volume at its Target, read-only as the Mount says. A read-only volume
// cannot be written through the archive API, hence the filler, which mounts all of them
// writable. On error everything created is removed again. With a warm container's slot, the
// call's own directories in it get no volume: they go into that container at the claim.
func (e *Executor) prepareCopy(ctx context.Context, spec sandbox.Spec, runID string, id identity, w *warmC) (_ *copySet, _ []mount.Mount, err error) {
	cs := &copySet{e: e}
	defer func() {
		if err != nil {
			cs.cleanup(ctx)
		}
	}()
	if err := cs.plan(spec.Mounts); err != nil {
		return nil, nil, &sandbox.LaunchError{Op: "docker copy", Err: err}
	}
	slot := ""
	if w != nil && e.warmFits(cs, w, id) {
		slot, cs.warm = w.slot, w
	}
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelRun], labels[LabelInstance] = runID, e.instance
	if err := cs.volumes(ctx, runID, id, slot, labels); err != nil {
		return nil, nil, err
	}
	if cs.needsFiller() {
		if err := cs.fillAll(ctx, runID, id, labels); err != nil {
			return nil, nil, err
		}
	}
	for _, d := range cs.dirs {
		d.settle(true)
	}
	overlays := false
	for i, d := range cs.dirs {
		if d.overlay {
			overlays = true
			if err := e.mergeOverlay(ctx, d, runID, i, labels); err != nil {
				return nil, nil, err
			}
		}
	}
	if !overlays && cs.filler != "" {
		e.remove(ctx, cs.filler)
		cs.filler = ""
	}
	return cs, cs.volumeMounts(true), nil
}

// volumes gives each directory Mount its volume: its kept one (brought up to date by the fill,
// with an overlay's upper volume for a writable tree), else one of its own; none for the call's
// own directories in a warm container's slot.
func (cs *copySet) volumes(ctx context.Context, runID string, id identity, slot string, labels map[string]string) error {
	e := cs.e
	for i, d := range cs.dirs {
		if d.inSlot = perCallMount(d.m, slot); d.inSlot {
			continue
		}
		e.wantsOverlay(ctx, d)
		if ent := e.claimCache(d, id); ent != nil {
			d.cache, d.cacheState = ent, 'w'
			var err error
			if d.fillSkip, err = e.prepareCached(ctx, d, runID, i, labels); err != nil {
				return err
			}
			if d.overlay {
				if err := e.prepareUpper(ctx, d, runID, i, labels); err != nil {
					return err
				}
			}
			continue
		}
		d.overlay = false // its kept volume is busy: a volume of its own
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		v, err := e.cli.VolumeCreate(vctx, client.VolumeCreateOptions{
			Name:   "cline-mcp-" + runID + "-" + strconv.Itoa(i),
			Labels: labels,
		})
		cancel()
		if err != nil {
			return e.launchError("volume create", runID, err)
		}
		d.volume = v.Volume.Name
	}
	return nil
}

// fillAll creates the filler (kept in cs.filler: cleanup removes it) and writes every volume
// through it: the trees, the overlays' upper layers, the single files.
func (cs *copySet) fillAll(ctx context.Context, runID string, id identity, labels map[string]string) error {
	e, u := cs.e, id.user
	fillerLabels := maps.Clone(labels)
	fillerLabels[labelRole] = "filler"
	fcfg := neverStarted(e.image)
	fcfg.Labels = fillerLabels
	filler, err := e.createLabelled(ctx, runID, fcfg,
		// The filler's user namespace is the run's: files it extracts for uid u are u's in the
		// run too (rootless Podman's keep-id maps ids differently from its default).
		&container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}, Mounts: cs.volumeMounts(false),
			UsernsMode: container.UsernsMode(id.userns)})
	if err != nil {
		return err
	}
	cs.filler = filler
	for _, d := range cs.dirs {
		if d.inSlot {
			continue
		}
		if err := cs.fill(ctx, filler, d, u); err != nil {
			return err
		}
		if d.overlay {
			if err := e.fillUpper(ctx, filler, d, u); err != nil {
				return e.copyError(ctx, "prepare the overlay of "+d.m.Source, filler, err)
			}
		}
	}
	for _, f := range cs.files {
		if cs.enclosing(f.Target).inSlot {
			continue
		}
		dir, base := path.Split(f.Target)
		if err := e.upload(ctx, filler, dir, func(tw *tar.Writer) error { return archive.WriteFile(tw, base, f.Source, u.owner(), f.ReadOnly) }); err != nil {
			return e.copyError(ctx, "copy "+f.Source+" into the container", filler, err)
		}
	}
	return nil
}

// needsFiller reports whether a volume must be written before the run: a tree that is not in a
// warm container's slot nor a kept volume that holds it already, an overlay, a single file
// outside a slot.
func (cs *copySet) needsFiller() bool {
	for _, d := range cs.dirs {
		if !d.inSlot && !(d.cache != nil && d.unchanged && !d.overlay) {
			return true
		}
	}
	for _, f := range cs.files {
		if !cs.enclosing(f.Target).inSlot {
			return true
		}
	}
	return false
}

// owner is u as the owner of the entries of an archive going in.
func (u runUser) owner() archive.Owner { return archive.Owner{UID: u.uid, GID: u.gid} }

// labelRole tells the filler container apart from the run container in listings.
const labelRole = "cline-mcp.role"

// plan sorts the Mounts into volumes and single files and works out which lie inside which.
func (cs *copySet) plan(ms []sandbox.Mount) error {
	for _, m := range ms {
		m.Target = path.Clean(m.Target)
		if m.Target == "/" {
			return errors.New("copy mode cannot fill the container's root directory")
		}
		fi, err := os.Stat(m.Source)
		if err != nil {
			return fmt.Errorf("mount %s: %w", m.Source, err)
		}
		if fi.IsDir() {
			cs.dirs = append(cs.dirs, &copied{m: m})
		} else {
			cs.files = append(cs.files, m)
		}
	}
	// Outer directories first, so a nested volume's mount point exists when it is filled.
	slices.SortFunc(cs.dirs, func(a, b *copied) int { return strings.Compare(a.m.Target, b.m.Target) })
	for _, f := range cs.files {
		if cs.enclosing(f.Target) == nil {
			return fmt.Errorf("mount %s: a single file can be copied only into a directory that is mounted too", f.Source)
		}
	}
	for _, d := range cs.dirs {
		for _, o := range cs.dirs {
			if o != d && within(o.m.Target, d.m.Target) {
				d.nested = append(d.nested, rel(d.m.Target, o.m.Target))
			}
		}
		for _, f := range cs.files {
			if within(f.Target, d.m.Target) {
				d.nested = append(d.nested, rel(d.m.Target, f.Target))
			}
		}
	}
	return nil
}

// enclosing is the innermost directory mount that holds target.
func (cs *copySet) enclosing(target string) *copied {
	var best *copied
	for _, d := range cs.dirs {
		if within(target, d.m.Target) && (best == nil || len(d.m.Target) > len(best.m.Target)) {
			best = d
		}
	}
	return best
}

// within reports whether p lies strictly below dir (container paths).
func within(p, dir string) bool {
	return p != dir && strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

func rel(dir, p string) string { return strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")+"/") }

// volumeMounts are the volumes at their Targets: writable for the filler, as the Mounts say
// for the run. A directory in a warm container's slot is not the filler's; for the run it is a
// volume without a name, which only the warm claim's shape (which leaves it out) ever sees.
func (cs *copySet) volumeMounts(forRun bool) []mount.Mount {
	out := make([]mount.Mount, 0, len(cs.dirs))
	for _, d := range cs.dirs {
		if d.inSlot && !forRun {
			continue
		}
		src := d.volume
		if forRun && d.overlay {
			src = d.merged
		}
		out = append(out, mount.Mount{Type: mount.TypeVolume, Source: src, Target: d.m.Target, ReadOnly: forRun && d.m.ReadOnly})
		if !forRun && d.overlay {
			out = append(out, mount.Mount{Type: mount.TypeVolume, Source: d.upper, Target: d.upperAt})
		}
	}
	return out
}

// fill uploads a directory Mount's tree into its volume, then the volume root's owner and mode
// (an entry uploaded to the parent: Docker applies the root's metadata only that way, Podman
// resolves the parent outside the volume and merely creates a directory in the filler).
func (cs *copySet) fill(ctx context.Context, filler string, d *copied, u runUser) error {
	e := cs.e
	skip := archive.Under(d.nested)
	if d.fillSkip != nil {
		skip = d.fillSkip
	}
	var noRecord archive.SkipFunc
	switch {
	case d.cache != nil: // d.man is what the kept volume holds; the fill updates it
		noRecord = archive.HasGitPart
	case !d.m.ReadOnly && d.m.Return.Tree:
		d.man = archive.Manifest{}
		noRecord = archive.HasGitPart
	}
	err := e.upload(ctx, filler, d.m.Target, func(tw *tar.Writer) error {
		return archive.WriteTree(tw, d.m.Source, u.owner(), skip, noRecord, d.man)
	})
	if err != nil {
		return e.copyError(ctx, "copy "+d.m.Source+" into the container", filler, err)
	}
	fi, err := os.Stat(d.m.Source)
	if err != nil {
		return &sandbox.LaunchError{Op: "docker copy", Err: err}
	}
	parent, base := path.Split(d.m.Target)
	err = e.upload(ctx, filler, parent, func(tw *tar.Writer) error { return archive.WriteDirEntry(tw, base, fi.Mode(), u.owner()) })
	if err != nil {
		return e.copyError(ctx, "set the owner of "+d.m.Target+" in the container", filler, err)
	}
	return nil
}

// upload streams the tar written by write into the container at dest.
func (e *Executor) upload(ctx context.Context, id, dest string, write func(*tar.Writer) error) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		bw := bufio.NewWriterSize(pw, 256<<10)
		tw := tar.NewWriter(bw)
		err := write(tw)
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = bw.Flush()
		}
		pw.CloseWithError(err)
		done <- err
	}()
	_, err := e.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: dest, Content: pr})
	pr.CloseWithError(errors.New("upload ended")) // a writer still running stops
	werr := <-done
	if err != nil {
		return err
	}
	return werr
}

// copyError classifies a failed archive call of the copy: the call's end (ctx), the engine
// gone, or a launch failure saying what could not be copied.
func (e *Executor) copyError(ctx context.Context, op, id string, err error) error {
	var le *sandbox.LaunchError
	switch {
	case errors.As(err, &le):
		return err
	case ctx.Err() != nil:
		return fmt.Errorf("%s: %w", op, ctx.Err())
	case client.IsErrConnectionFailed(err):
		return e.launchError(op, id, err)
	}
	return &sandbox.LaunchError{Op: "docker copy", Err: fmt.Errorf("%s: %w", op, err),
		Hint: "copy mode needs the engine's archive API; --docker-mounts bind avoids copying when the engine sees this machine's paths"}
}

// copyBack brings back what the Mounts' Return names from the exited run container. It runs
// after a stop too (a bind mount would have the changes of a stopped run as well), on its own
// timeout. The first failure ends it; each Mount is all or nothing.
func (cs *copySet) copyBack(ctx context.Context, id string) error {
	cs.back.Lock()
	defer cs.back.Unlock()
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), copyTimeout)
	defer cancel()
	for _, d := range cs.dirs {
		if err := cs.mountBack(bctx, id, d); err != nil {
			return err
		}
	}
	return nil
}

// mountBack brings back what d's Return names (nothing for a read-only Mount).
func (cs *copySet) mountBack(ctx context.Context, id string, d *copied) error {
	if d.m.ReadOnly || d.m.Return.IsZero() {
		return nil
	}
	if d.m.Return.Tree {
		if err := cs.treeBack(ctx, id, d); err != nil {
			return &sandbox.CopyBackError{Source: d.m.Source, Err: err}
		}
		return nil
	}
	for _, f := range d.m.Return.Files {
		if err := cs.fileBack(ctx, id, d, f); err != nil {
			return &sandbox.CopyBackError{Source: filepath.Join(d.m.Source, filepath.FromSlash(f)), Err: err}
		}
	}
	return nil
}

// treeBack downloads a Return.Tree mount, validates and stages it, then applies it to Source.
func (cs *copySet) treeBack(ctx context.Context, id string, d *copied) error {
	res, err := cs.e.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: d.m.Target})
	if err != nil {
		return fmt.Errorf("download %s: %w", d.m.Target, err)
	}
	defer res.Content.Close()
	if !res.Stat.Mode.IsDir() {
		return archive.Refusef("%s is no longer a directory in the container", d.m.Target)
	}
	// The stage lives in the temp dir; what it may hold is bounded per copy back (the
	// executor's limits) and for all copy backs in flight (its staging budget).
	stage, err := archive.NewStage("", cs.e.staging)
	if err != nil {
		return err
	}
	defer stage.Close()
	skip := func(r string) bool { return archive.HasGitPart(r) || archive.Under(d.nested)(r) }
	if d.overlay && !d.whole {
		return cs.overlayBack(ctx, id, d, stage, skip)
	}
	plan, err := archive.ReadBack(res.Content, path.Base(d.m.Target), d.man, skip, stage, cs.e.backLimits)
	if err != nil {
		return err
	}
	return plan.Apply(d.m.Source)
}

// fileBack brings one Return.Files path back as a regular file, or removes it from Source when
// the run removed it or made it something else.
func (cs *copySet) fileBack(ctx context.Context, id string, d *copied, f string) error {
	r := path.Clean(f)
	if !filepath.IsLocal(filepath.FromSlash(r)) || archive.HasGitPart(r) {
		return fmt.Errorf("return path %q: must be a plain relative path", f)
	}
	res, err := cs.e.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path.Join(d.m.Target, r)})
	if isNotFound(err) {
		return archive.PutFile(d.m.Source, filepath.FromSlash(r), nil, false)
	}
	if err != nil {
		return fmt.Errorf("download %s: %w", r, err)
	}
	defer res.Content.Close()
	data, ok, err := archive.ReadSingle(res.Content)
	if err != nil {
		return err
	}
	return archive.PutFile(d.m.Source, filepath.FromSlash(r), data, ok)
}

// cleanup removes the run's volumes (the containers using them must be gone), and lets the next
// call fill the kept ones. It ignores ctx's end; "not found" counts as removed.
func (cs *copySet) cleanup(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if cs.filler != "" {
		cs.e.remove(ctx, cs.filler)
	}
	for _, d := range cs.dirs {
		// The overlay before its layers; "not found": it was never made.
		for _, v := range []string{d.merged, d.upper} {
			if v != "" {
				_, _ = cs.e.cli.VolumeRemove(rctx, v, client.VolumeRemoveOptions{Force: true})
			}
		}
		if d.cache != nil {
			d.release() // kept for the next call
			continue
		}
		if d.volume != "" {
			_, _ = cs.e.cli.VolumeRemove(rctx, d.volume, client.VolumeRemoveOptions{Force: true})
		}
	}
}
