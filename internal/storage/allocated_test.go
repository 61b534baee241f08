package storage

import (
	"os"
	"syscall"
)

// allocated is the disk space a file takes (blocks allocated, which
// counts preallocation that its size does not).
func allocated(fi os.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512
	}
	return fi.Size()
}
