package redact

import (
	"bytes"
	"slices"
)

// span is a half-open byte range [s, e) to replace with Marker.
type span struct{ s, e int }

type charClass [256]bool

func class(ranges ...string) *charClass {
	var c charClass
	for _, r := range ranges {
		if len(r) == 3 && r[1] == '-' {
			for x := int(r[0]); x <= int(r[2]); x++ {
				c[x] = true
			}
			continue
		}
		for i := range len(r) {
			c[r[i]] = true
		}
	}
	return &c
}

var (
	alnum      = class("a-z", "A-Z", "0-9")
	alnumDash  = class("a-z", "A-Z", "0-9", "-")
	alnumUnder = class("a-z", "A-Z", "0-9", "_")
	b64url     = class("a-z", "A-Z", "0-9", "-_")
	b64urlDot  = class("a-z", "A-Z", "0-9", "-_.")
	skChars    = class("a-z", "A-Z", "0-9", "-_*")
	upperNum   = class("A-Z", "0-9")
	// bearerChars covers RFC 6750 b64token plus '*' used by masked keys.
	bearerChars = class("a-z", "A-Z", "0-9", "-._~+/=*")
)

// tokenRule describes a self-identifying credential: a fixed prefix followed
// by a run of class characters of length min..max (max 0 = unbounded).
type tokenRule struct {
	prefix    string
	class     *charClass
	min, max  int
	needDigit bool // short runs must contain a digit or '*' ("sk-learn" is a library)
}

var tokenRules = []tokenRule{
	{prefix: "sk-", class: skChars, min: 6, needDigit: true}, // OpenAI, Anthropic (sk-ant-), sk-proj-
	{prefix: "sk_live_", class: alnum, min: 10},              // Stripe
	{prefix: "sk_test_", class: alnum, min: 10},
	{prefix: "rk_live_", class: alnum, min: 10},
	{prefix: "rk_test_", class: alnum, min: 10},
	{prefix: "nvapi-", class: b64url, min: 8}, // NVIDIA
	{prefix: "ghp_", class: alnum, min: 20},   // GitHub
	{prefix: "gho_", class: alnum, min: 20},
	{prefix: "ghu_", class: alnum, min: 20},
	{prefix: "ghs_", class: alnum, min: 20},
	{prefix: "ghr_", class: alnum, min: 20},
	{prefix: "github_pat_", class: alnumUnder, min: 20},
	{prefix: "glpat-", class: b64url, min: 20},   // GitLab
	{prefix: "xoxb-", class: alnumDash, min: 10}, // Slack
	{prefix: "xoxp-", class: alnumDash, min: 10},
	{prefix: "xoxa-", class: alnumDash, min: 10},
	{prefix: "xoxr-", class: alnumDash, min: 10},
	{prefix: "xoxs-", class: alnumDash, min: 10},
	{prefix: "xoxe-", class: alnumDash, min: 10},
	{prefix: "AKIA", class: upperNum, min: 16, max: 16}, // AWS access key id
	{prefix: "ASIA", class: upperNum, min: 16, max: 16},
	{prefix: "AIza", class: b64url, min: 30},     // Google API key
	{prefix: "ya29.", class: b64urlDot, min: 20}, // Google OAuth access token
	{prefix: "hf_", class: alnum, min: 30},       // Hugging Face
	{prefix: "gsk_", class: alnum, min: 20},      // Groq
	{prefix: "xai-", class: alnum, min: 20},      // xAI
	{prefix: "pplx-", class: alnum, min: 20},     // Perplexity
	{prefix: "r8_", class: alnum, min: 20},       // Replicate
	{prefix: "npm_", class: alnum, min: 30},      // npm
	{prefix: "SG.", class: b64urlDot, min: 40},   // SendGrid
	{prefix: "shpat_", class: alnum, min: 20},    // Shopify
	{prefix: "dop_v1_", class: alnum, min: 40},   // DigitalOcean
}

const (
	tNone byte = iota
	tToken
	tColon
	tEq
	tDash
)

var (
	trigger    [256]byte
	rulesByFst [256][]tokenRule
)

func init() {
	for _, r := range tokenRules {
		trigger[r.prefix[0]] = tToken
		rulesByFst[r.prefix[0]] = append(rulesByFst[r.prefix[0]], r)
	}
	for _, c := range []byte("eBb") { // JWT, Bearer
		trigger[c] = tToken
	}
	trigger[':'] = tColon
	trigger['='] = tEq
	trigger['-'] = tDash
}

