package testcluster

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockCluster takes the cluster's lock (run's name + ".lock", beside the run dir, which is the
// machine's: its network namespace has the same name whatever cache a checkout builds into),
// waiting for another test binary that holds it: `go test ./...` runs packages in parallel, and
// there is one cluster per machine. The lock is released by unlock or when the process ends.
func lockCluster(run string) (unlock func(), path string, err error) {
	if err := os.MkdirAll(filepath.Dir(run), 0o755); err != nil {
		return nil, "", err
	}
	path = run + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, "", err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, path, nil
}
