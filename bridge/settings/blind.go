package settings

import (
	"errors"
	"fmt"
)

// Blinded is a container's providers.json (data) with the baseUrl of provider's block set to
// base and nothing else changed: what a spare Cline process with its key inside reads for a
// warm-up turn that must not reach the provider (base names an address where nothing can
// listen). The CLI takes a session's baseUrl from the file when the session opens, so the
// file's own bytes, put back afterwards, are what the claiming call's session reads. A file
// without a plain settings object for provider is refused: there is no baseUrl to redirect.
func Blinded(data []byte, provider, base string) ([]byte, error) {
	doc, err := parseObject(data)
	if err != nil {
		return nil, fmt.Errorf("settings copy: %w", err)
	}
	block := doc.getObject("providers").getObject(provider)
	s := block.getObject("settings")
	if s == nil {
		return nil, errors.New("settings copy: no settings for provider " + provider)
	}
	if v, ok := s.get("baseUrl"); ok && v != nil {
		if _, isStr := v.(string); !isStr {
			return nil, ErrNotKeyless
		}
	}
	s.set("baseUrl", base)
	return doc.encode(), nil
}
