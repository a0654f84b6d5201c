package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkRawWriteFdatasync is the disk's own limit: write(2) of event
// lines (the bytes an Append of one event, or a round of 16, writes) then
// fdatasync(2), timing the fdatasync alone (p50 and p99, µs). The modes
// are the ways a record file can take its lines (docs/decisions.md, "A
// zero-filled record tail"):
//
//   - append: the file grows, as a record without a zero tail does;
//   - in-place: an overwrite of a zero-filled, already synced file, so
//     that fdatasync has no size or extent change to journal (the zero
//     tail);
//   - fallocate: an overwrite of space fallocate(2) reserved and synced
//     (unwritten extents, converted on the first write to each);
//   - keep-size: an append into space fallocate(2) reserved past the end
//     with FALLOC_FL_KEEP_SIZE (the size still changes).
//
// fallocate and keep-size are skipped where the file system or the
// platform has no fallocate(2).
func BenchmarkRawWriteFdatasync(b *testing.B) {
	line, _ := encodeLine(nil, 12345, 12345, "0b7e2c4e-8a53-4e0c-9f5e-2b8d6f1a9c3d", "graph:node-completed",
		time.Now(), mustCanon(b, benchData(1)), digestString([32]byte{1}))
	const prealloc = 32 << 20
	for _, mode := range []string{"append", "in-place", "fallocate", "keep-size"} {
		for _, lines := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/lines=%d", mode, lines), func(b *testing.B) {
				buf := bytes.Repeat(line, lines)
				overwrite := mode == "in-place" || mode == "fallocate"
				flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
				if overwrite {
					flags = os.O_WRONLY | os.O_CREATE
				}
				f, err := os.OpenFile(filepath.Join(b.TempDir(), "raw"), flags, 0o644)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				switch mode {
				case "in-place":
					_, err = f.Write(make([]byte, prealloc))
				case "fallocate", "keep-size":
					err = fallocate(f, mode == "keep-size", prealloc)
				}
				if err == nil {
					err = f.Sync()
				}
				if err != nil {
					b.Skipf("%s: %v", mode, err)
				}
				var d []time.Duration
				off := int64(0)
				for b.Loop() {
					if overwrite {
						if off+int64(len(buf)) > prealloc {
							off = 0
						}
						_, err = f.WriteAt(buf, off)
						off += int64(len(buf))
					} else {
						_, err = f.Write(buf)
					}
					if err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					if err := (osFile{f}).Datasync(); err != nil {
						b.Fatal(err)
					}
					d = append(d, time.Since(t0))
				}
				b.ReportMetric(float64(percentile(d, .5).Nanoseconds())/1e3, "fsync-p50-µs")
				b.ReportMetric(float64(percentile(d, .99).Nanoseconds())/1e3, "fsync-p99-µs")
			})
		}
	}
}
