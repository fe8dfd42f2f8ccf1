package acp

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"syscall"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// maxManifest bounds the manifest ReadUsage reads.
const maxManifest = 4 << 20

// ManifestPath is where the CLI keeps a session's manifest, relative to its data dir.
func ManifestPath(id string) string { return path.Join("sessions", id, id+".json") }

// ReadUsage returns a session's cumulative usage from its manifest (metadata.usage), which is
// the only place the CLI reports it (docs/acp.md §9): call it after each turn and subtract. The
// data dir is the run's to write (a container's), so the manifest is read as ReadRegular reads.
func ReadUsage(dataDir, id string) (*cline.Usage, error) {
	if !validSessionID(id) {
		return nil, fmt.Errorf("read usage: invalid session id %q", capTo(id, 80))
	}
	b, err := ReadRegular(dataDir, ManifestPath(id), maxManifest)
	if err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", id, err)
	}
	return UsageFromManifest(b)
}

// ReadRegular is the host's read of a file a run may have written: rel is opened through an
// os.Root at dir, so neither rel nor a symbolic link planted by the run reaches outside dir; the
// file itself must not be a link (it is never followed), the open does not block (a FIFO would
// otherwise hang the call), only a regular file is read, the same one that was checked, and at
// most max bytes (more is an error).
func ReadRegular(dir, rel string, max int64) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Lstat(rel)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", rel, fi.Mode().Type())
	}
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if now, err := f.Stat(); err != nil || !now.Mode().IsRegular() || !os.SameFile(fi, now) {
		return nil, fmt.Errorf("%s was replaced while it was opened", rel)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, max)
	}
	return b, nil
}

// UsageFromManifest parses metadata.usage of a session manifest.
func UsageFromManifest(b []byte) (*cline.Usage, error) {
	var m struct {
		Metadata struct {
			Usage *cline.Usage `json:"usage"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("session manifest: %w", err)
	}
	if m.Metadata.Usage == nil {
		return nil, fmt.Errorf("session manifest: no metadata.usage")
	}
	return m.Metadata.Usage, nil
}
