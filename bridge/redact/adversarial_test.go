package redact

import (
	"strings"
	"testing"
	"time"
)

// TestRedactLinearTime feeds inputs built to make a naive scanner
// quadratic; each 1 MiB input must redact in well under a second.
func TestRedactLinearTime(t *testing.T) {
	inputs := map[string]string{
		"unterminated values": strings.Repeat(`"key":'`, 150000),
		"escaped openers":     `"token":"` + strings.Repeat(`\"apiKey\":\"x`, 60000),
		"jwt headers":         strings.Repeat("eyJhbGciOiJIUzI1NiJ9.", 50000),
		"jwt-like runs":       strings.Repeat("eyJ-", 250000),
		"url colons":          strings.Repeat("a://b:", 170000),
		"equals chain":        strings.Repeat("TOKEN=\"", 150000),
		"pem begins":          strings.Repeat("-----BEGIN X PRIVATE KEY-----", 35000),
		"backslash quotes":    strings.Repeat(`\\\\\"apiKey\\\\\":`, 60000),
		"bearer spam":         strings.Repeat("Bearer  ", 130000),
		"name runs":           strings.Repeat("a", 1<<20) + "=x",
		"spaces then colons":  strings.Repeat(" ", 1<<20) + strings.Repeat(":", 1000),
	}
	r := New(manyLiteralsT(50))
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			out := r.String(in)
			if d := time.Since(start); d > time.Second {
				t.Errorf("String(%d bytes) took %v, want under 1s", len(in), d)
			}
			tail := r.NewTail(0)
			start = time.Now()
			tail.Write([]byte(in))
			tail.Flush()
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Tail.Write(%d bytes) took %v, want under 2s", len(in), d)
			}
			_ = out
		})
	}
}

func manyLiteralsT(n int) []string {
	lits := make([]string, n)
	for i := range lits {
		lits[i] = strings.Repeat(string(rune('a'+i%26)), 6) + "-lit"
	}
	return lits
}
