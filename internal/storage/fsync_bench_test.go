//go:build linux

package storage

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkWALFsync prices one 4 KiB write plus fdatasync, the unit of a
// WAL group commit, in the three states a log file can be in:
//
//   - append: the file grows with every write;
//   - keepsize: space reserved with fallocate(FALLOC_FL_KEEP_SIZE), which
//     is how Pebble preallocates a new WAL; the size still grows, so each
//     fdatasync also commits the new size to the journal;
//   - overwrite: writes land inside the file's existing size, as in a
//     WAL Pebble recycled from an obsolete one.
//
// cpu-µs/op is the process's CPU time (user + system) per write+sync; on
// a VM it is what the guest kernel charges (BENCHMARKS.md §8).
func BenchmarkWALFsync(b *testing.B) {
	for _, mode := range []string{"append", "keepsize", "overwrite"} {
		b.Run(mode, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "wal"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			fd := int(f.Fd())
			size := int64(b.N+1) * 4096
			switch mode {
			case "keepsize":
				if err := syscall.Fallocate(fd, 1 /* FALLOC_FL_KEEP_SIZE */, 0, size); err != nil {
					b.Skipf("fallocate: %v", err)
				}
			case "overwrite":
				if _, err := f.WriteAt(make([]byte, size), 0); err != nil {
					b.Fatal(err)
				}
			}
			if err := syscall.Fsync(fd); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 4096)
			b.ResetTimer()
			cpu0 := cpuTime()
			for i := 0; i < b.N; i++ {
				if _, err := f.WriteAt(buf, int64(i)*4096); err != nil {
					b.Fatal(err)
				}
				if err := syscall.Fdatasync(fd); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
