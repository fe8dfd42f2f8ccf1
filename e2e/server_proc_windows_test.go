package e2e

import (
	"os"
	"syscall"
)

// killGroup: Windows has no process groups; the server's Job Object ends the tree.
func killGroup(int) {}

// alive reports whether pid still exists.
func alive(pid int) bool {
	h, err := syscall.OpenProcess(0x1000, false, uint32(pid)) // PROCESS_QUERY_LIMITED_INFORMATION
	if err != nil {
		return false
	}
	defer syscall.CloseHandle(h)
	var code uint32
	return syscall.GetExitCodeProcess(h, &code) == nil && code == 259 // STILL_ACTIVE
}

// fileUID: Windows files have no uid.
func fileUID(os.FileInfo) int { return -1 }
