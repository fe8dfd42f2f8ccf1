//go:build !linux

package testcluster

import "errors"

type forwarder struct{}

func forward(string, string) (*forwarder, error) {
	return nil, errors.New("the test cluster runs only on Linux")
}

func (*forwarder) addr() string { return "" }
func (*forwarder) close()       {}
