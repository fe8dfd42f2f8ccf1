// Package redact owns secret redaction for everything the bridge shows a
// client, at two levels of one engine.
//
// Precise (Redactor.Text) is for content the user reads: answers, diffs,
// progress. It removes the literal secret values the caller knows (from
// providers.json, the server's environment, --docker-env) and credential
// shapes: provider keys and tokens with documented prefixes (a subset of
// gitleaks' rules, judged by prefix, character classes, length and
// entropy), JWTs, PEM private-key bodies, "Bearer"/"Basic" credentials that
// look generated, and URL passwords that are not placeholders. It never
// judges by a variable's name, so code that merely mentions a password or
// token is returned byte for byte, and never redacts an identifier
// (IFLA_INET6_TOKEN = C.IFLA_INET6_TOKEN): only a value that looks generated
// is taken for a credential because of the name in front of it.
//
// Diagnostic (Redactor.String, Tail) is for stderr/stdout tails, error
// messages and logs. On top of Precise it applies the name-based rules:
// JSON keys such as "apiKey" (even escaped inside another JSON string),
// KEY=value and header-style definitions, and looser token shapes (test and
// masked keys such as sk-test-***123).
//
// Both replace each secret with Marker. A Tail redacts a stream line by
// line before keeping its last characters, so a secret that straddles the
// tail boundary can never leak half of itself, and it holds a bounded
// amount of memory however long the stream.
package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// Marker replaces every redacted secret.
const Marker = "[REDACTED]"

var markerBytes = []byte(Marker)

// minLiteral is the shortest literal New accepts: shorter values ("1",
// "true") would blank out ordinary text.
const minLiteral = 6

// maxPasses bounds re-scanning of redacted output; one pass almost always
// suffices, a second settles the rare secret that only appears once a
// neighbouring one is replaced.
const maxPasses = 4

// Redactor finds and replaces secrets. It is immutable after New and safe
// for concurrent use (With returns a new one). A nil *Redactor redacts the
// built-in patterns only.
type Redactor struct {
	sources  []string // the literals New was given, for With
	literals [][]byte // longest first
	// With many literals one pass over the input looking up each byte pair
	// beats one bytes.Index pass per literal.
	pairs  *[1 << 16 / 64]uint64 // bitset of the literals' first two bytes
	byPair map[uint16][][]byte
	// sampled is the bitset of the byte pairs at offsets 0..pairStep-1 of
	// every literal: the search looks up one pair every pairStep bytes and
	// checks the pairStep starts it may belong to only on a hit.
	sampled *[1 << 16 / 64]uint64
}

// pairStep is the stride of the sampled literal search; every literal
// (minLiteral bytes or more) has a pair at each offset below it.
const pairStep = minLiteral - 2

// pairSearchMin is the literal count from which the byte-pair search is
// used (measured on Cline JSONL: at 50 literals it is about 2x faster).
const pairSearchMin = 8

