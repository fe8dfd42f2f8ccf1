package docker

import (
	"archive/tar"
	"context"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// In copy mode a writable tree that comes back whole (apply_cline_edits' checkout) is an overlay
// on the engine: its lower layer is the tree's kept volume (copycache.go: exactly what the host
// sent, filled incrementally, only ever read by the overlay), its upper layer a new volume of
// the call. The run sees the merged tree as an ordinary writable directory; everything it
// writes lands in the upper layer, so the copy back downloads only what the run changed (and
// its whiteouts), never the whole tree, and the next call starts from the untouched lower
// layer. The local volume driver mounts the overlay in the engine's own mount namespace, so
// this works where the engine cannot see this machine's files (dind, a remote engine). An
// engine that cannot (rootless, Podman, an old kernel) is found by a probe at the first such
// call, and its calls copy the tree whole as before.

// upperRoot is where the filler mounts a call's upper volumes: <upperRoot>/<i>/u is the upper
// directory, <i>/w the overlay's work directory (both on the one volume, as the kernel needs).
const upperRoot = "/cline-mcp-upper"

// overlayOptions are the overlay's mount options: no redirects and no metadata-only copies, so
// every change lies whole in the upper directory; no index.
func overlayOptions(lower, upper string) (string, error) {
	for _, p := range []string{lower, upper} {
		if !path.IsAbs(p) || strings.ContainsAny(p, ",:\x00\n") {
			return "", fmt.Errorf("volume mount point %q cannot be an overlay layer", p)
		}
	}
	return "lowerdir=" + lower + ",upperdir=" + upper + "/u,workdir=" + upper + "/w,redirect_dir=off,metacopy=off,index=off", nil
}

// overlayUsable reports whether writable trees may be overlays on this engine, probing once.
func (e *Executor) overlayUsable(ctx context.Context) bool {
	c := &e.cache
	c.overlayMu.Lock()
	defer c.overlayMu.Unlock()
	if c.overlay == 0 {
		c.overlay = 'n'
		if err := e.probeOverlay(ctx); err != nil {
			c.overlayWhy = "writable trees are copied whole: the engine cannot mount an overlay of two volumes (" + err.Error() + ")"
		} else {
			c.overlay, c.overlayWhy = 'y', "writable trees are overlays of the kept volume: only what a run changes comes back"
		}
	}
	return c.overlay == 'y'
}

// probeOverlay makes an overlay of two new volumes, writes a file through it and looks for the
// file in the upper volume. Everything it makes is removed before it returns.
func (e *Executor) probeOverlay(ctx context.Context) (err error) {
	id, err := newRunID()
	if err != nil {
		return err
	}
	labels := map[string]string{LabelRun: id, LabelInstance: e.instance}
	var vols []string
	defer func() {
		e.removeRun(ctx, id)
		for i := len(vols) - 1; i >= 0; i-- {
			e.removeVolume(ctx, vols[i])
		}
	}()
	newVol := func(name string, opts map[string]string) (string, error) {
		v, err := e.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: "cline-mcp-" + id + "-" + name, Labels: labels, Driver: driverFor(opts), DriverOpts: opts})
		if err != nil {
			return "", err
		}
		vols = append(vols, v.Volume.Name)
		return v.Volume.Mountpoint, nil
	}
	lower, err := newVol("lower", nil)
	if err != nil {
		return err
	}
	upper, err := newVol("upper", nil)
	if err != nil {
		return err
	}
	holder, err := e.neverStartedWith(ctx, id, mount.Mount{Type: mount.TypeVolume, Source: vols[1], Target: upperRoot})
	if err != nil {
		return err
	}
	if err := e.upload(ctx, holder, upperRoot, func(tw *tar.Writer) error { return upperDirs(tw, 0o755, archive.Owner{}) }); err != nil {
		return err
	}
	opts, err := overlayOptions(lower, upper)
	if err != nil {
		return err
	}
	if _, err := newVol("merged", map[string]string{"type": "overlay", "device": "overlay", "o": opts}); err != nil {
		return err
	}
	writer, err := e.neverStartedWith(ctx, id, mount.Mount{Type: mount.TypeVolume, Source: vols[2], Target: probeTarget})
	if err != nil {
		return err
	}
	if err := e.upload(ctx, writer, probeTarget, func(tw *tar.Writer) error {
		return tw.WriteHeader(&tar.Header{Name: "probe", Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX})
	}); err != nil {
		return err
	}
	_, err = e.cli.ContainerStatPath(ctx, holder, client.ContainerStatPathOptions{Path: upperRoot + "/u/probe"})
	return err
}

