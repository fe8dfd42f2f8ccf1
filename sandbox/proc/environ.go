package proc

import (
	"bytes"
	"encoding/binary"
	"errors"
)

// ErrNoEnviron means this platform cannot list processes or read their environment.
var ErrNoEnviron = errors.New("process environments: not readable on this platform")

// Pids lists the pids of all running processes (Linux, macOS; elsewhere ErrNoEnviron).
func Pids() ([]int, error) { return list() }

// WithEnv lists the pids of running processes (this one excluded) whose environment holds the
// exact entry kv ("NAME=value"), or an entry "NAME=..." when kv ends with "=" (any value); the
// matched entries are returned beside the pids. Processes whose environment cannot be read
// (another user's) are skipped. Linux reads /proc, macOS sysctl kern.procargs2; elsewhere the
// error is ErrNoEnviron.
func WithEnv(kv string) (pids []int, entries []string, err error) {
	all, err := list()
	if err != nil {
		return nil, nil, err
	}
	want := []byte(kv)
	prefix := len(kv) > 0 && kv[len(kv)-1] == '='
	for _, pid := range all {
		if pid <= 1 || pid == selfPID() {
			continue
		}
		env, err := environ(pid)
		if err != nil {
			continue
		}
		for _, e := range env {
			if (prefix && bytes.HasPrefix(e, want)) || (!prefix && bytes.Equal(e, want)) {
				if _, gone := StartTime(pid); gone == nil {
					pids = append(pids, pid)
					entries = append(entries, string(e))
				}
				break
			}
		}
	}
	return pids, entries, nil
}

// parseProcArgs2 splits macOS's kern.procargs2 record — argc (int32), the exec path, NUL
// padding, argc arguments, then the environment, each NUL-terminated — and returns the
// environment entries.
func parseProcArgs2(b []byte) ([][]byte, error) {
	if len(b) < 4 {
		return nil, errors.New("procargs2: short record")
	}
	argc := int(binary.LittleEndian.Uint32(b))
	rest := b[4:]
	i := bytes.IndexByte(rest, 0) // exec path
	if i < 0 {
		return nil, errors.New("procargs2: no exec path")
	}
	rest = rest[i:]
	for len(rest) > 0 && rest[0] == 0 {
		rest = rest[1:]
	}
	for n := 0; n < argc; n++ {
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil, errors.New("procargs2: truncated arguments")
		}
		rest = rest[i+1:]
	}
	var env [][]byte
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, 0)
		if i <= 0 {
			break // the empty string ends the environment
		}
		env = append(env, rest[:i])
		rest = rest[i+1:]
	}
	return env, nil
}
