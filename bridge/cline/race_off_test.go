//go:build !race

package cline

const raceEnabled = false
