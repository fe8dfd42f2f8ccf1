//go:build unix

package main

import (
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// poolAttackScenarios leave state in a worktree that git neither reports nor undoes, and probe
// for it in the next call (the worktree pool).
var poolAttackScenarios = map[string]scenarioDef{
	"attack_pool_state": {doc: "plants in -c what git does not undo: FIFOs fifo= (notes.fifo) and, instead of a tracked file, fifo_tracked= (doc/text.md), a unix socket socket= (agent.sock), a hard link link= (src/b.go:src/b.link), chmod 0666 on chmod= (README.md), setuid on setuid= (src/a.go), 0777+setgid+sticky on dir= (src), and tries a device node mknod= (null)", run: runAttackPoolState},
	"probe_pool_state":  {doc: "reads each of paths= (comma-separated, default notes.fifo,doc/text.md,agent.sock) with a blocking open (\"hung\" after wait_ms= 5000) and lists every entry of -c that is not a directory, regular file or symlink, has more than one link, or has group/other-writable or set-id/sticky bits; JSON report", run: runProbePoolState},
}

func runAttackPoolState(s *session) int {
	return s.attack(func(r *obj) {
		r.step("fifo", makeFIFO(s.abs(s.param("fifo", "notes.fifo"))))
		tracked := s.abs(s.param("fifo_tracked", "doc/text.md"))
		err := os.Remove(tracked)
		if err == nil {
			err = makeFIFO(tracked)
		}
		r.step("fifo_tracked", err)
		r.step("socket", plantSocket(s.abs(s.param("socket", "agent.sock"))))
		from, to, _ := strings.Cut(s.param("link", "src/b.go:src/b.link"), ":")
		r.step("link", os.Link(s.abs(from), s.abs(to)))
		r.step("chmod", os.Chmod(s.abs(s.param("chmod", "README.md")), 0o666))
		r.step("setuid", os.Chmod(s.abs(s.param("setuid", "src/a.go")), 0o755|fs.ModeSetuid))
		r.step("dir", os.Chmod(s.abs(s.param("dir", "src")), 0o777|fs.ModeSetgid|fs.ModeSticky))
		r.step("mknod", syscall.Mknod(s.abs(s.param("mknod", "null")), syscall.S_IFCHR|0o666, 0x103))
	})
}

// plantSocket leaves a unix socket file at p: bound by its base name from its directory (socket
// paths are limited to ~100 bytes), and closed without unlinking it.
func plantSocket(p string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if err := os.Chdir(filepath.Dir(p)); err != nil {
		return err
	}
	defer os.Chdir(wd)
	l, err := net.Listen("unix", filepath.Base(p))
	if err != nil {
		return err
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	return l.Close()
}

func runProbePoolState(s *session) int {
	return s.probe(func() obj {
		wait := time.Duration(s.intParam("wait_ms", 5000)) * time.Millisecond
		reads := obj{}
		for _, rel := range strings.Split(s.param("paths", "notes.fifo,doc/text.md,agent.sock"), ",") {
			reads = append(reads, kv{rel, blockingRead(s.abs(rel), wait)})
		}
		var odd []string
		top := s.worktreeTop()
		filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				odd = append(odd, err.Error())
				return nil
			}
			rel, _ := filepath.Rel(top, p)
			if rel == ".git" && d.IsDir() {
				return filepath.SkipDir
			}
			fi, err := os.Lstat(p)
			if err != nil || rel == "." || rel == ".git" {
				return nil
			}
			m := fi.Mode()
			links := uint64(1)
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && !fi.IsDir() {
				links = uint64(st.Nlink)
			}
			if t := m.Type(); (t != 0 && t != fs.ModeDir && t != fs.ModeSymlink) || links > 1 ||
				m&0o022 != 0 || m&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
				odd = append(odd, fmt.Sprintf("%s %v links=%d", filepath.ToSlash(rel), m, links))
			}
			return nil
		})
		return obj{{"reads", reads}, {"odd", odd}}
	})
}

// blockingRead opens and reads p as an ordinary program would; a read still blocked after wait
// is "hung" (the goroutine stays behind; the process ends soon after).
func blockingRead(p string, wait time.Duration) string {
	done := make(chan string, 1)
	go func() {
		f, err := os.Open(p)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		defer f.Close()
		n, err := io.Copy(io.Discard, f)
		if err != nil {
			done <- "error: " + err.Error()
			return
		}
		done <- fmt.Sprintf("read %d bytes", n)
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(wait):
		return "hung"
	}
}
