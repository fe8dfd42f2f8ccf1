// Package acp is the bridge's client side of a conversation with `cline --acp` (the Agent Client
// Protocol: NDJSON JSON-RPC 2.0 over the child's stdin/stdout), built on
// github.com/coder/acp-go-sdk. It owns the protocol engine and nothing else: it starts no
// process, opens no pipe and touches no file but the session manifest a caller asks it to read
// (ReadUsage). A Conn works over any io.Writer/io.Reader pair — a host process's pipes, a
// container's attached stdio, or io.Pipe in tests.
//
// One Conn is one `cline --acp` process: Initialize (checks the protocol version and records
// whether loadSession is advertised), then NewSession or LoadSession (an unknown id is a
// *SessionNotFoundError), then Session.SetModel (session/set_config_option configId "model";
// ACP ignores -m and a load resets the model, so set it after every new or load) and one
// Session.Prompt per turn. Args and Env shape the child's command line and environment (pure
// functions, like bridge/cline's), Classify turns a Turn into the seed's error kinds through
// bridge/cline's Classify, and ReadUsage reads a session's cumulative usage from its manifest
// because the CLI sends none on the wire (facts in docs/acp.md, cited as
// docs/acp.md §n).
//
// Control over tools is the answer to session/request_permission: every tool call of the CLI
// asks first (docs/acp.md §5), and Policy decides it from the call's kind AND tool name (apply_patch is
// kind "other"). ReadOnly allows reads and searches (and, when asked, commands); Edits allows
// everything but commands that would create a commit. Every rejected call is recorded in the
// Turn. The CLI never uses the client's fs/terminal methods; the engine refuses them.
//
// Deadlines: when a turn's ctx ends the engine sends session/cancel, answers every pending
// permission request "cancelled" (the CLI waits for that answer, docs/acp.md §6), and waits CancelGrace
// for the stopReason; without one it closes the agent's stdin (Conn.Close) and returns
// ErrUnresponsive: the caller then kills the process. Hostile or malformed agent output never
// panics or blocks the engine (fuzzed): bounded state, text capped at cline.MaxTextBytes.
//
// How it plugs in: the run loop gets a second engine beside the `--json` one, chosen by
// `--cline-protocol acp|json`. For acp it starts `cline --acp` (Args, Env) through the same
// executors with stdin attached, hands the pipes to New, maps Turn events to progress exactly
// as it does the --json parser's (the events have the same shape), and classifies with
// Classify plus the executor's exit. Sessions and warm processes sit above a Conn.
package acp
