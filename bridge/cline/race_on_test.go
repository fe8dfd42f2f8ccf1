//go:build race

package cline

const raceEnabled = true
