package docker

import (
	"bytes"
	"fmt"
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

// parseStatStart reads field 22 of a /proc/<pid>/stat line. The command name (field 2) is in
// parentheses and may contain spaces and parentheses, so fields are counted after the last ')'.
func parseStatStart(stat []byte) (uint64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("proc stat: no command field")
	}
	fields := bytes.Fields(stat[i+1:])
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("proc stat: %d fields after the command", len(fields))
	}
	return strconv.ParseUint(string(fields[19]), 10, 64)
}
