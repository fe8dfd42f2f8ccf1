package mcpsession

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcsWithEnv lists the pids of live processes (this one excluded) whose environment holds
// the exact entry kv ("NAME=value"). A marker given to a server is inherited by every process
// it starts on the host (and, with --docker-env NAME, by container processes, which share the
// host's /proc), so a non-empty answer after a call ended is a leaked process. Zombies count as
// gone. Processes whose environ cannot be read (another user's) are not reported.
func ProcsWithEnv(kv string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := []byte(kv)
	self := os.Getpid()
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || len(env) == 0 {
			continue
		}
		found := false
		for _, entry := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(entry, want) {
				found = true
				break
			}
		}
		if found && !zombie(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // gone meanwhile
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z'
}

// ProcStatusKiB reads a "kB" field such as VmHWM (peak resident set) or VmRSS from
// /proc/<pid>/status.
func ProcStatusKiB(pid int, field string) (int64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("proc status: bad pid %d", pid)
	}
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			break
		}
		return strconv.ParseInt(fs[0], 10, 64)
	}
	return 0, fmt.Errorf("proc status %d: no field %s", pid, field)
}

// Containers lists containers (running or not) matching every docker ps filter given
// ("label=cline-mcp.run", "ancestor=image:tag", ...).
func Containers(filters ...string) ([]string, error) {
	args := []string{"ps", "-aq"}
	for _, f := range filters {
		args = append(args, "--filter", f)
	}
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		return nil, fmt.Errorf("docker ps %v: %w", filters, err)
	}
	return strings.Fields(string(out)), nil
}

// Docker runs the docker CLI with args and returns its standard output.
func Docker(args ...string) (string, error) {
	out, err := exec.Command("docker", args...).Output()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
