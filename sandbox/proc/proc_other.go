//go:build !linux && !darwin && !windows

package proc

func startTime(int) (uint64, error) { return 0, ErrUnsupported }
