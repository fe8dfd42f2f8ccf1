package run

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/cline-mcp/cline-mcp/bridge/cline"
	"github.com/cline-mcp/cline-mcp/bridge/redact"
	"github.com/cline-mcp/cline-mcp/sandbox"
)

// An engine speaks to the CLI for one attempt: it shapes the command line, runs the spec the call
// prepared (executable, environment, directory, mounts, settings, tool policy) on the executor
// within the call's time limit, and turns what the CLI said into the attempt's facts — ran, exit,
// tails, tool calls, verdict — and the call's progress. The call does everything else (settings
// discipline, policy, workspace, retries, redaction of the result), so every promise of a call
// holds whatever the engine.
//
// jsonEngine (here) is the one-shot `cline --json` run: one process per attempt, its NDJSON
// stream read by cline.Parser. A new engine (the Agent Client Protocol one, say) implements the
// same two methods and is chosen in New.
type engine interface {
	// argv are the CLI's arguments for req (without the executable).
	argv(req cline.Request) []string
	// env adds what the engine needs to the child's environment; providers is the providers.json
	// the attempt runs with (the user's file, or the attempt's private copy).
	env(k *call, a *attempt, providers string, extra map[string]string)
	// sessions reports whether the engine's runs are conversations that a later call continues.
	sessions() bool
	// run executes spec on exec and fills a. A copy-mode engine's refusal to bring the run's
	// changes back is returned, not treated as a failure to run.
	run(ctx context.Context, k *call, a *attempt, exec sandbox.Executor, spec sandbox.Spec) *sandbox.CopyBackError
}

type jsonEngine struct{}

func (jsonEngine) argv(req cline.Request) []string { return cline.Args(req) }

func (jsonEngine) env(*call, *attempt, string, map[string]string) {}

func (jsonEngine) sessions() bool { return false }

func (jsonEngine) run(ctx context.Context, k *call, a *attempt, exec sandbox.Executor, spec sandbox.Spec) *sandbox.CopyBackError {
	parser := cline.NewParser(func(ev cline.Event) { k.onEvent(a, ev) })
	stderr := &cline.StderrScanner{}
	outTail, errTail := k.red.NewTail(redact.DefaultTailChars), k.red.NewTail(redact.DefaultTailChars)
	spec.Stdout = io.MultiWriter(parser, outTail)
	spec.Stderr = io.MultiWriter(stderr, errTail)

	actx, cancel := context.WithTimeout(ctx, time.Duration(k.TimeoutSeconds)*time.Second)
	bctx, stop := context.WithCancel(actx) // a spend limit ends the run here
	k.budget.begin(stop)
	exit, err := exec.Run(bctx, spec)
	k.budget.end()
	deadline := errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	stop()
	cancel()
	parser.Close()
	stderr.Close()
	outTail.Flush()
	errTail.Flush()
	a.stdoutTail, a.stderrTail = outTail.String(), errTail.String()
	// Copy mode: the run happened, only bringing its changes back was refused (a hostile or
	// oversized archive); nothing was written to the host.
	var copyBack *sandbox.CopyBackError
	if errors.As(err, &copyBack) {
		err = nil
	}
	if err != nil {
		a.verdict = k.budget.verdict(k.startVerdict(ctx, err, a.iso, deadline))
		return nil
	}
	a.ran, a.exit = true, exit
	sum := parser.Summary()
	a.toolCalls = sum.ToolCalls
	if a.iso.Container() || len(sum.MutatingSuccesses) > 0 {
		k.mayHaveWritten = true
	}
	a.verdict = cline.Classify(cline.Outcome{
		ExitCode:       exit.Code,
		Signal:         exit.Signal,
		TimedOut:       exit.Stopped && deadline,
		Cancelled:      exit.Stopped && !deadline,
		TimeoutSeconds: k.TimeoutSeconds,
		Elapsed:        exit.Duration,
		Stdout:         sum,
		Stderr:         stderr.Summary(),
		OOMKilled:      exit.OOMKilled,
		Analysis:       k.Tool.Analysis(),
		Allowed:        k.allowedTools(a.iso),
	})
	a.verdict = k.budget.verdict(a.verdict)
	return copyBack
}
