package egress

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// PolicyDenied is what a refused provider request's answer (403) and its refusal count say: the
// run asked the credential's upstream for something else than the API the run needs.
const PolicyDenied = "denied by cline-mcp's policy: this endpoint is not the provider API the run needs; do not retry"

// The methods a credential can ever be lent to; a grant may name fewer.
var lendableMethods = []string{http.MethodGet, http.MethodPost}

// apiEndpoint is one "METHOD /path" a credential is lent to: the grant's base path joined with
// one of its endpoint suffixes.
type apiEndpoint struct {
	method string
	path   string
}

// parseEndpoints joins base (the provider's base path, "" or "/v1") with each "METHOD /suffix"
// of list. Every path must be plain (cleanPath); an empty list lends the credential to nothing.
func parseEndpoints(base string, list []string) ([]apiEndpoint, error) {
	if base != "" {
		if err := cleanPath(base); err != nil {
			return nil, fmt.Errorf("credential base path %q: %v", printable(base), err)
		}
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("credential: no API endpoint to lend it to")
	}
	out := make([]apiEndpoint, 0, len(list))
	for _, e := range list {
		method, suffix, ok := strings.Cut(e, " ")
		if !ok || !containsString(lendableMethods, method) {
			return nil, fmt.Errorf("credential endpoint %q: want \"GET /path\" or \"POST /path\"", printable(e))
		}
		p := base + suffix
		if err := cleanPath(p); err != nil || suffix == "" || suffix == "/" {
			return nil, fmt.Errorf("credential endpoint %q: not a plain path below the base path", printable(e))
		}
		out = append(out, apiEndpoint{method: method, path: p})
	}
	return out, nil
}

// cleanPath accepts an absolute path that means exactly what it says, to the proxy and to any
// server behind it: visible ASCII without percent-encoding (so nothing decodes to a dot, a
// slash or a backslash), no backslash, no empty, "." or ".." segment, no trailing slash — a
// path that normalises to itself.
func cleanPath(p string) error {
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("not an absolute path")
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c <= ' ' || c >= 0x7f:
			return fmt.Errorf("a control, space or non-ASCII byte")
		case c == '%':
			return fmt.Errorf("percent-encoding")
		case c == '\\':
			return fmt.Errorf("a backslash")
		case c == ';' || c == '?' || c == '#':
			return fmt.Errorf("%q in the path", c)
		}
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("an empty, \".\" or \"..\" segment")
		}
	}
	if path.Clean(p) != p {
		return fmt.Errorf("does not normalise to itself")
	}
	return nil
}

// requestPath is the path of a proxy request as the run sent it, before any decoding: from the
// raw request target (absolute form), else the URL's escaped path.
func requestPath(r *http.Request) string {
	if u, err := url.Parse(r.RequestURI); err == nil && u.IsAbs() {
		return u.EscapedPath()
	}
	return r.URL.EscapedPath()
}

// permits returns "" when c is lent to r's method and path, else the refusal's reason (naming
// the method and path, never a header or body).
func (c *credential) permits(r *http.Request) string {
	raw := requestPath(r)
	what := printable(r.Method + " " + raw)
	if cleanPath(raw) != nil || cleanPath(r.URL.Path) != nil || raw != r.URL.Path {
		return what + ": " + PolicyDenied
	}
	for _, e := range c.endpoints {
		if e.method == r.Method && e.path == raw {
			return ""
		}
	}
	return what + ": " + PolicyDenied
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
