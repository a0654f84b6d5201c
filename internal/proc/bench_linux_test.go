package proc

import (
	"os"
	"strconv"
	"testing"
)

// BenchmarkMarkedTree is the scan a watchdog makes after every worker
// (nothing carries the marker, the usual case), per process on the
// machine, beside its floor: reading each process's environment once
// with os.ReadFile.
func BenchmarkMarkedTree(b *testing.B) {
	pids, err := PIDs()
	if err != nil {
		b.Fatal(err)
	}
	kv := "OBVERSA_BENCH_MARK=" + strconv.Itoa(os.Getpid())
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			if ps, err := MarkedTree(kv, nil); err != nil || len(ps) != 0 {
				b.Fatal(ps, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(pids)), "ns/process")
	})
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			for _, pid := range pids {
				_, _ = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(pids)), "ns/process")
	})
}
