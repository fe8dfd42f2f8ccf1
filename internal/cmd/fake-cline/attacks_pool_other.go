//go:build !unix

package main

// poolAttackScenarios plant FIFOs, sockets and hard links: Unix only.
var poolAttackScenarios = map[string]scenarioDef{}
