package proc

import (
	"os"
	"strconv"
	"strings"
)

// Instance names one server process across the machine: its host, pid and start time. Its
// string form "<hostname>-<pid>-<start>" is put on everything the server leaves in shared places
// (container labels, the environment of the processes it starts), so a later server can tell the
// leftovers of a dead instance from those of a live one.
type Instance struct {
	Host  string
	PID   int
	Start uint64 // 0 when the platform cannot tell
}

// Self is this process's instance.
func Self() Instance {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return Instance{Host: host, PID: os.Getpid(), Start: selfStart()}
}

func selfStart() uint64 {
	t, err := StartTime(os.Getpid())
	if err != nil {
		return 0
	}
	return t
}

func (in Instance) String() string {
	return in.Host + "-" + strconv.Itoa(in.PID) + "-" + strconv.FormatUint(in.Start, 10)
}

// ParseInstance splits an instance id from the right, since a hostname may contain dashes.
func ParseInstance(id string) (Instance, bool) {
	rest, startS, ok := cutLast(id, "-")
	if !ok {
		return Instance{}, false
	}
	host, pidS, ok := cutLast(rest, "-")
	if !ok || host == "" {
		return Instance{}, false
	}
	pid, err := strconv.Atoi(pidS)
	if err != nil || pid <= 0 {
		return Instance{}, false
	}
	start, err := strconv.ParseUint(startS, 10, 64)
	if err != nil {
		return Instance{}, false
	}
	return Instance{host, pid, start}, true
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// DeadOnHost reports whether the instance id names a process of host that provably no longer
// runs. Anything it cannot judge — another host (a remote engine shared by several machines),
// an unparsable id, a start time of 0 — counts as alive, so nothing a live server owns is
// ever swept.
func DeadOnHost(id, host string) bool {
	in, ok := ParseInstance(id)
	if !ok || in.Host != host {
		return false
	}
	return Gone(in.PID, in.Start)
}
