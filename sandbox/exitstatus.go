package sandbox

import (
	"strconv"
)

// linuxSignals names the signals by their Linux numbers: a container runs on a Linux kernel
// whatever OS the client runs on, so the host's own numbering does not apply.
var linuxSignals = [...]string{
	1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 4: "SIGILL", 5: "SIGTRAP", 6: "SIGABRT", 7: "SIGBUS",
	8: "SIGFPE", 9: "SIGKILL", 10: "SIGUSR1", 11: "SIGSEGV", 12: "SIGUSR2", 13: "SIGPIPE",
	14: "SIGALRM", 15: "SIGTERM", 16: "SIGSTKFLT", 17: "SIGCHLD", 18: "SIGCONT", 19: "SIGSTOP",
	20: "SIGTSTP", 21: "SIGTTIN", 22: "SIGTTOU", 23: "SIGURG", 24: "SIGXCPU", 25: "SIGXFSZ",
	26: "SIGVTALRM", 27: "SIGPROF", 28: "SIGWINCH", 29: "SIGIO", 30: "SIGPWR", 31: "SIGSYS",
}

// signalName is the Linux name of signal n: "SIGKILL", "SIGRTMIN+3", or "" outside 1..64.
func signalName(n int) string {
	switch {
	case n >= 1 && n < len(linuxSignals):
		return linuxSignals[n]
	case n >= 34 && n <= 64:
		return "SIGRTMIN+" + strconv.Itoa(n-34)
	}
	return ""
}

// ExitFromStatus maps a container's exit status to an Exit: 128+n keeps the code and names the
// signal n (the container's init reports a child killed by signal n that way, and so does the
// engine for init itself); an OOM kill is a SIGKILL whatever the code.
func ExitFromStatus(code int, oomKilled bool) Exit {
	x := Exit{Code: code}
	if code > 128 {
		x.Signal = signalName(code - 128)
	}
	if oomKilled {
		x.Signal = "SIGKILL"
		x.OOMKilled = true
	}
	return x
}
