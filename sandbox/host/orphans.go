package host

import (
	"errors"
	"strings"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// SweepOrphans ends the processes that servers which died left running: every process whose
// environment carries sandbox.InstanceEnv naming an instance for which dead reports true gets
// SIGKILL, with its process group. It is the backstop of the lifeline (whose watchdog normally
// does this within seconds) for when the watchdog died too. Processes of live instances — this
// one included — are never touched. On platforms where process environments cannot be read
// (Windows, where the Job Object already ends each run with the server) it does nothing.
func SweepOrphans(dead func(instance string) bool) (killed []int, err error) {
	pids, entries, err := proc.WithEnv(sandbox.InstanceEnv + "=")
	if errors.Is(err, proc.ErrNoEnviron) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, pid := range pids {
		if !dead(strings.TrimPrefix(entries[i], sandbox.InstanceEnv+"=")) {
			continue
		}
		if err := killTree(pid); err != nil {
			errs = append(errs, err)
			continue
		}
		killed = append(killed, pid)
	}
	return killed, errors.Join(errs...)
}
