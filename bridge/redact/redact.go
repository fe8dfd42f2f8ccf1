// Package redact owns secret redaction for everything the bridge shows a
// client: the Cline CLI's stdout/stderr tails, extracted error messages and
// summaries.
//
// A Redactor finds secrets by shape (sk-..., nvapi-..., ghp_..., AKIA...,
// JWTs, "Bearer <token>"), by name (JSON keys such as "apiKey" even when the
// JSON is escaped inside another JSON string, KEY=value and header-style
// definitions, URL passwords, PEM private keys) and by value (literals the
// caller knows, e.g. from providers.json and the child's environment), and
// replaces each with Marker.
//
// A Tail redacts a stream line by line before keeping its last characters,
// so a secret that straddles the tail boundary can never leak half of
// itself, and it holds a bounded amount of memory however long the stream.
package redact

import (
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
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
// for concurrent use.
type Redactor struct {
	literals [][]byte // longest first
}

// New returns a Redactor for the built-in patterns plus literals: secret
// values to redact verbatim wherever they occur (also in their JSON-escaped
// form). Blank literals, literals shorter than 6 characters and substrings
// of Marker are ignored.
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
		add(l)
		if q, err := json.Marshal(l); err == nil {
			add(string(q[1 : len(q)-1])) // as it appears inside a JSON string
		}
	}
	slices.SortFunc(lits, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{literals: make([][]byte, len(lits))}
	for i, l := range lits {
		r.literals[i] = []byte(l)
	}
	return r
}

// String returns s with every secret replaced by Marker. It is idempotent:
// String(String(s)) == String(s).
func (r *Redactor) String(s string) string {
	out, changed := r.redact([]byte(s))
	if !changed {
		return s
	}
	return string(out)
}

// redact returns b with all secrets replaced, re-scanning the result until
// nothing changes. It returns b itself and false when nothing was replaced.
func (r *Redactor) redact(b []byte) (_ []byte, changed bool) {
	var sp []span
	for range maxPasses {
		sp, _ = r.scan(b, sp[:0])
		if len(sp) == 0 {
			return b, changed
		}
		b, changed = apply(make([]byte, 0, len(b)), b, sp, 0, len(b), false), true
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
