//go:build !linux && !darwin

package proc

import "os"

func selfPID() int { return os.Getpid() }

func list() ([]int, error) { return nil, ErrNoEnviron }

func environ(int) ([][]byte, error) { return nil, ErrNoEnviron }
