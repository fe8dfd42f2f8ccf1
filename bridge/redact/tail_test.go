package redact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// writeInPieces writes data to w in pieces of the given sizes, cycling.
func writeInPieces(t *testing.T, w *Tail, data []byte, sizes ...int) {
	t.Helper()
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), sizes[i%len(sizes)])
		if got, err := w.Write(data[:n]); got != n || err != nil {
			t.Fatalf("Write(%d bytes) = %d, %v, want %d, nil", n, got, err, n)
		}
		data = data[n:]
	}
}

func lastRunesString(s string, n int) string { return string(lastRunes([]byte(s), n)) }

func TestTailRecordings(t *testing.T) {
	providers, err := os.ReadFile("testdata/text_pong.providers.json")
	if err != nil {
		t.Fatal(err)
	}
	lits := SecretsFromJSON(providers)
	if len(lits) != 1 || lits[0] != "sk-test-123" {
		t.Fatalf("SecretsFromJSON(providers.before.json) = %q, want [sk-test-123]", lits)
	}
	tests := []struct {
		file     string
		literals []string
		gone     []string
		want     []string
	}{
		{"http_401.stdout.jsonl", nil, []string{"sk-test"},
			[]string{"Incorrect API key provided: [REDACTED]. You can find your API key", `"finishReason":"error"`}},
		{"text_pong.requests.jsonl", nil, []string{"sk-test-123"},
			[]string{`"Authorization": "Bearer [REDACTED]"`, `"Content-Type": "application/json"`}},
		{"text_pong.requests.jsonl", lits, []string{"sk-test-123"}, []string{`"Bearer [REDACTED]"`}},
		{"denied_tools.stdout.jsonl", nil, nil, []string{`"type":"run_result"`}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d literals", tc.file, len(tc.literals)), func(t *testing.T) {
			data, err := os.ReadFile("testdata/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			r := New(tc.literals)
			want := lastRunesString(r.String(string(data)), DefaultTailChars)
			for _, sizes := range [][]int{{len(data)}, {1}, {7, 3, 100}, {4096}} {
				tail := r.NewTail(0)
				writeInPieces(t, tail, data, sizes...)
				tail.Flush()
				got := tail.String()
				if got != want {
					t.Errorf("pieces %v: got tail\n%s\nwant the last %d runes of the redacted stream\n%s", sizes, got, DefaultTailChars, want)
				}
				if n := utf8.RuneCountInString(got); n > DefaultTailChars {
					t.Errorf("pieces %v: got %d runes, want at most %d", sizes, n, DefaultTailChars)
				}
				if tail.Bytes() != int64(len(data)) {
					t.Errorf("pieces %v: Bytes() = %d, want %d", sizes, tail.Bytes(), len(data))
				}
				for _, g := range tc.gone {
					if strings.Contains(got, g) {
						t.Errorf("pieces %v: tail contains %q", sizes, g)
					}
				}
				for _, w := range tc.want {
					if !strings.Contains(got, w) {
						t.Errorf("pieces %v: tail lacks %q:\n%s", sizes, w, got)
					}
				}
			}
		})
	}
}

// TestTailSecretStraddlesTailBoundary slides a secret across the point
// where the tail starts: no part of it may show, whatever the alignment.
func TestTailSecretStraddlesTailBoundary(t *testing.T) {
	r := New([]string{"literal-Secret-Value-0042"})
	secrets := []string{
		"sk-proj-AbC123dEf456GhI789jKl012MnO345pQr678",
		"nvapi-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
		`"apiKey":"value-of-the-api-key-0123456789"`,
		"Authorization: Bearer opaque.Token-0123456789abcdef",
		"OPENAI_API_KEY=envValue0123456789abcdef",
		"literal-Secret-Value-0042",
	}
	const max = 100
	for _, sec := range secrets {
		for shift := -10; shift < len(sec)+10; shift++ {
			// The tail holds the last max runes; put the boundary shift bytes
			// into the secret line.
			after := max - (len(sec) - shift)
			if after < 1 {
				continue
			}
			stream := strings.Repeat("filler line of text\n", 20) + sec + "\n" + strings.Repeat("z", after-1) + "\n"
			tail := r.NewTail(max)
			writeInPieces(t, tail, []byte(stream), 13)
			got := tail.String()
			if n := utf8.RuneCountInString(got); n > max {
				t.Fatalf("%q shift %d: got %d runes, want at most %d", sec, shift, n, max)
			}
			value := sec[strings.LastIndexAny(sec, `:=" `)+1:]
			for k := 0; k+4 <= len(value); k++ {
				if strings.Contains(got, value[k:k+4]) {
					t.Fatalf("%q shift %d: tail %q contains %q, part of the secret", sec, shift, got, value[k:k+4])
				}
			}
		}
	}
}

// TestTailLongLineChunks checks that a line far longer than the chunk cap
// is redacted exactly as if it were processed whole, for secrets placed
// across every piece boundary.
func TestTailLongLineChunks(t *testing.T) {
	r := New([]string{"Literal-Needle-77"})
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []string{
		" sk-abcdef1234567890abcdef1234567890 ",
		` {"apiKey":"q-value-0123456789"} `,
		` \"password\":\"escaped-val-99\" `,
		" Bearer abc.DEF-123456789 ",
		" TOKEN=tokval-0123456 ",
		" Literal-Needle-77 ",
		" é€😀 ",
	}
	var line []byte
	for len(line) < 300<<10 {
		if rng.IntN(8) == 0 {
			line = append(line, shapes[rng.IntN(len(shapes))]...)
			continue
		}
		line = append(line, "lorem ipsum dolor "[rng.IntN(5):]...)
	}
	// Secrets exactly across the first cuts (chunkCap-overlap, then every
	// chunkCap-overlap-ctxLen bytes) for every alignment of the first shape.
	for cut := chunkCap - overlap; cut+64 < len(line); cut += chunkCap - overlap - ctxLen {
		copy(line[cut-20:], shapes[0])
	}
	want := r.String(string(line)) + "\n"
	for _, sizes := range [][]int{{len(line) + 1}, {32 << 10}, {4093, 1}} {
		tail := r.NewTail(len(want))
		writeInPieces(t, tail, append(bytes.Clone(line), '\n'), sizes...)
		if got := tail.String(); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("pieces %v: tail differs from whole-line redaction at byte %d: got %q, want %q",
				sizes, i, got[max(0, i-40):min(len(got), i+40)], want[max(0, i-40):min(len(want), i+40)])
		}
	}
}

