// Package cline is the bridge's knowledge of the Cline CLI (npm cline 3.0.65) and nothing else:
// the argv and environment of one headless run (Args, Env), the global settings that turn
// `--auto-approve true` into a read-only agent (GlobalSettings), the streaming parser of the
// `--json` stdout (Parser) and the stderr scanner (StderrScanner), and the classification of a
// finished run into the seed's error kinds (Classify, IsTransient, ShouldRetry).
//
// Everything here is pure: it imports only the standard library, starts no process and touches
// no file. The facts it encodes were observed in real runs of the CLI, kept in
// testdata/recordings and written up in docs/cline-cli.md, which the doc comments cite by section.
//
// Memory is bounded by construction: the parsers keep counters, the last few errors and the
// final answer (capped at MaxTextBytes), never the stream itself, and discard any line longer
// than MaxLineBytes without buffering it.
package cline
