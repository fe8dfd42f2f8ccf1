package redact

// ASCII helpers that work on []byte without allocating. Secrets, names and
// the markers we look for are ASCII; other bytes simply never match.

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlpha(c byte) bool { return isUpper(c) || isLower(c) }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// isWord reports identifier characters; a token pattern only starts after a
// non-word byte so "task-sk-..." or "desk-top" never trigger "sk-".
func isWord(c byte) bool { return isAlnum(c) || c == '_' }

// isNameChar reports characters of env, JSON, header and config names.
func isNameChar(c byte) bool { return isWord(c) || c == '-' || c == '.' }

func upper(c byte) byte {
	if isLower(c) {
		return c - 'a' + 'A'
	}
	return c
}

// eqFold compares b with an upper-case ASCII constant, ignoring case.
func eqFold(b []byte, up string) bool {
	if len(b) != len(up) {
		return false
	}
	for i := range len(b) {
		if upper(b[i]) != up[i] {
			return false
		}
	}
	return true
}

func hasPrefixFold(b []byte, up string) bool {
	return len(b) >= len(up) && eqFold(b[:len(up)], up)
}

func hasSuffixFold(b []byte, up string) bool {
	return len(b) >= len(up) && eqFold(b[len(b)-len(up):], up)
}

func containsFold(b []byte, up string) bool {
	for i := 0; i+len(up) <= len(b); i++ {
		if upper(b[i]) == up[0] && eqFold(b[i:i+len(up)], up) {
			return true
		}
	}
	return false
}

func inFold(b []byte, list []string) bool {
	for _, s := range list {
		if eqFold(b, s) {
			return true
		}
	}
	return false
}

// backslashesBefore counts the run of '\' immediately before b[i], not
// looking further back than lo.
func backslashesBefore(b []byte, i, lo int) int {
	n := 0
	for i-1-n >= lo && b[i-1-n] == '\\' {
		n++
	}
	return n
}
