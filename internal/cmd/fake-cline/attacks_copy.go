package main

import (
	"os"
	"strconv"
)

// copyAttackScenarios attack what a copying executor (Docker's copy mode) brings back from the
// container: the archive of the checkout it reads after the run. Like attackScenarios, each
// writes its marker first and answers with a JSON report of every step.
var copyAttackScenarios = map[string]scenarioDef{
	"attack_copy_sparse": {doc: "creates path= (big.bin) in -c as a sparse file of size= (2600000000) bytes: free in the container, that many bytes in the archive a copy back reads; reports size as stat sees it", run: runAttackCopySparse},
}

func runAttackCopySparse(s *session) int {
	return s.attack(func(r *obj) {
		p := s.abs(s.param("path", "big.bin"))
		n, err := strconv.ParseInt(s.param("size", "2600000000"), 10, 64)
		if err == nil {
			err = sparseFile(p, n)
		}
		r.step("sparse", err)
		if fi, err := os.Stat(p); err == nil {
			*r = append(*r, kv{"size", fi.Size()})
		}
	})
}

// sparseFile creates p with n bytes of which none is allocated.
func sparseFile(p string, n int64) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	err = f.Truncate(n)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
