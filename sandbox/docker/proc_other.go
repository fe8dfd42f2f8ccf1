//go:build !linux

package docker

import "errors"

// procStartTicks is unknown outside Linux: instance ids carry start 0 and Sweep judges nothing
// dead.
func procStartTicks(int) (uint64, error) { return 0, errors.New("proc stat: not supported") }
