package proc

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// errZombie: the process has exited and only waits to be reaped; it runs no more.
var errZombie = errors.New("proc stat: zombie")

// parseStatStart reads field 22 (starttime) of a /proc/<pid>/stat line, or errZombie when field
// 3 (state) says the process is a zombie. The command name (field 2) is in parentheses and may
// contain spaces and parentheses, so fields are counted after the last ')'. It is portable so its
// tests run everywhere.
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
	if string(fields[0]) == "Z" {
		return 0, errZombie
	}
	return strconv.ParseUint(string(fields[19]), 10, 64)
}
