package proc

import (
	"bytes"
	"os"
	"strconv"
)

func selfPID() int { return os.Getpid() }

func list() ([]int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func environ(pid int) ([][]byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return nil, err
	}
	return bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}), nil
}