func driverFor(opts map[string]string) string {
	if opts == nil {
		return ""
	}
	return "local"
}

// neverStartedWith creates a never-started container of the image with the given mounts.
func (e *Executor) neverStartedWith(ctx context.Context, runID string, ms ...mount.Mount) (string, error) {
	return e.createLabelled(ctx, runID, neverStarted(e.image),
		&container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}, Mounts: ms})
}

// upperDirs writes the upper directory u (the tree root's mode and owner: the merged tree's
// root is the upper one) and the work directory w.
func upperDirs(tw *tar.Writer, rootMode fs.FileMode, o archive.Owner) error {
	if err := archive.WriteDirEntry(tw, "u", rootMode, o); err != nil {
		return err
	}
	return archive.WriteDirEntry(tw, "w", 0o700, o)
}

// upperTarget is where the filler mounts the i-th directory's upper volume.
func upperTarget(i int) string { return upperRoot + "/" + strconv.Itoa(i) }

// wantsOverlay marks a writable Mount that comes back whole as an overlay, when the engine can.
func (e *Executor) wantsOverlay(ctx context.Context, d *copied) {
	d.overlay = !d.m.ReadOnly && d.m.Return.Tree && e.overlayUsable(ctx)
}

// prepareUpper creates d's upper volume (mounted by the filler at upperTarget(i)).
func (e *Executor) prepareUpper(ctx context.Context, d *copied, runID string, i int, labels map[string]string) error {
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	v, err := e.cli.VolumeCreate(vctx, client.VolumeCreateOptions{Name: "cline-mcp-" + runID + "-" + strconv.Itoa(i) + "-upper", Labels: labels})
	if err != nil {
		return e.launchError("volume create", runID, err)
	}
	d.upper, d.upperPoint, d.upperAt = v.Volume.Name, v.Volume.Mountpoint, upperTarget(i)
	return nil
}

// fillUpper writes d's upper and work directories through the filler.
func (e *Executor) fillUpper(ctx context.Context, filler string, d *copied, u runUser) error {
	fi, err := os.Stat(d.m.Source)
	if err != nil {
		return err
	}
	return e.upload(ctx, filler, d.upperAt, func(tw *tar.Writer) error { return upperDirs(tw, fi.Mode(), u.owner()) })
}

// mergeOverlay creates d's overlay volume over its kept volume (filled and read-locked) and its
// upper volume: the volume the run mounts at the Mount's Target.
func (e *Executor) mergeOverlay(ctx context.Context, d *copied, runID string, i int, labels map[string]string) error {
	opts, err := overlayOptions(d.cache.mountpoint, d.upperPoint)
	if err != nil {
		return e.launchError("overlay", runID, err)
	}
	vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	v, err := e.cli.VolumeCreate(vctx, client.VolumeCreateOptions{
		Name: "cline-mcp-" + runID + "-" + strconv.Itoa(i) + "-merged", Labels: maps.Clone(labels),
		Driver: "local", DriverOpts: map[string]string{"type": "overlay", "device": "overlay", "o": opts},
	})
	if err != nil {
		return e.launchError("volume create", runID, err)
	}
	d.merged = v.Volume.Name
	return nil
}

// overlayBack reads what the run changed from d's upper volume (through the filler, never
// started) and applies it to the Mount's Source; whether a lower path still shows is asked of
// the run's exited container, which has the merged tree at the Target.
func (cs *copySet) overlayBack(ctx context.Context, runContainer string, d *copied, stage *archive.Stage, skip archive.SkipFunc) error {
	e := cs.e
	res, err := e.cli.CopyFromContainer(ctx, cs.filler, client.CopyFromContainerOptions{SourcePath: d.upperAt + "/u"})
	if err != nil {
		return fmt.Errorf("download the changes of %s: %w", d.m.Target, err)
	}
	defer res.Content.Close()
	visible := func(rel string) (bool, error) {
		_, err := e.cli.ContainerStatPath(ctx, runContainer, client.ContainerStatPathOptions{Path: path.Join(d.m.Target, rel)})
		if isNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
	plan, err := archive.ReadBackUpper(res.Content, "u", d.man, skip, stage, e.backLimits, visible)
	if err != nil {
		return err
	}
	return plan.Apply(d.m.Source)
}
