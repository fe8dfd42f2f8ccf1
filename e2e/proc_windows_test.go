//go:build e2e

package e2e

import "os"

// fileUID: Windows files have no uid.
func fileUID(os.FileInfo) int { return -1 }

// groupExists: Windows has no process groups (the server's Job Object ends the tree).
func groupExists(int) bool { return false }
