package run

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/cline-mcp/cline-mcp/bridge/run/engine"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// Spare agents (bridge/run/engine spares.go) are started for the first turns of Docker and
// Kubernetes conversations whose container or pod may be kept (liveSession; a key-less one's
// too), when the server keeps warm containers (--docker-warm) or warm pods (--k8s-warm). A spare's
// run is the first turn's spec with the call's own directories replaced by fresh ones: the
// settings copy's directory, refilled from what the host wrote into it before the turn's run
// started (snapshotDir; never read after the run could change it), and a new session data dir; a
// key-less run's placeholder for the key is replaced by a new one in both. Everything else —
// image, mounts of the checkout, environment, egress, the credential the proxy lends — is the
// call's, so the spare's shape is the next such call's.

// spareMaker is the maker of a first turn's spares (engine.Turn.Spare), nil when the turn gets
// none. It records the settings copy (cp.Dir) now, before the run.
func (p *prep) spareMaker(a *attempt, spec *sandbox.Spec, cp *settings.Copy) func(sandbox.Spec) (engine.Spare, error) {
	// Spares is the server's warm containers' or warm pods' number: a server that keeps no
	// started pod waiting (a node's resources) keeps no spare pod either.
	if a.shape == "" || a.iso == sandbox.IsolationHost || !p.sess.fresh || p.r.cfg.Sessions == nil || p.r.cfg.Spares == 0 {
		return nil
	}
	copyDir, target := cp.Dir, cp.Target
	providers, err := filepath.Rel(copyDir, cp.SettingsPath)
	if err != nil || !filepath.IsLocal(providers) {
		return nil
	}
	files, err := snapshotDir(copyDir)
	if err != nil {
		p.r.log.Warn("no spare for this call's successors: its settings copy could not be recorded", "err", err)
		return nil
	}
	oldData, oldKey, tempDir, root, track := p.sess.data, a.placeholder, p.r.cfg.TempDir, p.r.cfg.Sessions.Dir, p.r.cfg.TrackDir
	return func(spec sandbox.Spec) (_ engine.Spare, err error) {
		var sp engine.Spare
		defer func() {
			if err != nil {
				sp.Own.Release()
				sp.Data.Release()
			}
		}()
		own, err := os.MkdirTemp(tempDir, "cline-mcp-agent-")
		if err != nil {
			return sp, err
		}
		sp.Own.Dir = own
		if track != nil {
			sp.Own.Untrack = track(own)
		}
		pairs := []string{copyDir, own}
		if oldKey != "" { // a key-less run's stand-in for the key: the spare gets its own
			key, err := randomPlaceholder()
			if err != nil {
				return sp, err
			}
			pairs = append(pairs, oldKey, key)
		}
		if err := files.restore(own, pairs...); err != nil {
			return sp, err
		}
		if oldKey == "" && spec.Credential == nil { // the key is inside: a warm-up must not reach the provider
			if sp.Blind, err = blinder(own, providers, target); err != nil {
				return sp, err
			}
		}
		data, err := newDataDir(root)
		if err != nil {
			return sp, err
		}
		sp.Data.Dir, sp.DataDir = data, data
		if track != nil {
			sp.Data.Untrack = track(data)
		}
		if err := os.Mkdir(filepath.Join(data, "settings"), 0o700); err != nil { // sessionMounts' mount point
			return sp, err
		}
		sp.Spec = respec(spec, strings.NewReplacer(append(pairs, oldData, data)...))
		return sp, nil
	}
}

// respec is spec with every path r names replaced: executable, arguments, environment,
// directory, mounts, labels and egress.
func respec(spec sandbox.Spec, r *strings.Replacer) sandbox.Spec {
	each := func(in []string) []string {
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = r.Replace(s)
		}
		return out
	}
	spec.Path, spec.Dir = r.Replace(spec.Path), r.Replace(spec.Dir)
	spec.Args, spec.Env, spec.Egress = each(spec.Args), each(spec.Env), each(spec.Egress)
	mounts := make([]sandbox.Mount, len(spec.Mounts))
	for i, m := range spec.Mounts {
		m.Source, m.Target = r.Replace(m.Source), r.Replace(m.Target)
		mounts[i] = m
	}
	spec.Mounts = mounts
	labels := make(map[string]string, len(spec.Labels))
	for k, v := range spec.Labels {
		labels[k] = r.Replace(v)
	}
	spec.Labels = labels
	spec.Stdin, spec.Stdout, spec.Stderr, spec.Started = nil, nil, nil, nil
	return spec
}

// dirFiles is a directory tree the host wrote: its directories and regular files.
type dirFiles []dirFile

type dirFile struct {
	rel  string
	mode fs.FileMode
	dir  bool
	data []byte
}

// snapshotDir records the tree under dir (the host's own settings copy, before any run saw it);
// anything but directories and regular files refuses it.
func snapshotDir(dir string) (dirFiles, error) {
	var out dirFiles
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case info.IsDir():
			out = append(out, dirFile{rel: rel, mode: info.Mode().Perm(), dir: true})
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out = append(out, dirFile{rel: rel, mode: info.Mode().Perm(), data: b})
		default:
			return errors.New(rel + " is neither a directory nor a regular file")
		}
		return nil
	})
	return out, err
}

// restore writes the recorded tree into dir (empty, the host's own), each old string of pairs in
// the files' contents replaced by its new one.
func (files dirFiles) restore(dir string, pairs ...string) error {
	r := strings.NewReplacer(pairs...)
	for _, f := range files {
		p := filepath.Join(dir, f.rel)
		if f.dir {
			if err := os.Mkdir(p, f.mode); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, []byte(r.Replace(string(f.data))), f.mode); err != nil {
			return err
		}
	}
	return nil
}
