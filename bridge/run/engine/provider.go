package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
)

// Provider is what ACP needs of the provider block a call resolves.
type Provider struct{ ID, Key, Model string }

// readProvider reads the block of the provider a call resolves from a providers.json: the override,
// else lastUsedProvider, else "cline" (the CLI's own order). Reading is best effort and bounded: a
// missing or unusable file gives the id alone, and the CLI then says what it lacks.
func readProvider(path, override string) Provider {
	p := Provider{ID: override}
	b, err := readBounded(path, 4<<20)
	if err != nil {
		if p.ID == "" {
			p.ID = "cline"
		}
		return p
	}
	var doc struct {
		LastUsed  string `json:"lastUsedProvider"`
		Providers map[string]struct {
			Settings struct {
				APIKey string `json:"apiKey"`
				Model  string `json:"model"`
				Auth   struct {
					APIKey string `json:"apiKey"`
				} `json:"auth"`
			} `json:"settings"`
		} `json:"providers"`
	}
	_ = json.Unmarshal(b, &doc)
	if p.ID == "" {
		p.ID = doc.LastUsed
	}
	if p.ID == "" {
		p.ID = "cline"
	}
	s := doc.Providers[p.ID].Settings
	p.Key, p.Model = s.APIKey, s.Model
	if p.Key == "" {
		p.Key = s.Auth.APIKey
	}
	return p
}

// readBounded reads a regular file of at most max bytes. It opens without blocking (a FIFO would
// otherwise block the open) and refuses anything but a regular file. Only ever called before the
// run starts, on the user's file (which may be a link: dotfiles) or a copy the host just wrote.
func readBounded(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", path, max)
	}
	return io.ReadAll(io.LimitReader(f, max))
}

// since is the usage of one turn: the session's cumulative usage now minus before the turn.
func since(now, before *cline.Usage) *cline.Usage {
	if now == nil || before == nil {
		return now
	}
	u := *now
	u.InputTokens -= before.InputTokens
	u.OutputTokens -= before.OutputTokens
	u.CacheReadTokens -= before.CacheReadTokens
	u.CacheWriteTokens -= before.CacheWriteTokens
	u.TotalCost -= before.TotalCost
	if u.InputTokens < 0 || u.OutputTokens < 0 || u.TotalCost < 0 {
		return now // the manifest went backwards: report what it says
	}
	return &u
}
