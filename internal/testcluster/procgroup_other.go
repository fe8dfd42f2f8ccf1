//go:build !linux

package testcluster

import "syscall"

// ownGroup: the test cluster runs only on Linux.
func ownGroup() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) {}
