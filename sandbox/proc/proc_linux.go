package proc

import (
	"os"
	"strconv"
)

func startTime(pid int) (uint64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err // a vanished process is fs.ErrNotExist
	}
	return parseStatStart(b)
}
