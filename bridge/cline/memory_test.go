package cline

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// streamGen produces a synthetic --json stdout of a given size on the fly: iterations of text
// deltas, usage, tool calls with 4 KiB command output chunks and whole messages, one 20 MiB
// content_update line in the middle, and a final run_result. It never holds more than one chunk.
type streamGen struct {
	total, written int64
	hugeAt         int64
	hugeLeft       int64
	hugeDone       bool
	pending        []byte
	iter           int
	templates      []string
}

const hugeLine = 20 << 20

func newStreamGen(total int64) *streamGen {
	chunk := strings.Repeat("output line of a command\\n", 160) // ~4 KiB of JSON-escaped text
	return &streamGen{
		total: total, hugeAt: total / 2,
		templates: []string{
			`{"ts":"2026-12-02T08:12:02.539Z","type":"agent_event","event":{"type":"content_start","contentType":"text","text":"some words of the answer ","accumulated":"some words of the answer "}}` + "\n",
			`{"ts":"2026-12-02T08:12:02.592Z","type":"agent_event","event":{"type":"usage","inputTokens":1234,"outputTokens":56,"totalInputTokens":%d,"totalOutputTokens":56,"totalCost":0}}` + "\n",
			`{"ts":"2026-12-02T08:14:10.307Z","type":"agent_event","event":{"type":"content_start","contentType":"tool","toolName":"read_files","toolCallId":"call_1","input":{"files":["/repo/README.md"]}}}` + "\n",
			`{"ts":"2026-12-02T08:14:10.338Z","type":"agent_event","event":{"type":"content_update","contentType":"tool","toolName":"run_commands","toolCallId":"call_1","update":{"stream":"stdout","chunk":"` + chunk + `","executionId":"e","detachable":false,"commandIndex":0,"query":"make"}}}` + "\n",
			`{"ts":"2026-12-02T08:14:10.356Z","type":"agent_event","event":{"type":"content_end","contentType":"tool","toolName":"read_files","toolCallId":"call_1","output":[{"query":"/repo/README.md","result":"` + chunk + `","success":true}],"durationMs":49}}` + "\n",
			`{"ts":"2026-12-02T08:12:02.606Z","type":"agent_event","event":{"type":"content_end","contentType":"text","text":"` + strings.Repeat("answer text ", 100) + `"}}` + "\n",
		},
	}
}

// fill writes the next part of the stream into buf and returns how much it wrote (0 at the end).
func (g *streamGen) fill(buf []byte) int {
	n := 0
	for n < len(buf) {
		if len(g.pending) > 0 {
			c := copy(buf[n:], g.pending)
			g.pending = g.pending[c:]
			n += c
			continue
		}
		if g.hugeLeft > 0 { // the 20 MiB line, streamed without ever existing in memory
			c := int(min(int64(len(buf)-n), g.hugeLeft))
			for i := range c {
				buf[n+i] = 'x'
			}
			g.hugeLeft -= int64(c)
			n += c
			if g.hugeLeft == 0 {
				g.pending = []byte(`"}}}` + "\n")
			}
			continue
		}
		if !g.hugeDone && g.written+int64(n) >= g.hugeAt {
			g.hugeDone = true
			g.pending = []byte(`{"type":"agent_event","event":{"type":"content_update","contentType":"tool","toolName":"run_commands","update":{"chunk":"`)
			g.hugeLeft = hugeLine
			continue
		}
		if g.written+int64(n) >= g.total {
			if g.iter >= 0 {
				g.pending = []byte(lineResultOK + "\n")
				g.iter = -1
				continue
			}
			break
		}
		g.iter++
		g.pending = []byte(fmt.Sprintf(`{"ts":"t","type":"agent_event","event":{"type":"iteration_start","iteration":%d}}`+"\n", g.iter))
		for i, tpl := range g.templates {
			if i == 1 {
				tpl = fmt.Sprintf(tpl, g.iter)
			}
			g.pending = append(g.pending, tpl...)
		}
	}
	g.written += int64(n)
	return n
}

// TestParserMemoryBounded feeds 1 GiB of JSONL (64 MiB under -race or -short), including one
// 20 MiB line, and checks that the heap never grows past a few MiB.
func TestParserMemoryBounded(t *testing.T) {
	total := int64(1 << 30)
	if raceEnabled || testing.Short() {
		total = 64 << 20
	}
	const heapLimit = 16 << 20
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc

	p := NewParser(nil)
	var sc StderrScanner
	g := newStreamGen(total)
	buf := make([]byte, 64<<10) // one pipe read
	var fed, nextSample int64
	var peak uint64
	start := time.Now()
	for {
		n := g.fill(buf)
		if n == 0 {
			break
		}
		p.Write(buf[:n])
		fed += int64(n)
		if fed >= nextSample {
			nextSample += 32 << 20
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
	}
	p.Close()
	elapsed := time.Since(start)
	sc.Close()

	s := p.Summary()
	if s.OversizeLines != 1 {
		t.Errorf("got %d oversize lines, want the one 20 MiB line", s.OversizeLines)
	}
	if s.Result == nil || s.Result.Text != "PONG" || s.NonJSONLines != 0 {
		t.Errorf("got result %+v and %d non-JSON lines, want the final run_result and none", s.Result, s.NonJSONLines)
	}
	if s.Usage == nil || s.Usage.InputTokens != int64(s.Iteration) {
		t.Errorf("got usage %+v at iteration %d, want the last usage event", s.Usage, s.Iteration)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	retained := int64(ms.HeapAlloc) - int64(base)
	t.Logf("fed %d MiB in %d lines in %v: %.0f MB/s; peak heap %.1f MiB (base %.1f MiB), retained after GC %d KiB",
		fed>>20, s.Lines, elapsed.Round(time.Millisecond), float64(fed)/1e6/elapsed.Seconds(),
		float64(peak)/(1<<20), float64(base)/(1<<20), retained>>10)
	if peak > base+heapLimit {
		t.Errorf("got peak heap %d MiB over a base of %d MiB, want under %d MiB more", peak>>20, base>>20, heapLimit>>20)
	}
	if retained > 2<<20 {
		t.Errorf("got %d KiB retained after GC, want under 2 MiB", retained>>10)
	}
	runtime.KeepAlive(p)
}

func BenchmarkParser(b *testing.B) {
	g := newStreamGen(64 << 20)
	g.hugeDone = true // measure ordinary lines only
	var data []byte
	buf := make([]byte, 64<<10)
	for n := g.fill(buf); n > 0; n = g.fill(buf) {
		data = append(data, buf[:n]...)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		p := NewParser(nil)
		for i := 0; i < len(data); i += len(buf) {
			p.Write(data[i:min(i+len(buf), len(data))])
		}
		p.Close()
	}
}
