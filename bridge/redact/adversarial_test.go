package redact

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRedactScaling feeds inputs built to make a naive scanner backtrack, at two sizes eight
// times apart, to String and to a Tail, and reports the time per input byte: linear work keeps
// ns/byte about equal at both sizes (quadratic would multiply it by eight). `make bench` prints it;
// it is a benchmark, not a test, because a ratio of two timings fails on a loaded machine.
func BenchmarkRedactScaling(b *testing.B) {
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
	const n = 40000 // large enough that both sizes are past the line buffer's small-input regime
	for name, gen := range inputs {
		for _, size := range []int{n, 8 * n} {
			in := gen(size)
			run := map[string]func(){
				"String": func() { _ = r.String(in) },
				"Tail": func() {
					tl := r.NewTail(0)
					tl.Write([]byte(in))
					tl.Flush()
				},
			}
			for _, what := range []string{"String", "Tail"} {
				b.Run(fmt.Sprintf("%s/%s/%dB", name, what, len(in)), func(b *testing.B) {
					for b.Loop() {
						run[what]()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in)), "ns/byte")
				})
			}
		}
	}
}

func manyLiteralsT(n int) []string {
	lits := make([]string, n)
	for i := range lits {
		lits[i] = strings.Repeat(string(rune('a'+i%26)), 6) + "-lit"
	}
	return lits
}
