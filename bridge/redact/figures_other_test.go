//go:build !unix

package redact

import "time"

// cpuTime is not measured here; TestFigures then reports wall-clock only.
func cpuTime() time.Duration { return 0 }
