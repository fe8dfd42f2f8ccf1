package kubernetes

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/archive"
)

// copied is one Mount of a run: what went in (man, for a writable Return.Tree) and the targets
// of other mounts below it (nested: left out both ways).
type copied struct {
	m      sandbox.Mount
	file   bool // a single regular file (read-only), mounted from its emptyDir by subPath
	nested []string
	man    archive.Manifest
}

// copyErr is a copy back that failed for one mount's source.
type copyErr struct {
	source string
	err    error
}

func (c *copyErr) Error() string { return c.source + ": " + c.err.Error() }

func (e *Executor) planCopies(ms []sandbox.Mount) ([]*copied, error) {
	out := make([]*copied, 0, len(ms))
	for _, m := range ms {
		if _, err := cleanTarget(m.Target); err != nil {
			return nil, err
		}
		fi, err := os.Stat(m.Source)
		if err != nil {
			return nil, fmt.Errorf("kubernetes executor: mount %s: %w", m.Source, err)
		}
		c := &copied{m: m, file: !fi.IsDir()}
		if c.file && (!fi.Mode().IsRegular() || !m.ReadOnly || !m.Return.IsZero()) {
			return nil, fmt.Errorf("kubernetes executor: mount %s: a file is copied into a pod only read-only, without a return", m.Source)
		}
		for _, o := range ms {
			if o.Target != m.Target && strings.HasPrefix(o.Target, strings.TrimSuffix(m.Target, "/")+"/") {
				c.nested = append(c.nested, strings.TrimPrefix(o.Target, strings.TrimSuffix(m.Target, "/")+"/"))
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// fill sends the mounts' trees, one archive after the other in podFor's order, to the fill
// container's stdin (pods/attach) once it runs.
func (e *Executor) fill(ctx context.Context, pod string, cs []*copied) error {
	if len(cs) == 0 {
		return nil
	}
	if _, err := e.waitFor(ctx, pod, func(p *corev1.Pod) bool { return initRunning(p, fillName) }); err != nil {
		return err
	}
	return e.sendMounts(ctx, pod, "attach", &corev1.PodAttachOptions{Container: fillName, Stdin: true, Stderr: true}, cs)
}

// sendMounts streams the mounts' archives to the stdin of pods/<sub> (opts): the fill
// container's attach, or a warm pod's keeper's exec of the helper's untar.
func (e *Executor) sendMounts(ctx context.Context, pod, sub string, opts runtime.Object, cs []*copied) error {
	for _, c := range cs {
		if !c.m.ReadOnly && c.m.Return.Tree {
			c.man = archive.Manifest{}
		}
	}
	pr, pw := io.Pipe()
	go func() {
		var err error
		for _, c := range cs {
			if err = writeMount(pw, c); err != nil {
				break
			}
		}
		pw.CloseWithError(err)
	}()
	var stderr bytes.Buffer
	if err := e.stream(ctx, pod, sub, opts, remotecommand.StreamOptions{Stdin: pr, Stderr: &stderr}); err != nil {
		pr.CloseWithError(err)
		return e.apiError("create pods/"+sub, fmt.Errorf("fill: %w %s", err, stderr.String()))
	}
	return nil
}

// writeMount writes one mount's archive (a tree, or its one file) to w, recording a writable
// tree's manifest for the copy back.
func writeMount(w io.Writer, c *copied) error {
	tw := tar.NewWriter(w)
	var noRecord archive.SkipFunc
	if c.man != nil {
		noRecord = archive.HasGitPart
	}
	var err error
	if c.file {
		err = archive.WriteFile(tw, path.Base(c.m.Target), c.m.Source, archive.Owner{}, true)
	} else {
		err = archive.WriteTree(tw, c.m.Source, archive.Owner{}, archive.Under(c.nested), noRecord, c.man)
	}
	if err != nil {
		return fmt.Errorf("copy %s in: %w", c.m.Source, err)
	}
	return tw.Close()
}

func initRunning(p *corev1.Pod, name string) bool {
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Name == name && cs.State.Running != nil {
			return true
		}
	}
	return false
}

// copyBack brings back what each writable mount's Return names, from the keeper sidecar, through
// the hostile-archive checks (sandbox/archive): all or nothing per mount.
func (e *Executor) copyBack(ctx context.Context, pod string, cs []*copied) *copyErr {
	for _, c := range cs {
		if c.m.ReadOnly || c.m.Return.IsZero() {
			continue
		}
		if c.m.Return.Tree {
			if err := e.treeBack(ctx, pod, c); err != nil {
				return &copyErr{c.m.Source, err}
			}
		}
		for _, f := range c.m.Return.Files {
			if err := e.fileBack(ctx, pod, c, f); err != nil {
				return &copyErr{c.m.Source, err}
			}
		}
	}
	return nil
}

func (e *Executor) treeBack(ctx context.Context, pod string, c *copied) error {
	stage, err := archive.NewStage("", nil)
	if err != nil {
		return err
	}
	defer stage.Close()
	skip := func(r string) bool { return archive.HasGitPart(r) || archive.Under(c.nested)(r) }
	var plan *archive.Plan
	err = e.exec(ctx, pod, c.m.Target, func(r io.Reader) error {
		var err error
		plan, err = archive.ReadBack(r, path.Base(c.m.Target), c.man, skip, stage, e.limit)
		return err
	})
	if err != nil {
		return err
	}
	return plan.Apply(c.m.Source)
}

func (e *Executor) fileBack(ctx context.Context, pod string, c *copied, f string) error {
	if !filepath.IsLocal(filepath.FromSlash(f)) || archive.HasGitPart(f) {
		return archive.Refusef("%q is not a plain path below %s", f, c.m.Target)
	}
	var data []byte
	var ok bool
	err := e.exec(ctx, pod, path.Join(c.m.Target, f), func(r io.Reader) error {
		var err error
		data, ok, err = archive.ReadSingle(r)
		return err
	})
	if err != nil {
		return err
	}
	return archive.PutFile(c.m.Source, filepath.FromSlash(f), data, ok)
}

// exec runs `helper tar target` in the keeper and hands its stdout to read.
func (e *Executor) exec(ctx context.Context, pod, target string, read func(io.Reader) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		opts := &corev1.PodExecOptions{Container: keeperName, Command: []string{e.cfg.Helper, "tar", target}, Stdout: true, Stderr: true}
		err := e.stream(ctx, pod, "exec", opts, remotecommand.StreamOptions{Stdout: pw, Stderr: &stderr})
		pw.CloseWithError(err)
		done <- err
	}()
	rerr := read(pr)
	if rerr != nil {
		cancel() // a refused archive: stop the stream instead of draining what it declared
	}
	pr.CloseWithError(io.ErrClosedPipe)
	if err := <-done; err != nil && rerr == nil {
		return e.apiError("create pods/exec", fmt.Errorf("copy back %s: %w %s", target, err, stderr.String()))
	}
	return rerr
}

// stream opens pods/<sub> of pod with opts and runs it to the end.
func (e *Executor) stream(ctx context.Context, pod, sub string, opts runtime.Object, so remotecommand.StreamOptions) error {
	req := e.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(e.cfg.Namespace).Name(pod).
		SubResource(sub).VersionedParams(opts, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(e.rest, "POST", req.URL())
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, so)
}
