//go:build unix && !linux

package host

// awaitExit reaps the main process: these systems have no portable way (in x/sys/unix) to wait
// without reaping. The final group kill then addresses a group id that could in theory have been
// reused — only if every member is gone and the pid was recycled in between, which makes the
// kill a no-op in practice.
func (g *pgroup) awaitExit() bool {
	_ = g.cmd.Wait()
	return true
}
