package service

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	sgit "github.com/cline-mcp/cline-mcp/sandbox/git"
)

// local is how the service's own repositories are read: only the file protocol, to a path it
// made itself.
var local = append(append([]string{}, noConfig...), "GIT_ALLOW_PROTOCOL=file")

// unbundle decodes spec.Bundle into a new bare repository: the bundle verified (complete: it
// needs no commit the service lacks) and spec.Commit fetched from it. cleanup removes both.
func (r *Repos) unbundle(ctx context.Context, base string, spec Repository) (string, func(), error) {
	raw, err := base64.StdEncoding.DecodeString(spec.Bundle)
	if err != nil {
		return "", nil, fmt.Errorf("repository.bundle is not base64: %v", err)
	}
	if int64(len(raw)) > r.maxBundle() {
		return "", nil, fmt.Errorf("repository.bundle is larger than this service's limit of %d bytes", r.maxBundle())
	}
	tmp := filepath.Join(base, "bundles", randomName())
	cleanup := func() { _ = os.RemoveAll(tmp) }
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", nil, err
	}
	file, repo := filepath.Join(tmp, "sent.bundle"), filepath.Join(tmp, "repo.git")
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		cleanup()
		return "", nil, err
	}
	if err := r.initBare(ctx, repo); err != nil {
		cleanup()
		return "", nil, err
	}
	if _, err := r.Git.Run(ctx, sgit.Opts{Dir: repo, Env: local}, "bundle", "verify", "--quiet", "--", file); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("repository.bundle is not a complete git bundle: %s", gitMessage(err))
	}
	heads, err := r.Git.Run(ctx, sgit.Opts{Dir: repo, Env: local}, "bundle", "list-heads", "--", file)
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("repository.bundle is not a complete git bundle: %s", gitMessage(err))
	}
	refspecs := []string{"+refs/*:refs/sent/*"}
	if bytes.Contains(append([]byte("\n"), heads...), []byte(" HEAD\n")) { // git bundle create … HEAD
		refspecs = append(refspecs, "+HEAD:refs/sent-head")
	}
	args := append(append([]string{}, safeFetch...), "-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
		"fetch", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--", file)
	args = append(args, refspecs...)
	if err := r.bounded(ctx, repo, local, args); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("repository.bundle could not be read: %s", gitMessage(err))
	}
	for _, c := range []string{spec.Commit, spec.Snapshot} {
		if c != "" && !r.has(ctx, repo, c) {
			cleanup()
			return "", nil, fmt.Errorf("repository.bundle does not hold commit %s under any of its refs", c)
		}
	}
	return repo, cleanup, nil
}

// checkout clones commit from src (a repository of the service) into a new directory under
// base/checkouts: no hooks, no template, the commit detached, bounded in size and time. With a
// snapshot, the work tree is then the snapshot's tree and the index stays commit's: its
// differences are the checkout's uncommitted changes (new files untracked).
func (r *Repos) checkout(ctx context.Context, base, src, commit, snapshot string) (*Checkout, error) {
	parent := filepath.Join(base, "checkouts", randomName())
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, err
	}
	c := &Checkout{Dir: filepath.Join(parent, "repo")}
	steps := [][]string{
		{"init", "--quiet", "--template=", "--", c.Dir},
		append(append([]string{}, safeFetch...), "-C", c.Dir, "-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
			"fetch", "--quiet", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head", "--", src, commit+":refs/heads/cline-mcp"),
		{"-C", c.Dir, "checkout", "--quiet", "--detach", commit},
	}
	if snapshot != "" {
		steps[1] = append(steps[1][:len(steps[1])-1], commit+":refs/heads/cline-mcp", snapshot+":refs/cline-mcp/snapshot")
		steps = append(steps, []string{"-C", c.Dir, "read-tree", "-u", "--reset", snapshot},
			[]string{"-C", c.Dir, "reset", "--quiet", "--mixed", commit},
			[]string{"-C", c.Dir, "update-ref", "-d", "refs/cline-mcp/snapshot"})
	}
	// A checkout may be larger than the packed objects it came from, within bounds: four
	// times what one fetch may add.
	for _, args := range steps {
		if err := r.boundedBy(ctx, parent, 4*r.maxFetch(), sgit.Opts{Env: local}, args); err != nil {
			c.Remove()
			return nil, fmt.Errorf("checking out commit %s: %s", commit, gitMessage(err))
		}
	}
	return c, nil
}

// gitMessage is git's own message of err, without the command line.
func gitMessage(err error) string {
	if ge, ok := err.(*sgit.GitError); ok && ge.Stderr != "" {
		return ge.Stderr
	}
	return err.Error()
}

// Sweep removes every tenant's checkouts and bundles: those of calls that ended with the
// service (call it before serving). Mirrors are kept.
func (r *Repos) Sweep() {
	tenants, _ := os.ReadDir(r.Dir)
	for _, t := range tenants {
		if t.IsDir() {
			_ = os.RemoveAll(filepath.Join(r.Dir, t.Name(), "checkouts"))
			_ = os.RemoveAll(filepath.Join(r.Dir, t.Name(), "bundles"))
		}
	}
}
