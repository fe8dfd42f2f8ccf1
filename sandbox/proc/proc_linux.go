package proc

import (
	"errors"
	"os"
	"strconv"
)

func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err // a vanished process is fs.ErrNotExist
	}
	t, err := parseStatStart(b)
	if errors.Is(err, errZombie) {
		return 0, os.ErrNotExist // exited, not yet reaped by its parent: it runs no more
	}
	return t, err
}