// TestTailLongSecretNeverShowsPrefix covers a secret longer than the
// overlap window inside a line longer than the chunk cap.
func TestTailLongSecretNeverShowsPrefix(t *testing.T) {
	r := New(nil)
	secret := strings.Repeat("Zq9", 4<<10) // 12 KiB, longer than overlap
	for _, at := range []int{0, chunkCap - overlap - 100, chunkCap - 10, chunkCap + 5000} {
		line := strings.Repeat("x", at) + `{"apiKey":"` + secret + `"} ` + strings.Repeat("y", 70<<10)
		tail := r.NewTail(1 << 20)
		writeInPieces(t, tail, []byte(line+"\n"), 8<<10)
		if got := tail.String(); strings.Contains(got, secret[:16]) {
			t.Errorf("secret at %d: tail shows its prefix", at)
		}
	}
}

func TestTailPendingLine(t *testing.T) {
	r := New([]string{"literal-pending-1"})
	steps := []struct {
		write string
		want  string // exact String() after the write, "" to skip
		gone  string
	}{
		{"first line\nhello wor", "first line\nhello wor", ""},
		{"ld\nkey: sk-ab", "", "sk-ab"},
		{"c1234567", "", "sk-ab"},
		{"89 end\n", "first line\nhello world\nkey: [REDACTED] end\n", ""},
		{"API_KEY=ab", "", "API_KEY=ab"},
		{"cdef\nlast literal-pen", "", "literal-pen"},
		{"ding-1 tail", "", "literal-pen"},
	}
	tail := r.NewTail(0)
	for i, s := range steps {
		if _, err := tail.Write([]byte(s.write)); err != nil {
			t.Fatal(err)
		}
		got := tail.String()
		if s.want != "" && got != s.want {
			t.Errorf("step %d: got %q, want %q", i, got, s.want)
		}
		if s.gone != "" && strings.Contains(got, s.gone) {
			t.Errorf("step %d: got %q, want no %q", i, got, s.gone)
		}
	}
	tail.Flush()
	want := "first line\nhello world\nkey: [REDACTED] end\nAPI_KEY=[REDACTED]\nlast [REDACTED] tail"
	if got := tail.String(); got != want {
		t.Errorf("after Flush: got %q, want %q", got, want)
	}
	tail.Write([]byte("more\n"))
	if got := tail.String(); got != want+"more\n" {
		t.Errorf("after Flush and Write: got %q, want %q", got, want+"more\n")
	}
}

func TestTailRunesAndInvalidUTF8(t *testing.T) {
	r := New(nil)
	for _, max := range []int{0, 1, 7, 2000} {
		tail := r.NewTail(max)
		want := max
		if want == 0 {
			want = DefaultTailChars
		}
		var data []byte
		for i := range 5000 {
			data = append(data, "é€😀\xff\xe2\x82 ab\n"[i%3:]...)
		}
		writeInPieces(t, tail, data, 1, 2, 5, 333)
		for _, got := range []string{tail.String(), func() string { tail.Write([]byte("€€\xf0\x9f")); return tail.String() }()} {
			if !utf8.ValidString(got) {
				t.Errorf("max %d: tail is not valid UTF-8: %q", max, got)
			}
			if n := utf8.RuneCountInString(got); n != want {
				t.Errorf("max %d: got %d runes, want %d", max, n, want)
			}
		}
	}
}

func TestTailPrivateKeyLines(t *testing.T) {
	r := New(nil)
	tail := r.NewTail(0)
	in := "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUA\nAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n-----END OPENSSH PRIVATE KEY-----\nafter\n"
	writeInPieces(t, tail, []byte(in), 9)
	got := tail.String()
	for _, g := range []string{"b3Bl", "AAAA"} {
		if strings.Contains(got, g) {
			t.Errorf("got %q, want no key material %q", got, g)
		}
	}
	for _, w := range []string{"before\n", "-----BEGIN OPENSSH PRIVATE KEY-----", "-----END OPENSSH PRIVATE KEY-----\nafter\n"} {
		if !strings.Contains(got, w) {
			t.Errorf("got %q, want it to keep %q", got, w)
		}
	}
}

// TestTailConcurrentReaders runs one writer against several String and
// Bytes readers; run with -race.
func TestTailConcurrentReaders(t *testing.T) {
	data, err := os.ReadFile("testdata/text_pong.requests.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tail := New(nil).NewTail(300)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if s := tail.String(); strings.Contains(s, "sk-test") || utf8.RuneCountInString(s) > 300 {
					t.Errorf("concurrent String() = %q", s)
					return
				}
				_ = tail.Bytes()
			}
		})
	}
	for range 200 {
		writeInPieces(t, tail, data, 17)
	}
	close(done)
	wg.Wait()
	if got, want := tail.Bytes(), int64(200*len(data)); got != want {
		t.Errorf("Bytes() = %d, want %d", got, want)
	}
}
