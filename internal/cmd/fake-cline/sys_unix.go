//go:build unix

package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// processGroup is the pgid of this process (RECORD's "pgid").
func processGroup() int {
	pgid, _ := syscall.Getpgid(0)
	return pgid
}

// privilegedProbes tries what a hardened container must refuse: a device node, becoming root and
// a raw socket. dir is a scratch directory.
func privilegedProbes(dir string) obj {
	r := obj{}
	r = append(r, kv{"mknod_null", errString(syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, 0x103))})
	r = append(r, kv{"setuid_0", errString(syscall.Setuid(0))})
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
	if err == nil {
		_ = syscall.Close(fd)
	}
	return append(r, kv{"raw_socket", errString(err)})
}

// selfTerminate restores the default SIGTERM action and sends SIGTERM to this process.
func selfTerminate() {
	signal.Reset(syscall.SIGTERM)
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
	time.Sleep(5 * time.Second)
	os.Exit(143)
}

// makeFIFO creates a named pipe at p (the attack_settings_file scenario).
func makeFIFO(p string) error { return syscall.Mkfifo(p, 0o600) }
