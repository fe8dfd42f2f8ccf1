//go:build !linux

package netns

import "errors"

// Run needs Linux network namespaces.
func Run(func() error) error { return errors.ErrUnsupported }

// LoopbackUp needs Linux network namespaces.
func LoopbackUp() error { return errors.ErrUnsupported }
