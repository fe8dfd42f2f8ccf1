package worktree

import (
	"os"
	"testing"
	"time"
)

// BenchmarkWalkStat measures the shape walk alone on the pool benchmark's repository: with and
// without one fstatat per entry, alternating.
func BenchmarkWalkStat(b *testing.B) {
	repo, _, _ := bigRepo(b)
	root, err := os.OpenRoot(repo)
	if err != nil {
		b.Fatal(err)
	}
	defer root.Close()
	t := map[bool][]time.Duration{}
	for b.Loop() {
		for _, stat := range []bool{true, false} {
			start := time.Now()
			if err := walkEntriesStat(root, stat, func(string, string, entryInfo) (bool, error) { return true, nil }); err != nil {
				b.Fatal(err)
			}
			t[stat] = append(t[stat], time.Since(start))
		}
	}
	b.ReportMetric(float64(median(t[true]).Microseconds())/1000, "stat-ms")
	b.ReportMetric(float64(median(t[false]).Microseconds())/1000, "nostat-ms")
	b.ReportMetric(0, "ns/op")
}
