package docker

import (
	"os"
	"strconv"
)

// procStartTicks is the start time of process pid in clock ticks since boot (field 22 of
// /proc/<pid>/stat). A vanished process gives an error that wraps os.ErrNotExist.
func procStartTicks(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	return parseStatStart(b)
}
