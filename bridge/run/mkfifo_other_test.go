//go:build !unix

package run

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }
