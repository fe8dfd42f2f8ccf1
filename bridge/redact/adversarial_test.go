package redact

import (
	"strings"
	"testing"
	"time"
)

// TestRedactLinearTime feeds inputs built to make a naive scanner backtrack and checks that the
// work grows linearly: eight times the input may take at most twenty-four times as long
// (quadratic would be sixty-four; the slack absorbs cache and GC effects under -race and load).
// Ratios of the best of three runs measured back to back, never wall-clock limits.
func TestRedactLinearTime(t *testing.T) {
	inputs := map[string]func(n int) string{
		"unterminated values": func(n int) string { return strings.Repeat(`"key":'`, n) },
		"escaped openers":     func(n int) string { return `"token":"` + strings.Repeat(`\"apiKey\":\"x`, n/2) },
		"jwt headers":         func(n int) string { return strings.Repeat("eyJhbGciOiJIUzI1NiJ9.", n/3) },
		"jwt-like runs":       func(n int) string { return strings.Repeat("eyJ-", 2*n) },
		"url colons":          func(n int) string { return strings.Repeat("a://b:", n) },
		"equals chain":        func(n int) string { return strings.Repeat("TOKEN=\"", n) },
		"pem begins":          func(n int) string { return strings.Repeat("-----BEGIN X PRIVATE KEY-----", n/4) },
		"backslash quotes":    func(n int) string { return strings.Repeat(`\\\\\"apiKey\\\\\":`, n/2) },
		"bearer spam":         func(n int) string { return strings.Repeat("Bearer  ", n) },
		"name runs":           func(n int) string { return strings.Repeat("a", 8*n) + "=x" },
		"spaces then colons":  func(n int) string { return strings.Repeat(" ", 8*n) + strings.Repeat(":", 1000) },
	}
	r := New(manyLiteralsT(50))
	best := func(f func()) time.Duration {
		var b time.Duration
		for i := 0; i < 3; i++ {
			start := time.Now()
			f()
			if d := time.Since(start); i == 0 || d < b {
				b = d
			}
		}
		return b
	}
	const n = 40000 // large enough that both sizes are past the line buffer's small-input regime
	for name, gen := range inputs {
		t.Run(name, func(t *testing.T) {
			small, big := gen(n), gen(8*n)
			str := func(in string) func() { return func() { _ = r.String(in) } }
			tail := func(in string) func() {
				return func() {
					tl := r.NewTail(0)
					tl.Write([]byte(in))
					tl.Flush()
				}
			}
			for _, c := range []struct {
				what string
				run  func(string) func()
			}{{"String", str}, {"Tail", tail}} {
				ds, db := best(c.run(small)), best(c.run(big))
				if ds < time.Millisecond {
					ds = time.Millisecond // too fast to compare; a quadratic big run would still show
				}
				if ratio := float64(db) / float64(ds); ratio > 24 {
					t.Errorf("%s: %d bytes took %v, %d bytes %v: %.1f× for 8× the input, want linear (≤ 24×)",
						c.what, len(small), ds, len(big), db, ratio)
				}
			}
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
