package settings

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/afero"
)

// TakenKey is what TakeKey moved out of a container's copy: the provider's API key and custom
// headers, and the baseUrl the block had. Key is "" when the settings held none (the run would
// have read it from its environment).
type TakenKey struct {
	Key     string
	BaseURL string
	Headers map[string]string
}

// ErrNotKeyless says the copy's provider block cannot give its key up: it signs in with OAuth
// (an access token the CLI may refresh) or its key, baseUrl or headers are not plain strings.
var ErrNotKeyless = errors.New("the provider's settings are not a plain API key")

// TakeKey moves the API key of the copy's provider out of a container's copy before the run: its
// apiKey (and auth.apiKey) become placeholder, its custom headers go, and its baseUrl becomes
// rebase(the old baseUrl, "" for none) — the proxy's address in the run. The copy on disk and the
// base MergeAllowed diffs against are rewritten, so the placeholder and the proxy's baseUrl are
// what the run was given, never a change to bring home. A copy without the provider's block gets
// one holding only the placeholder and the baseUrl. On an error the copy is unchanged.
func (c *Copy) TakeKey(placeholder string, rebase func(old string) (string, error)) (TakenKey, error) {
	if c.host {
		return TakenKey{}, errors.New("settings: a host run's copy keeps its key")
	}
	doc := newObject()
	if c.existed {
		var err error
		if doc, err = parseObject(c.snapshot); err != nil {
			return TakenKey{}, fmt.Errorf("settings copy: %w", err)
		}
	} else {
		doc.set("version", json.Number("1"))
		doc.set("lastUsedProvider", c.Target)
	}
	providers := doc.getObject("providers")
	if providers == nil {
		providers = newObject()
		doc.set("providers", providers)
	}
	block := providers.getObject(c.Target)
	if block == nil {
		// The CLI's schema wants all three (a block it refuses empties the whole file).
		block = newObject()
		block.set("settings", newObject())
		block.set("updatedAt", "2026-01-01T00:00:00.000Z")
		block.set("tokenSource", "manual")
		providers.set(c.Target, block)
	}
	s := block.getObject("settings")
	if s == nil {
		return TakenKey{}, ErrNotKeyless
	}
	if _, ok := s.get("provider"); !ok {
		s.set("provider", c.Target)
	}
	taken, err := takeFrom(s)
	if err != nil {
		return TakenKey{}, err
	}
	base, err := rebase(taken.BaseURL)
	if err != nil {
		return TakenKey{}, err
	}
	s.set("apiKey", placeholder)
	s.set("baseUrl", base)
	s.del("headers")
	if auth := s.getObject("auth"); auth != nil {
		if _, ok := auth.get("apiKey"); ok {
			auth.set("apiKey", placeholder)
		}
	}
	data := doc.encode()
	if err := afero.WriteFile(c.fs, c.SettingsPath, data, 0o600); err != nil {
		return TakenKey{}, fmt.Errorf("settings copy: %w", err)
	}
	c.snapshot, c.existed = data, true
	return taken, nil
}

// takeFrom reads the key, baseUrl and headers of a provider's settings object.
func takeFrom(s *object) (TakenKey, error) {
	var t TakenKey
	if auth := s.getObject("auth"); auth != nil {
		if v, ok := auth.get("accessToken"); ok && v != nil && v != "" {
			return t, ErrNotKeyless
		}
		if v, ok := auth.get("apiKey"); ok {
			k, isStr := v.(string)
			if !isStr {
				return t, ErrNotKeyless
			}
			t.Key = k
		}
	}
	for _, f := range []struct {
		name string
		to   *string
	}{{"apiKey", &t.Key}, {"baseUrl", &t.BaseURL}} {
		if v, ok := s.get(f.name); ok && v != nil {
			str, isStr := v.(string)
			if !isStr {
				return TakenKey{}, ErrNotKeyless
			}
			if str != "" {
				*f.to = str
			}
		}
	}
	if v, ok := s.get("headers"); ok && v != nil {
		h, isObj := v.(*object)
		if !isObj {
			return TakenKey{}, ErrNotKeyless
		}
		t.Headers = map[string]string{}
		for _, k := range h.keys {
			str, isStr := h.vals[k].(string)
			if !isStr {
				return TakenKey{}, ErrNotKeyless
			}
			t.Headers[k] = str
		}
	}
	return t, nil
}
