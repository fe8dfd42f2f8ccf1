package redact

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// liveHeap returns the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// streamPeak writes total bytes of generated output (half as one huge
// line, half as short JSONL-like lines, both sprinkled with secrets) and
// returns the peak live heap growth over the starting point.
func streamPeak(t *testing.T, r *Redactor, total int) uint64 {
	t.Helper()
	base := liveHeap()
	tail := r.NewTail(0)
	var peak uint64
	sample := func() {
		if h := liveHeap(); h > base && h-base > peak {
			peak = h - base
		}
	}
	unit := `lorem ipsum "apiKey":"sk-abcdef1234567890" Bearer tok.123456789 dolor é€ `
	long := []byte(strings.Repeat(unit, (32<<10)/len(unit)))
	short := bytes.Repeat([]byte(`{"type":"agent_event","event":{"type":"content_update","text":"OPENAI_API_KEY=sk-x1234567"}}`+"\n"), 300)
	written := 0
	for i := 0; written < total/2; i++ {
		n, _ := tail.Write(long)
		written += n
		if i%512 == 0 {
			sample()
		}
	}
	tail.Write([]byte("\n"))
	for i := 0; written < total; i++ {
		n, _ := tail.Write(short)
		written += n
		if i%512 == 0 {
			sample()
		}
	}
	sample()
	if got := tail.String(); strings.Contains(got, "sk-") || utf8.RuneCountInString(got) > DefaultTailChars {
		t.Errorf("tail after %d bytes: %q", written, got)
	}
	runtime.KeepAlive(tail)
	return peak
}

// TestTailMemoryBounded proves that the heap a Tail needs does not grow
// with the stream: 256 MiB (32 MiB under -race or -short) costs the same
// few hundred KiB as 1 MiB.
func TestTailMemoryBounded(t *testing.T) {
	total := 256 << 20
	if testing.Short() || raceEnabled {
		total = 32 << 20
	}
	r := New(strings.Fields("literal-one-1 literal-two-22 literal-three-333"))
	small := streamPeak(t, r, 1<<20)
	big := streamPeak(t, r, total)
	t.Logf("peak live heap growth: %d KiB for 1 MiB, %d KiB for %d MiB", small>>10, big>>10, total>>20)
	const limit = 2 << 20
	if big > limit {
		t.Errorf("peak live heap growth for %d MiB = %d KiB, want under %d KiB", total>>20, big>>10, limit>>10)
	}
	if big > small+512<<10 {
		t.Errorf("peak live heap growth %d KiB for %d MiB, want within 512 KiB of the %d KiB for 1 MiB", big>>10, total>>20, small>>10)
	}
}

func loadJSONL(b testing.TB) []byte {
	data, err := os.ReadFile("testdata/denied_tools.stdout.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func manyLiterals(n int) []string {
	lits := make([]string, n)
	for i := range lits {
		lits[i] = fmt.Sprintf("literal-secret-%04d-xyz", i)
	}
	return lits
}

func benchWrite(b *testing.B, r *Redactor, data []byte, piece int) {
	tail := r.NewTail(0)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for p := data; len(p) > 0; {
			n := min(piece, len(p))
			tail.Write(p[:n])
			p = p[n:]
		}
	}
}

// goSource returns about n bytes of the source corpus (real Go code).
func goSource(b *testing.B, n int) []byte {
	c := loadSourceCorpus(b)
	var out []byte
	for _, f := range c.files {
		if len(out) >= n {
			break
		}
		out = append(out, f.data...)
	}
	return out
}

// BenchmarkTailWrite measures Tail.Write (Diagnostic level) over a real
// Cline --json stdout recording fed in 4 KiB pieces like an os/exec pipe,
// and over Go source (a tail of a build log or of a file Cline cats).
func BenchmarkTailWrite(b *testing.B) {
	data := loadJSONL(b)
	b.Run("jsonl/patterns", func(b *testing.B) { benchWrite(b, New(nil), data, 4096) })
	b.Run("jsonl/50 literals", func(b *testing.B) { benchWrite(b, New(manyLiterals(50)), data, 4096) })
	long := bytes.ReplaceAll(bytes.Repeat(data, 64), []byte("\n"), []byte(" "))
	b.Run("one long line", func(b *testing.B) { benchWrite(b, New(manyLiterals(50)), long, 32<<10) })
	b.Run("go source", func(b *testing.B) { benchWrite(b, New(manyLiterals(50)), goSource(b, 1<<20), 4096) })
}

func benchString(b *testing.B, redact func(string) string, data string) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		_ = redact(data)
	}
}

// BenchmarkText measures the Precise level used for answers and diffs.
func BenchmarkText(b *testing.B) {
	r := New(manyLiterals(50))
	b.Run("go source", func(b *testing.B) { benchString(b, r.Text, string(goSource(b, 1<<20))) })
	b.Run("jsonl", func(b *testing.B) { benchString(b, r.Text, string(loadJSONL(b))) })
}

// BenchmarkRedactorString measures the Diagnostic level on whole strings
// (error messages, warnings).
func BenchmarkRedactorString(b *testing.B) {
	r := New(manyLiterals(50))
	b.Run("jsonl", func(b *testing.B) { benchString(b, r.String, string(loadJSONL(b))) })
	b.Run("go source", func(b *testing.B) { benchString(b, r.String, string(goSource(b, 1<<20))) })
}
