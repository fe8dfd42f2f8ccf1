package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Hidden argv[1] values for the fake's own re-exec'ed helpers.
const (
	helperGrandchild = "__fake_cline_grandchild"
	helperSleep      = "__fake_cline_sleep"
)

func runSlow(s *session) int {
	secs := s.intParam("seconds", 5)
	interval := time.Duration(s.intParam("interval_ms", 1000)) * time.Millisecond
	n := int(time.Duration(secs) * time.Second / max(interval, time.Millisecond))
	var parts []string
	for i := 1; i <= max(n, 1); i++ {
		parts = append(parts, "tick "+strconv.Itoa(i)+"\n")
	}
	return s.run(script{turns: []turn{{text: parts, gap: interval}}})
}

func runGarbage(s *session) int {
	s.out.text("this is not JSON\n{\"ts\":broken\n<html>502 Bad Gateway</html>\nPONG\n")
	return 0
}

func runNoResult(s *session) int {
	s.begin()
	s.iterationStart()
	s.modelResponded()
	s.stream(textTurn("PONG"))
	s.iterationEnd(0)
	return 0
}

// moduleNotFound is what the npm wrapper prints while `npm update -g cline` replaces the package.
func moduleNotFound(_, errOut *stream) int {
	errOut.text(`node:internal/modules/cjs/loader:1228
  throw err;
  ^

Error: Cannot find module '/usr/lib/node_modules/cline/bin/cline'
    at Module._resolveFilename (node:internal/modules/cjs/loader:1225:15)
    at Module._load (node:internal/modules/cjs/loader:1051:27)
    at Function.executeUserEntryPoint [as runMain] (node:internal/modules/run_main:174:12)
    at node:internal/main/run_main_module:28:49 {
  code: 'MODULE_NOT_FOUND',
  requireStack: []
}

Node.js v20.18.0
`)
	return 1
}

func selfPath() string {
	if p, err := os.Executable(); err == nil {
		return p
	}
	return os.Args[0]
}

// runGrandchild starts a helper that inherits stdout/stderr and stays in our process group, then
// completes normally: the bridge must not wait for pipe EOF forever.
func runGrandchild(s *session) int {
	cmd := exec.Command(selfPath(), helperGrandchild, strconv.Itoa(s.intParam("seconds", 60)))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		s.errOut.text("grandchild start failed: " + err.Error() + "\n")
		return runPong(s)
	}
	s.errOut.text(fmt.Sprintf("grandchild pid %d\n", cmd.Process.Pid))
	_ = cmd.Process.Release()
	return runPong(s)
}

func grandchildMain(args []string) int {
	secs := 60
	if len(args) > 0 {
		if n, err := strconv.Atoi(args[0]); err == nil {
			secs = n
		}
	}
	time.Sleep(time.Duration(secs) * time.Second)
	return 0
}

func sleepMain(args []string) int { return grandchildMain(args) }

// runHuge writes many content_start lines (or one giant one) quickly with a reused buffer.
func runHuge(s *session) int {
	s.begin()
	s.iterationStart()
	s.modelResponded()
	if n := s.intParam("line", 0); n > 0 {
		text := strings.Repeat("x", n)
		s.event(obj{{"type", "content_start"}, {"contentType", "text"}, {"text", text}, {"accumulated", text}})
		s.usage()
		s.event(obj{{"type", "content_end"}, {"contentType", "text"}, {"text", "huge line done"}})
		s.iterationEnd(0)
		return s.complete("huge line done")
	}
	total := s.intParam("bytes", 1<<20)
	delta := strings.Repeat("abcdefghij", 100) // 1000 bytes of text per line
	written := 0
	buf := make([]byte, 0, 1<<16)
	for written < total {
		buf = buf[:0]
		for len(buf) < 60000 && written+len(buf) < total {
			buf = append(buf, `{"ts":`...)
			buf = appendString(buf, isoNow())
			buf = append(buf, `,"type":"agent_event","event":{"type":"content_start","contentType":"text","text":`...)
			buf = appendString(buf, delta)
			buf = append(buf, `,"accumulated":`...)
			buf = appendString(buf, delta)
			buf = append(buf, "}}\n"...)
		}
		s.out.raw(buf)
		written += len(buf)
	}
	s.usage()
	s.event(obj{{"type", "content_end"}, {"contentType", "text"}, {"text", "huge output done"}})
	s.iterationEnd(0)
	return s.complete("huge output done")
}

// runSecrets leaks secret-shaped strings everywhere the bridge keeps output.
func runSecrets(s *session) int {
	v := s.param("value", "FAKESECRET0123456789abcdef")
	leak := fmt.Sprintf("sk-%s nvapi-%s Bearer %s {\"apiKey\":\"%s\"} API_KEY=%s", v, v, v, v, v)
	s.errOut.text("debug: Authorization: Bearer " + v + "\nOPENAI_API_KEY=" + v + "\n{\"apiKey\":\"" + v + "\",\"token\":\"" + v + "\"}\n")
	return s.run(script{turns: []turn{{reasoning: []string{"secret " + "sk-" + v}, text: chunks("Here: "+leak, 16)}}})
}
