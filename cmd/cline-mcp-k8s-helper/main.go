// Command cline-mcp-k8s-helper is the static helper of cline-mcp's Kubernetes executor
// (sandbox/kubernetes), in the run's image. A run's pod uses it four ways:
//
//	untar DIR...     (the init container) unpack the archives on stdin, one after the other,
//	                 into the DIRs, emptyDirs of the pod
//	wait             (the keeper container) keep the pod's emptyDirs reachable until SIGTERM, for
//	                 the copy back after the main container ended
//	tar PATH         (exec into the keeper) a tar of PATH on stdout: "./" entries for a
//	                 directory, one entry for a file, nothing when it is gone
//	run -- PROG ARGS (the main container) run PROG on the container's stdin (an ACP run's,
//	                 which the executor attaches; else empty) with stdout and stderr framed on stdout
//	                 like Docker's multiplexed stream (the logs API merges the two), turn the
//	                 first SIGTERM into SIGINT for PROG, and exit with its status; with --wait ADDR
//	                 it first waits until ADDR (the egress sidecar's provider listener on the
//	                 pod's loopback) accepts connections, which it does once it holds the run's
//	                 credential
//
// A warm pod's main container (made before its call, sandbox/kubernetes warm.go) runs
//
//	warm [--wait ADDR] read one JSON line on stdin ({"args", "env", "dir"}: the run's command,
//	                 environment and directory), then behave as run, the rest of stdin being
//	                 the program's
//
// A cancelled run's main container gets
//
//	stop             (exec'd into the main container) SIGTERM to its pid 1, the `run` above
//
// and doctor's NetworkPolicy probe uses two more (sandbox/kubernetes ProbePolicy):
//
//	serve ADDR SECS  accept TCP connections on ADDR (closing each) for SECS seconds
//	dial ADDR        after 3 s, try to connect to ADDR for 3 s: status 0 and "connected", or 3
//	                 and "blocked: <error>", also as the termination message
//
// It uses only the standard library.
package main

import (
	"archive/tar"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cline-mcp-k8s-helper untar DIR... | wait | tar PATH | run [--wait ADDR] -- PROG ARGS | warm [--wait ADDR] | stop | serve ADDR SECS | dial ADDR")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "untar":
		if len(os.Args) < 3 {
			err = fmt.Errorf("untar: want DIR...")
			break
		}
		// A tar reader stops right after an archive's end blocks: the next archive follows.
		for _, dir := range os.Args[2:] {
			if err = untar(tar.NewReader(os.Stdin), dir); err != nil {
				err = fmt.Errorf("untar %s: %w", dir, err)
				break
			}
		}
	case "tar":
		if len(os.Args) != 3 {
			err = fmt.Errorf("tar: want PATH")
			break
		}
		err = writeTar(os.Stdout, os.Args[2])
	case "wait":
		waitForStop()
	case "run":
		args := os.Args[2:]
		wait := ""
		if len(args) > 1 && args[0] == "--wait" {
			wait, args = args[1], args[2:]
		}
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 {
			err = fmt.Errorf("run: want [--wait ADDR] -- PROG ARGS")
			break
		}
		if wait != "" {
			if err = waitListening(wait, waitBound); err != nil {
				os.Exit(startFail(err))
			}
		}
		os.Exit(run(args))
	case "warm":
		wait := ""
		if len(os.Args) == 4 && os.Args[2] == "--wait" {
			wait = os.Args[3]
		} else if len(os.Args) != 2 {
			err = fmt.Errorf("warm: want [--wait ADDR]")
			break
		}
		os.Exit(warm(os.Stdin, wait))
	case "stop":
		// exec'd into the main container when a run is cancelled: its pid 1 is `run`, which
		// passes the first SIGTERM on to the program as SIGINT.
		var p *os.Process
		if p, err = os.FindProcess(1); err == nil {
			err = p.Signal(syscall.SIGTERM)
		}
	case "serve":
		secs, perr := strconv.Atoi(arg(3))
		if len(os.Args) != 4 || perr != nil || secs <= 0 {
			err = fmt.Errorf("serve: want ADDR SECS")
			break
		}
		err = serve(os.Args[2], time.Duration(secs)*time.Second)
	case "dial":
		if len(os.Args) != 3 {
			err = fmt.Errorf("dial: want ADDR")
			break
		}
		os.Exit(dial(os.Args[2]))
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-k8s-helper:", err)
		os.Exit(1)
	}
}

// arg is os.Args[i], or "" when there are fewer.
func arg(i int) string {
	if i < len(os.Args) {
		return os.Args[i]
	}
	return ""
}
