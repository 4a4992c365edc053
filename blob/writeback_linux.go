package blob

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing [off, off+n) of f to
// disk without waiting for it (sync_file_range, SYNC_FILE_RANGE_WRITE), so
// that the fsync that ends a large write finds most of the file on its way
// already. Errors are ignored: that fsync reports any that matter.
func startWriteback(f *os.File, off, n int64) {
	_ = unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
