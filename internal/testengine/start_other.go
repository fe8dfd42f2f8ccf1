//go:build !linux

package testengine

import "context"

// Check says why private engines cannot run here.
func Check(string) error { return ErrUnsupported }

// StartDockerd needs Linux.
func StartDockerd(context.Context) (*Engine, error) { return nil, ErrUnsupported }

// StartPodman needs Linux.
func StartPodman(context.Context) (*Engine, error) { return nil, ErrUnsupported }

// Stop has nothing to stop off Linux.
func (e *Engine) Stop() error { return nil }
