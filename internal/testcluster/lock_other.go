//go:build !linux

package testcluster

import "errors"

func lockCluster(string) (func(), string, error) {
	return nil, "", errors.New("the test cluster runs only on Linux")
}
