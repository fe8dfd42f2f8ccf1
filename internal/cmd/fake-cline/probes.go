package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// probe runs fn and answers with its JSON report. A reasoning delta comes first as a marker, so
// a test can tell "the probe ran and was blocked" from "nothing ran at all".
func (s *session) probe(fn func() obj) int {
	s.begin()
	s.iterationStart()
	s.modelResponded()
	s.event(obj{{"type", "content_start"}, {"contentType", "reasoning"}, {"reasoning", "fake-cline " + s.scenario + " running"}, {"redacted", false}})
	report := string(appendJSON(nil, fn()))
	s.stream(textTurn(report))
	s.linger()
	s.iterationEnd(0)
	return s.complete(report)
}

func errString(err error) any {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func runProbeWrite(s *session) int {
	return s.probe(func() obj {
		home := os.Getenv("HOME")
		targets := []kv{{"root", "/"}, {"etc", "/etc"}, {"parent", filepath.Dir(s.paths.workDir)}, {"home", home}, {"cwd", s.paths.workDir}, {"tmp", os.TempDir()}}
		r := obj{}
		for _, t := range targets {
			dir := t.v.(string)
			if dir == "" {
				r = append(r, kv{t.k, obj{{"path", dir}, {"result", "unset"}}})
				continue
			}
			p := filepath.Join(dir, ".fake-cline-probe-"+strconv.Itoa(os.Getpid()))
			err := os.WriteFile(p, []byte("probe\n"), 0o600)
			if err == nil && s.params.Get("keep") != "true" {
				_ = os.Remove(p)
			}
			r = append(r, kv{t.k, obj{{"path", dir}, {"result", errString(err)}}})
		}
		return r
	})
}

func runProbeRead(s *session) int {
	return s.probe(func() obj {
		p := s.param("path", "/etc/shadow")
		f, err := os.Open(p)
		if err != nil {
			return obj{{"path", p}, {"ok", false}, {"error", err.Error()}}
		}
		defer f.Close()
		buf := make([]byte, 256)
		n, err := f.Read(buf)
		if err != nil && n == 0 {
			return obj{{"path", p}, {"ok", false}, {"error", err.Error()}}
		}
		return obj{{"path", p}, {"ok", true}, {"bytes", n}, {"head", string(buf[:min(n, 64)])}}
	})
}

func runProbeCaps(s *session) int {
	return s.probe(func() obj {
		dir, err := os.MkdirTemp("", "fake-cline-caps")
		if err != nil {
			return obj{{"error", err.Error()}}
		}
		defer os.RemoveAll(dir)
		f := filepath.Join(dir, "f")
		_ = os.WriteFile(f, nil, 0o600)
		r := obj{{"uid", os.Getuid()}, {"euid", os.Geteuid()}, {"gid", os.Getgid()}}
		r = append(r, kv{"chown_root", errString(os.Chown(f, 0, 0))})
		r = append(r, kv{"chown_nobody", errString(os.Chown(f, 65534, 65534))})
		r = append(r, privilegedProbes(dir)...)
		if status, err := os.ReadFile("/proc/self/status"); err == nil {
			r = append(r, kv{"status", procCaps(string(status))})
		}
		return r
	})
}

// procCaps extracts the Cap*, NoNewPrivs and Seccomp lines of /proc/self/status.
func procCaps(status string) obj {
	r := obj{}
	for _, line := range strings.Split(status, "\n") {
		for _, k := range []string{"CapEff", "CapBnd", "CapPrm", "NoNewPrivs", "Seccomp"} {
			if len(line) > len(k)+1 && line[:len(k)+1] == k+":" {
				r = append(r, kv{k, strings.TrimSpace(line[len(k)+1:])})
			}
		}
	}
	return r
}

func runProbeNet(s *session) int {
	return s.probe(func() obj {
		addr := s.param("addr", "1.1.1.1:443")
		host := s.param("host", "example.com")
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err == nil {
			_ = conn.Close()
		}
		r := obj{{"tcp", obj{{"addr", addr}, {"result", errString(err)}}}, {"dns", dnsProbe(host)}}
		return append(r, netProbes(s)...)
	})
}

func runProbePids(s *session) int {
	return s.probe(func() obj {
		n := s.intParam("n", 50)
		var procs []*exec.Cmd
		var firstErr error
		for range n {
			cmd := exec.Command(selfPath(), helperSleep, strconv.Itoa(s.intParam("hold", 30)))
			if err := cmd.Start(); err != nil {
				firstErr = err
				break
			}
			procs = append(procs, cmd)
		}
		started := len(procs)
		for _, p := range procs {
			_ = p.Process.Kill()
			_ = p.Wait()
		}
		r := obj{{"requested", n}, {"started", started}}
		if firstErr != nil {
			r = append(r, kv{"firstError", firstErr.Error()})
		}
		return r
	})
}

// runProbeGit runs git in -c without a shell: log (history readable?), status, and an attempt to
// commit (which a read-only git dir must stop). It needs a git binary in the image.
func runProbeGit(s *session) int {
	return s.probe(func() obj {
		r := obj{}
		for _, c := range []kv{
			{"log", "git log --oneline -1"},
			{"status", "git --no-optional-locks status --porcelain"},
			{"commit", "git -c user.name=fake-cline -c user.email=fake-cline@example.invalid -c commit.gpgsign=false commit --allow-empty -m probe"},
		} {
			out, ok := s.builtin(c.v.(string))
			r = append(r, kv{c.k, obj{{"ok", ok}, {"output", out}}})
		}
		return r
	})
}
