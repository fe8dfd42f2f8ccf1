//go:build contract && linux

package contract

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/acp"
	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/contract/fakeprovider"
)

// TestACPLatency measures, with the real CLI and the fake provider, n rounds of: an ACP process's
// initialize (from spawn), session/new + model, the first turn, three later turns in the live
// process, a cancel (session/cancel → stopReason), and — alternated in the same rounds — one
// `--json` one-shot (spawn → exit). It logs medians; it asserts nothing about time. Run with
// CLINE_MCP_CONTRACT_BENCH=<rounds> (e.g. 5).
func TestACPLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envBench))
	if n <= 0 {
		t.Skipf("set %s=<rounds> (e.g. 5) to measure", envBench)
	}
	w := newACPWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")))
	var init, setup, first, later, cancel, oneShot []time.Duration
	for range n {
		w.prov.SetResponder(fakeprovider.Script(fakeprovider.Text("PONG")))
		p := w.agent(acpKey, acp.Options{})
		ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
		if _, err := p.conn.Initialize(ctx); err != nil {
			t.Fatal(err)
		}
		init = append(init, time.Since(p.started))
		start := time.Now()
		s := w.session(p, acp.ReadOnly(false))
		setup = append(setup, time.Since(start))
		for i := range 4 {
			start = time.Now()
			if turn, err := s.Prompt(ctx, "Reply with the word PONG", nil); err != nil || turn.Text != "PONG" {
				t.Fatalf("turn: %+v, %v", turn, err)
			}
			if i == 0 {
				first = append(first, time.Since(start))
			} else {
				later = append(later, time.Since(start))
			}
		}
		w.prov.SetResponder(fakeprovider.Script(fakeprovider.Hang()))
		arrived := w.prov.Arrived(len(w.prov.Chats()) + 1)
		cctx, ccancel := context.WithCancel(ctx)
		var cancelled time.Time
		go func() { <-arrived; cancelled = time.Now(); ccancel() }()
		if turn, err := s.Prompt(cctx, "Reply with the word PONG", nil); err != nil || turn.StopReason != "cancelled" {
			t.Fatalf("cancel: %+v, %v", turn, err)
		}
		cancel = append(cancel, time.Since(cancelled))
		p.stop(t)
		stop()
		w.prov.SetResponder(fakeprovider.Script(fakeprovider.Text("PONG")))
		oneShot = append(oneShot, w.jsonOneShot(t))
	}
	t.Logf("real CLI %s, fake provider, %d rounds (medians, min–max):", clineVersion, n)
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{
		{"ACP initialize (spawn → answer)", init}, {"ACP session/new + set model", setup},
		{"ACP first turn", first}, {"ACP later turn (live process)", later},
		{"ACP cancel → stopReason", cancel}, {"--json one-shot (spawn → exit)", oneShot},
	} {
		t.Logf("  %-34s p50 %7v  (%v–%v)", m.name, p50(m.ds).Round(time.Millisecond), slices.Min(m.ds).Round(time.Millisecond), slices.Max(m.ds).Round(time.Millisecond))
	}
	t.Logf("  --json one-shot / ACP later turn: %.1f×; / ACP first turn incl. initialize: %.2f×",
		float64(p50(oneShot))/float64(p50(later)), float64(p50(oneShot))/float64(p50(init)+p50(setup)+p50(first)))
}

// jsonOneShot runs one `cline --json` call the way bridge/run does (cline.Args/Env, stdin
// /dev/null, the world's HOME and providers.json) and returns the time from spawn to exit.
func (w *acpWorld) jsonOneShot(t *testing.T) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, suite.cli, cline.Args(cline.Request{Prompt: "Reply with the word PONG", Cwd: w.work})...)
	cmd.Env = cline.Env([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + filepath.Join(w.root, "tmp"), "CONTRACT_RUN_TAG=" + w.tag}, nil)
	cmd.Dir = w.work
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil {
		t.Fatalf("cline --json: %v\n%s", err, tail(string(out), 2000))
	}
	return d
}

// TestACPFirstTurnAfterWarmUp measures, with the real CLI and the fake provider, what a spare's
// warm-up buys (bridge/run/engine warmup.go): the first turn of a new session in a process that
// has only initialized, in one whose one request so far was refused (403, as the egress proxy
// refuses a disarmed spare's), and in one that has answered a turn. It logs medians; it asserts
// nothing about time (CLINE_MCP_CONTRACT_BENCH=<rounds>).
func TestACPFirstTurnAfterWarmUp(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(envBench))
	if n <= 0 {
		t.Skipf("set %s=<rounds> (e.g. 5) to measure", envBench)
	}
	w := newACPWorld(t, fakeprovider.Script(fakeprovider.Text("PONG")))
	first := func(p *agentProc) time.Duration {
		w.prov.SetResponder(fakeprovider.Script(fakeprovider.Text("PONG")))
		s := w.session(p, acp.ReadOnly(false))
		start := time.Now()
		if turn, err := w.prompt(s, "Reply with the word PONG"); err != nil || turn.Text != "PONG" {
			t.Fatalf("turn: %+v, %v", turn, err)
		}
		return time.Since(start)
	}
	var cold, refused, answered []time.Duration
	for range n {
		p := w.initialized(acp.Options{})
		cold = append(cold, first(p))
		p.stop(t)

		p = w.initialized(acp.Options{})
		w.prov.SetResponder(fakeprovider.Script(fakeprovider.Error(403, nil)))
		if _, err := w.prompt(w.session(p, acp.ReadOnly(false)), "warm-up"); err == nil {
			t.Fatal("the refused warm-up turn did not fail")
		}
		refused = append(refused, first(p))
		p.stop(t)

		p = w.initialized(acp.Options{})
		first(p)
		answered = append(answered, first(p))
		p.stop(t)
	}
	t.Logf("real CLI %s, fake provider, first turn of a new session, %d rounds (medians, min–max):", clineVersion, n)
	for _, m := range []struct {
		name string
		ds   []time.Duration
	}{{"process only initialized", cold}, {"after one refused request", refused}, {"after an answered turn", answered}} {
		t.Logf("  %-26s p50 %7v  (%v–%v)", m.name, p50(m.ds).Round(time.Millisecond), slices.Min(m.ds).Round(time.Millisecond), slices.Max(m.ds).Round(time.Millisecond))
	}
}
