package worktree

import (
	"bytes"
	"os"
	"strconv"
)

// processStartTime reads field 22 of /proc/<pid>/stat (clock ticks after boot), which changes
// when a pid is reused.
func processStartTime(pid int) (uint64, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may contain spaces and parentheses; fields resume after the
	// last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, false
	}
	fields := bytes.Fields(data[i+1:])
	// fields[0] is field 3 (state), so field 22 is fields[19].
	if len(fields) < 20 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(fields[19]), 10, 64)
	return v, err == nil
}
