package host

import (
	"errors"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cline-mcp/cline-mcp/sandbox"
	"github.com/cline-mcp/cline-mcp/sandbox/proc"
)

// SweepOrphans ends the processes that servers which died left running: every process whose
// environment carries sandbox.InstanceEnv naming an instance for which dead reports true gets
// SIGKILL. It is the backstop of the lifeline (whose watchdog normally does this within
// seconds) for when the watchdog died too. Processes of live instances — this one included —
// are never touched, and neither is a live cline-mcp started from inside a dead server's run (a
// CI job's `cline-mcp review`): it re-executes itself without the inherited variable at start,
// being an instance of its own.
//
// Each candidate is looked at twice, secondLook apart, and killed only if both looks agree on
// its start time (the pid was not reused) and on the variable (the second look sees a cline-mcp
// that has dropped it since). A candidate that leads its process group, as each run's process
// does, takes the whole group with it — but only when every live member of the group carries a
// dead instance's marker too; a group with any other member (a live instance, somebody else's
// process) loses only its marked members, one by one. On platforms where process environments
// cannot be read (Windows, where the Job Object already ends each run with the server) it does
// nothing.
func SweepOrphans(dead func(instance string) bool) (killed []int, err error) {
	first, err := orphans(dead)
	if len(first) == 0 || err != nil {
		return nil, err
	}
	starts := map[int]uint64{}
	for pid := range first {
		if start, err := proc.StartTime(pid); err == nil {
			starts[pid] = start
		}
	}
	time.Sleep(secondLook)
	second, err := orphans(dead)
	if err != nil {
		return nil, err
	}
	whole := wholeGroups(second)
	var errs []error
	for pid, entry := range first {
		if start, ok := starts[pid]; !ok || second[pid] != entry {
			continue
		} else if now, err := proc.StartTime(pid); err != nil || now != start {
			continue
		}
		if err := killTree(pid, whole[pid]); err != nil {
			errs = append(errs, err)
			continue
		}
		killed = append(killed, pid)
	}
	slices.Sort(killed)
	return killed, errors.Join(errs...)
}

// secondLook is the pause between SweepOrphans' two looks: longer than a cline-mcp takes from
// its start to the re-exec that drops an inherited marker.
const secondLook = 100 * time.Millisecond

// orphans maps the pid of every process whose environment names a dead instance to that entry.
func orphans(dead func(instance string) bool) (map[int]string, error) {
	pids, entries, err := proc.WithEnv(sandbox.InstanceEnv + "=")
	if errors.Is(err, proc.ErrNoEnviron) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for i, pid := range pids {
		if dead(strings.TrimPrefix(entries[i], sandbox.InstanceEnv+"=")) {
			out[pid] = entries[i]
		}
	}
	return out, nil
}

// wholeGroups are the processes of marked that lead their process group while every live member
// of that group is in marked too: those groups may be killed whole.
func wholeGroups(marked map[int]string) map[int]bool {
	leaders := map[int]bool{}
	for pid := range marked {
		if g, err := pgidOf(pid); err == nil && g == pid {
			leaders[pid] = true
		}
	}
	if len(leaders) == 0 {
		return leaders
	}
	pids, err := proc.Pids()
	if err != nil {
		return map[int]bool{}
	}
	for _, pid := range pids {
		if _, ok := marked[pid]; ok {
			continue
		}
		g, err := pgidOf(pid)
		if err != nil || !leaders[g] {
			continue
		}
		if _, err := proc.StartTime(pid); errors.Is(err, os.ErrNotExist) {
			continue // exited (a zombie): it runs no more
		}
		delete(leaders, g)
	}
	return leaders
}
