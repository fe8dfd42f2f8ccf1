// Command cline-mcp-k8s-helper is the static helper of cline-mcp's Kubernetes executor
// (sandbox/kubernetes), in the run's image. A run's pod uses it four ways:
//
//	untar DIR...     (the init container) unpack the archives on stdin, one after the other,
//	                 into the DIRs, emptyDirs of the pod
//	wait             (the keeper container) keep the pod's emptyDirs reachable until SIGTERM, for
//	                 the copy back after the main container ended
//	tar PATH         (exec into the keeper) a tar of PATH on stdout: "./" entries for a
//	                 directory, one entry for a file, nothing when it is gone
//	run -- PROG ARGS (the main container) run PROG with stdout and stderr framed on stdout
//	                 like Docker's multiplexed stream (the logs API merges the two), turn the
//	                 first SIGTERM into SIGINT for PROG, and exit with its status
//
// It uses only the standard library.
package main

import (
	"archive/tar"
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: cline-mcp-k8s-helper untar DIR... | wait | tar PATH | run -- PROG ARGS")
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
		if len(args) > 0 && args[0] == "--" {
			args = args[1:]
		}
		if len(args) == 0 {
			err = fmt.Errorf("run: want -- PROG ARGS")
			break
		}
		os.Exit(run(args))
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "cline-mcp-k8s-helper:", err)
		os.Exit(1)
	}
}
