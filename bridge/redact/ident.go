package redact

// identifier reports a value shaped like code that names something rather
// than a credential: a camelCase name made of words (codeLike), a
// SCREAMING_SNAKE_CASE or snake_case constant (IFLA_INET6_TOKEN,
// NL80211_ATTR_KEY), or a selector of such names (C.IFLA_INET6_TOKEN,
// unix.NL80211_ATTR_KEY, settings.CLIENT_SECRET, cfg.Secret). The
// name-based rules never redact one at the Precise level: an identifier is
// never a credential, and Go's and C's system call tables are full of
// constants named *_TOKEN, *_KEY and *_AUTH. Credential shapes and literal
// secrets are judged on their own and are not affected.
func identifier(v []byte) bool {
	if codeLike(v) {
		return true
	}
	parts := 0
	for start := 0; start <= len(v); {
		end := start
		for end < len(v) && v[end] != '.' {
			end++
		}
		seg := v[start:end]
		last := end == len(v)
		switch {
		case len(seg) == 0 || !(isAlpha(seg[0]) || seg[0] == '_'):
			return false
		case constantName(seg), codeLike(seg):
		case !last && qualifier(seg):
		default:
			return false
		}
		parts++
		start = end + 1
	}
	return parts > 0
}

// constantName reports a snake_case or SCREAMING_SNAKE_CASE name made of
// words: identifier bytes with at least one '_' between two names' bytes,
// letters in one case, no more digits than letters, and at least half of
// its letter runs three letters or longer (IFLA_INET6_TOKEN: IFLA, INET,
// TOKEN; NL80211_ATTR_KEY: NL, ATTR, KEY). Generated keys mix cases or
// split into short letter runs between digits.
func constantName(s []byte) bool {
	upper, lower, under := false, false, false
	letters, digits, words, short, n := 0, 0, 0, 0, 0
	end := func() {
		if n > 0 {
			words++
			if n < 3 {
				short++
			}
		}
		n = 0
	}
	for i, c := range s {
		switch {
		case isUpper(c):
			upper = true
			letters++
			n++
		case isLower(c):
			lower = true
			letters++
			n++
		case isDigit(c):
			digits++
			end()
		case c == '_':
			under = under || (i > 0 && i+1 < len(s) && s[i-1] != '_' && s[i+1] != '_')
			end()
		default:
			return false
		}
	}
	end()
	return under && upper != lower && digits <= letters && words > 0 && 2*short <= words
}

// qualifier reports the left part of a selector: a package or receiver
// name (unix, os, cfg, settings, syscall) or cgo's C.
func qualifier(s []byte) bool {
	if len(s) == 1 {
		return isAlpha(s[0])
	}
	if len(s) > 16 || !isLower(s[0]) {
		return false
	}
	for _, c := range s {
		if !isLower(c) && !isDigit(c) {
			return false
		}
	}
	return true
}
