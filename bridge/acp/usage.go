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
// the only place the CLI reports it (docs/acp.md §9): call it after each turn and subtract. The file is
// opened through an os.Root at dataDir, so neither the id nor a symbolic link planted by the run
// reaches outside it, only a regular file is read (never a FIFO or device), and at most maxManifest
// bytes.
func ReadUsage(dataDir, id string) (*cline.Usage, error) {
	if !validSessionID(id) {
		return nil, fmt.Errorf("read usage: invalid session id %q", capTo(id, 80))
	}
	root, err := os.OpenRoot(dataDir)
	if err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", id, err)
	}
	defer root.Close()
	// Non-blocking, then only a regular file: a FIFO a container planted there would otherwise
	// block the open (and the call) for good; the poll during a turn reads it too.
	f, err := root.OpenFile(ManifestPath(id), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", id, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("read usage of %s: the manifest is not a regular file", id)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", id, err)
	}
	if len(b) > maxManifest {
		return nil, fmt.Errorf("read usage of %s: manifest larger than %d bytes", id, maxManifest)
	}
	return UsageFromManifest(b)
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