// scan appends to sp the spans of b that hold secrets, sorted and merged.
// open reports a private key block whose END line is not in b (the caller
// streaming lines keeps redacting until it sees one).
func (r *Redactor) scan(b []byte, sp []span) (_ []span, open bool) {
	noJWT := 0 // no JWT starts before this index (keeps "eyJ-eyJ-..." linear)
	for i := 0; i < len(b); i++ {
		switch trigger[b[i]] {
		case tNone:
			continue
		case tToken:
			if i == 0 || !isWord(b[i-1]) {
				if e, ok := tokenAt(b, i, &noJWT); ok {
					sp = append(sp, span{i, e})
					i = e - 1
				} else if s, e, ok := bearerAt(b, i); ok {
					sp = append(sp, span{s, e})
					i = e - 1
				}
			}
		case tColon:
			n := len(sp)
			sp = urlPassword(b, i, colonValue(b, i, sp))
			i = skipTo(sp, n, i)
		case tEq:
			n := len(sp)
			sp = equalsValue(b, i, sp)
			i = skipTo(sp, n, i)
		case tDash:
			if s, e, o, ok := pemBody(b, i); ok {
				if e > s {
					sp = append(sp, span{s, e})
				}
				open = open || o
				i = max(i, e-1)
			}
		}
	}
	return merge(r.literalSpans(b, sp)), open
}

// skipTo returns where scanning continues after a detector at i appended
// sp[n:]: past the last value found, so a value is never rescanned (an
// unterminated quote reaches the end of b, and rescanning it for every
// later name would be quadratic).
func skipTo(sp []span, n, i int) int {
	for _, x := range sp[n:] {
		i = max(i, x.e-1)
	}
	return i
}

// merge sorts spans and joins overlapping or touching ones, so adjacent
// secrets become one Marker and the output is stable under re-redaction.
func merge(sp []span) []span {
	if len(sp) < 2 {
		return sp
	}
	slices.SortFunc(sp, func(a, b span) int { return a.s - b.s })
	out := sp[:1]
	for _, x := range sp[1:] {
		last := &out[len(out)-1]
		if x.s <= last.e {
			last.e = max(last.e, x.e)
			continue
		}
		out = append(out, x)
	}
	return out
}

func run(b []byte, i int, c *charClass) int {
	for i < len(b) && c[b[i]] {
		i++
	}
	return i
}

// tokenAt matches a self-identifying credential or a JWT starting at b[i]
// and returns its end.
func tokenAt(b []byte, i int, noJWT *int) (int, bool) {
	for _, r := range rulesByFst[b[i]] {
		if !bytes.HasPrefix(b[i:], []byte(r.prefix)) {
			continue
		}
		j := i + len(r.prefix)
		e := run(b, j, r.class)
		n := e - j
		if n < r.min || (r.max > 0 && n > r.max) {
			continue
		}
		if r.needDigit && n < 20 && bytes.IndexAny(b[j:e], "0123456789*") < 0 {
			continue
		}
		return e, true
	}
	if b[i] == 'e' && i >= *noJWT {
		e, ok := jwtAt(b, i)
		if !ok {
			// Any "eyJ" inside this base64url run ends the run at the same
			// byte and fails the same way.
			*noJWT = run(b, i, b64url)
		}
		return e, ok
	}
	return 0, false
}

// jwtAt matches header.payload[.signature] where header and payload are
// base64url JSON objects (both start with "eyJ", the encoding of `{"`).
func jwtAt(b []byte, i int) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte("eyJ")) {
		return 0, false
	}
	e := run(b, i, b64url)
	if e-i < 10 || e+1 >= len(b) || b[e] != '.' || !bytes.HasPrefix(b[e+1:], []byte("eyJ")) {
		return 0, false
	}
	p := e + 1
	e = run(b, p, b64url)
	if e-p < 10 {
		return 0, false
	}
	if e < len(b) && b[e] == '.' {
		e = run(b, e+1, b64url)
	}
	return e, true
}

// bearerAt matches "Bearer <token>" and returns the token's span; the word
// Bearer stays so readers still see what kind of credential was there.
func bearerAt(b []byte, i int) (int, int, bool) {
	if len(b)-i < 8 || !eqFold(b[i:i+6], "BEARER") {
		return 0, 0, false
	}
	j := i + 6
	s := j
	for s < len(b) && (b[s] == ' ' || b[s] == '\t') {
		s++
	}
	if s == j {
		return 0, 0, false
	}
	e := run(b, s, bearerChars)
	if e-s < 4 || isWordy(b[s:e]) {
		return 0, 0, false
	}
	return s, e, true
}

// isWordy reports a plain word ("token", "Authentication", "NONE"): letters
// only, in one natural casing, shorter than a typical generated secret.
func isWordy(t []byte) bool {
	if len(t) == 0 || len(t) >= 20 {
		return false
	}
	lowerRest, upperRest := true, true
	for i, c := range t {
		if !isAlpha(c) {
			return false
		}
		if i > 0 {
			lowerRest = lowerRest && isLower(c)
			upperRest = upperRest && isUpper(c)
		}
	}
	return lowerRest || upperRest
}

// looksSecret is the test for an unquoted value after a secret name when the
// syntax alone is not conclusive ("password: hunter22" vs "password: see docs").
func looksSecret(t []byte) bool { return len(t) >= 6 && !isWordy(t) }

// authSchemes are kept in front of a redacted Authorization value.
var authSchemes = []string{"BEARER", "BASIC", "TOKEN", "DIGEST", "BOT", "NEGOTIATE", "NTLM", "APIKEY", "KEY"}
