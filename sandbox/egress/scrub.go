package egress

import (
	"bytes"
	"io"
	"net/http"
	"sort"
	"strings"
)

// Scrubbed replaces a credential's value in what the upstream answers.
const Scrubbed = "[removed by cline-mcp]"

// minSecret is the shortest credential header value the proxy scrubs from answers: shorter
// values (a custom header "X-Team: a") are not secrets, and removing them would garble answers.
const minSecret = 8

// secretsOf are the values scrubbed from c's answers: every credential header value of at least
// minSecret bytes, and the token of a "Bearer <token>" value on its own — longest first.
func secretsOf(h http.Header) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	add := func(v string) {
		if len(v) >= minSecret && !seen[v] {
			seen[v] = true
			out = append(out, []byte(v))
		}
	}
	for _, vs := range h {
		for _, v := range vs {
			add(v)
			if scheme, tok, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Bearer") {
				add(strings.TrimSpace(tok))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// scrubBytes replaces every occurrence of secrets (longest first) in b.
func scrubBytes(b []byte, secrets [][]byte) []byte {
	for _, s := range secrets {
		if bytes.Contains(b, s) {
			b = bytes.ReplaceAll(b, s, []byte(Scrubbed))
		}
	}
	return b
}

// scrubHeader replaces the secrets in every header value of h (names are the upstream's own).
func scrubHeader(h http.Header, secrets [][]byte) {
	for k, vs := range h {
		for i, v := range vs {
			vs[i] = string(scrubBytes([]byte(v), secrets))
		}
		h[k] = vs
	}
}

// scrubReader passes an answer body on with the secrets replaced, also across the reads that
// split one: it holds back only the longest tail that is the start of a secret, so everything
// else (an SSE event and its blank line) goes on as soon as it arrived.
type scrubReader struct {
	r       io.ReadCloser
	secrets [][]byte
	buf     []byte
	pending []byte // read, not yet released: a possible start of a secret
	out     []byte // released, not yet returned
	err     error
}

func newScrubReader(r io.ReadCloser, secrets [][]byte) *scrubReader {
	return &scrubReader{r: r, secrets: secrets, buf: make([]byte, 32<<10)}
}

func (s *scrubReader) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		n, err := s.r.Read(s.buf)
		s.pending = scrubBytes(append(s.pending, s.buf[:n]...), s.secrets)
		hold := 0
		if err == nil {
			hold = heldTail(s.pending, s.secrets)
		} else {
			s.err = err
		}
		cut := len(s.pending) - hold
		s.out = append(s.out[:0], s.pending[:cut]...)
		s.pending = append(s.pending[:0], s.pending[cut:]...)
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

func (s *scrubReader) Close() error { return s.r.Close() }

// heldTail is the length of the longest tail of b that is a proper prefix of a secret.
func heldTail(b []byte, secrets [][]byte) int {
	longest := 0
	for _, s := range secrets {
		for k := min(len(b), len(s)-1); k > longest; k-- {
			if bytes.HasSuffix(b, s[:k]) {
				longest = k
				break
			}
		}
	}
	return longest
}
