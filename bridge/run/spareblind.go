package run

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/settings"
)

// deadBase is the provider address of a spare's warm-up whose key is inside its container:
// port 0 of the container's own loopback, where nothing can listen, so the CLI's request is
// refused before a byte of it is sent (the real CLI 3.0.65 then retries for about a minute; the
// engine cancels the turn well before: bridge/run/engine warmup.go).
const deadBase = "http://127.0.0.1:0/v1"

// blinder is engine.Spare.Blind for a spare whose provider key is inside its container and
// whose provider honours a baseUrl (cline.KeyAuthOf), or nil when it gets none. own is the
// spare's settings copy, which the host has just written and no container has seen; rel is its
// providers.json. Blind(true) points the file at deadBase, Blind(false) puts the host's bytes
// back; each write replaces the file through os.Root (no link followed) with bytes recorded
// now, never with anything read from the directory later.
func blinder(own, rel, target string) (func(on bool) error, error) {
	if _, ok := cline.KeyAuthOf(target); !ok {
		return nil, nil
	}
	path := filepath.Join(own, rel)
	info, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !info.Mode().IsRegular() {
		return nil, nil // no settings file: the key came from the environment, no baseUrl to redirect
	}
	if err != nil {
		return nil, err
	}
	real, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blinded, err := settings.Blinded(real, target, deadBase)
	if err != nil {
		return nil, nil // nothing to redirect: no warm-up
	}
	mode := info.Mode().Perm()
	return func(on bool) error {
		data := real
		if on {
			data = blinded
		}
		return replaceIn(own, rel, data, mode)
	}, nil
}

// replaceIn writes data to rel under dir as a new file renamed over whatever is there.
func replaceIn(dir, rel string, data []byte, mode fs.FileMode) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(rel), ".cline-mcp-"+hex.EncodeToString(b))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, rel)
	}
	if werr != nil {
		_ = root.Remove(tmp)
	}
	return werr
}
