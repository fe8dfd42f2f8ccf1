package redact

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var figures = flag.Bool("figures", false, "TestFigures: measure throughput (medians of -figures.runs runs) and print it")
var figureRuns = flag.Int("figures.runs", 5, "runs per TestFigures case")

// TestHotPathAllocs asserts that redacting ordinary output allocates
// nothing: a Tail write of a Cline JSONL or Go source piece, and Text and
// String of text without secrets.
func TestHotPathAllocs(t *testing.T) {
	jsonl := loadJSONL(t)
	src := loadSourceCorpus(t)
	var code []byte
	for _, f := range src.files {
		if strings.HasSuffix(f.path, "http/server.go") {
			code = f.data
		}
	}
	if code == nil {
		t.Fatal("net/http/server.go is not in the corpus")
	}
	r := New(manyLiterals(50))
	for name, data := range map[string][]byte{"jsonl": jsonl, "go source": code} {
		tail := r.NewTail(0)
		piece := data[:4096]
		if n := testing.AllocsPerRun(50, func() { tail.Write(piece) }); n != 0 {
			t.Errorf("Tail.Write(%s piece): %.1f allocs per write, want 0", name, n)
		}
		s := string(data)
		if n := testing.AllocsPerRun(5, func() { _ = r.Text(s) }); n != 0 {
			t.Errorf("Text(%s): %.1f allocs, want 0", name, n)
		}
	}
	s := string(jsonl)
	if n := testing.AllocsPerRun(5, func() { _ = r.String(s) }); n != 0 {
		t.Errorf("String(jsonl): %.1f allocs, want 0", n)
	}
}

// TestFigures prints the throughput figures of `make bench`: for each case
// the median over several runs of MB per wall-clock second and MB per
// CPU-second of this process (the machine is shared, so wall-clock
// figures swing with its load; CPU time much less), and allocations per
// operation. It asserts nothing about speed.
func TestFigures(t *testing.T) {
	if !*figures {
		t.Skip("run with -figures (make bench)")
	}
	jsonl := loadJSONL(t)
	var code []byte
	for _, f := range loadSourceCorpus(t).files {
		if len(code) >= 1<<20 {
			break
		}
		code = append(code, f.data...)
	}
	r := New(manyLiterals(50))
	cases := []struct {
		name string
		f    func(b *testing.B)
	}{
		{"tail (Diagnostic) Cline JSONL, 4 KiB writes", func(b *testing.B) { benchWrite(b, r, jsonl, 4096) }},
		{"tail (Diagnostic) Go source, 4 KiB writes", func(b *testing.B) { benchWrite(b, r, code, 4096) }},
		{"Text (Precise) Go source", func(b *testing.B) { benchString(b, r.Text, string(code)) }},
		{"Text (Precise) Cline JSONL", func(b *testing.B) { benchString(b, r.Text, string(jsonl)) }},
		{"String (Diagnostic) Cline JSONL", func(b *testing.B) { benchString(b, r.String, string(jsonl)) }},
	}
	for _, c := range cases {
		var wall, cpu []float64
		var allocs int64
		for range *figureRuns {
			// CPU time of the last (longest) call, the one whose result
			// testing.Benchmark reports.
			var spent time.Duration
			res := testing.Benchmark(func(b *testing.B) {
				c0 := cpuTime()
				c.f(b)
				spent = cpuTime() - c0
			})
			mb := float64(res.Bytes) * float64(res.N) / 1e6
			wall = append(wall, mb/res.T.Seconds())
			if spent > 0 {
				cpu = append(cpu, mb/spent.Seconds())
			}
			allocs = res.AllocsPerOp()
		}
		line := fmt.Sprintf("throughput: %-45s median %5.0f MB/s wall", c.name, median(wall))
		if len(cpu) > 0 {
			line += fmt.Sprintf(", %5.0f MB/s per CPU-second", median(cpu))
		}
		t.Logf("%s, %d allocs/op (%d runs)", line, allocs, *figureRuns)
	}
}

func median(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