// New returns a Redactor for the built-in patterns plus literals: secret
// values to redact verbatim wherever they occur, at every level (also in
// their JSON-escaped form, and the secret part of a value with a scheme or
// account prefix when it is printed alone: "xyz..." of "workos:xyz...",
// "Bearer xyz..."). Blank literals, literals shorter than 6 characters and
// substrings of Marker are ignored.
func New(literals []string) *Redactor {
	seen := map[string]bool{}
	var lits []string
	add := func(l string) {
		if seen[l] || strings.TrimSpace(l) == "" || utf8.RuneCountInString(l) < minLiteral ||
			strings.Contains(Marker, l) {
			return
		}
		seen[l] = true
		lits = append(lits, l)
	}
	for _, l := range literals {
		for _, part := range secretParts(l) {
			add(part)
			if q, err := json.Marshal(part); err == nil {
				add(string(q[1 : len(q)-1])) // as it appears inside a JSON string
			}
		}
	}
	slices.SortFunc(lits, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{sources: slices.Clone(literals), literals: make([][]byte, len(lits))}
	for i, l := range lits {
		r.literals[i] = []byte(l)
	}
	if len(lits) >= pairSearchMin {
		r.pairs = new([1 << 16 / 64]uint64)
		r.sampled = new([1 << 16 / 64]uint64)
		r.byPair = map[uint16][][]byte{}
		for _, l := range r.literals {
			k := uint16(l[0])<<8 | uint16(l[1])
			r.pairs[k>>6] |= 1 << (k & 63)
			r.byPair[k] = append(r.byPair[k], l)
			for o := range pairStep {
				k := uint16(l[o])<<8 | uint16(l[o+1])
				r.sampled[k>>6] |= 1 << (k & 63)
			}
		}
	}
	return r
}

// With returns a Redactor that also knows literals (see New), or r itself
// when none of them adds a secret r does not already redact verbatim. r is
// not changed: a caller that learns secrets while it works swaps the
// Redactor it uses for the result.
func (r *Redactor) With(literals ...string) *Redactor {
	if r == nil {
		return New(literals)
	}
	known := make(map[string]bool, len(r.literals))
	for _, l := range r.literals {
		known[string(l)] = true
	}
	var add []string
	for _, l := range literals {
		if !known[l] && len(New([]string{l}).literals) > 0 {
			add = append(add, l)
			known[l] = true
		}
	}
	if len(add) == 0 {
		return r
	}
	return New(append(slices.Clone(r.sources), add...))
}

// literalSpans appends the spans of every literal occurrence in b.
func (r *Redactor) literalSpans(b []byte, sp []span) []span {
	if r == nil {
		return sp
	}
	if r.pairs == nil {
		for _, lit := range r.literals {
			for off := 0; ; {
				k := bytes.Index(b[off:], lit)
				if k < 0 {
					break
				}
				sp = append(sp, span{off + k, off + k + len(lit)})
				off += k + len(lit)
			}
		}
		return sp
	}
	for p := 0; p+1 < len(b); p += pairStep {
		k := uint16(b[p])<<8 | uint16(b[p+1])
		if r.sampled[k>>6]&(1<<(k&63)) == 0 {
			continue
		}
		for i := max(0, p-pairStep+1); i <= p; i++ {
			k := uint16(b[i])<<8 | uint16(b[i+1])
			if r.pairs[k>>6]&(1<<(k&63)) == 0 {
				continue
			}
			for _, lit := range r.byPair[k] {
				if bytes.HasPrefix(b[i:], lit) {
					sp = append(sp, span{i, i + len(lit)})
					break // longest first; shorter ones here are inside it
				}
			}
		}
	}
	return sp
}

// secretParts returns l and, when l starts with an auth scheme ("Bearer ",
// "Basic ", "token ") or a name and a colon ("workos:", "user:"), the rest
// after it, repeatedly.
func secretParts(l string) []string {
	parts := []string{l}
	for {
		rest := ""
		if k := strings.IndexByte(l, ' '); k > 0 && inFold([]byte(l[:k]), authSchemes) {
			rest = strings.TrimLeft(l[k:], " ")
		} else if k := strings.IndexByte(l, ':'); k > 0 && k <= 32 && !strings.HasPrefix(l[k:], "://") && isName(l[:k]) {
			rest = l[k+1:]
		}
		if rest == "" {
			return parts
		}
		parts = append(parts, rest)
		l = rest
	}
}

// isName reports an identifier-like name starting with a letter.
func isName(s string) bool {
	if !isAlpha(s[0]) {
		return false
	}
	for i := range len(s) {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

// String returns s redacted at the Diagnostic level: for stderr/stdout
// tails, error messages, warnings and logs. It is idempotent:
// String(String(s)) == String(s).
func (r *Redactor) String(s string) string { return r.redactString(s, Diagnostic) }

// Text returns s redacted at the Precise level: for answers, diffs and
// progress. It changes only known literal values and credential shapes and
// leaves code that names a password, token or key alone. It is idempotent.
func (r *Redactor) Text(s string) string { return r.redactString(s, Precise) }

func (r *Redactor) redactString(s string, lv Level) string {
	// The scanner only reads its input, so it may look at s's bytes.
	out, changed := r.redact(unsafe.Slice(unsafe.StringData(s), len(s)), lv)
	if !changed {
		return s
	}
	return string(out)
}

// redact returns b with all secrets of level lv replaced, re-scanning the
// result until nothing changes. It returns b itself and false when nothing
// was replaced.
func (r *Redactor) redact(b []byte, lv Level) (_ []byte, changed bool) {
	return r.redactWith(b, lv, &scratch{})
}

// scratch is memory redactWith reuses: spans and two output buffers used
// in turn by successive passes.
type scratch struct {
	spans []span
	bufs  [2][]byte
}

// redactWith is redact with scratch memory; the result may live in s.
func (r *Redactor) redactWith(b []byte, lv Level, s *scratch) (_ []byte, changed bool) {
	for pass := range maxPasses {
		s.spans, _ = r.scan(b, s.spans[:0], lv)
		if len(s.spans) == 0 {
			return b, changed
		}
		out := &s.bufs[pass%2]
		if *out == nil {
			*out = make([]byte, 0, len(b)+len(Marker))
		}
		*out = apply((*out)[:0], b, s.spans, 0, len(b), false)
		b, changed = *out, true
	}
	return b, changed
}

// apply appends b[from:to] to dst with the parts covered by spans (sorted,
// merged) replaced by Marker. skipLead drops the Marker of a span that
// starts at from, because the caller already emitted one for it.
func apply(dst, b []byte, sp []span, from, to int, skipLead bool) []byte {
	p := from
	for _, x := range sp {
		if x.e <= from {
			continue
		}
		if x.s >= to {
			break
		}
		s, e := max(x.s, from), min(x.e, to)
		dst = append(dst, b[p:s]...)
		if !(skipLead && s == from) {
			dst = append(dst, Marker...)
		}
		p = max(p, e)
	}
	return append(dst, b[p:to]...)
}
