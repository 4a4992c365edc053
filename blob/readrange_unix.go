//go:build unix && !aix

package blob

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// uncheckedReadMax is the largest range preadFile reads before it knows the
// file's size: a buffer this small may be allocated on the caller's word,
// and a short read then finds the range out of bounds. Larger ranges are
// checked against fstat(2) first, so a bad length never sizes a buffer.
const uncheckedReadMax = 1 << 20

// preadFile reads length bytes at offset from the file at p with raw
// open(2), pread(2) and close(2). A search's take reads a few small ranges
// from many data files; os.Open's fstat, poller registration and
// non-blocking fcntl cost more than the read itself there (they were 7% of
// an indexed search's CPU, the reads' syscalls 14%). key names the object
// in errors.
func preadFile(key, p string, offset, length int64) ([]byte, error) {
	if offset < 0 || length < 0 {
		return nil, checkRange(key, offset, length, 0)
	}
	fd, err := openRead(p)
	if err != nil {
		return nil, mapOSError("read", key, &fs.PathError{Op: "open", Path: p, Err: err})
	}
	defer unix.Close(fd)
	size := int64(-1)
	if length > uncheckedReadMax {
		if size, err = fileSize(fd); err != nil {
			return nil, mapOSError("read", key, &fs.PathError{Op: "stat", Path: p, Err: err})
		}
		if err := checkRange(key, offset, length, size); err != nil {
			return nil, err
		}
	}
	buf := make([]byte, length)
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], offset+int64(n))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, mapOSError("read", key, &fs.PathError{Op: "read", Path: p, Err: err})
		}
		if m == 0 {
			break // end of file
		}
		n += m
	}
	if n < len(buf) || (length == 0 && size < 0) {
		// Short (or empty, where only the size tells whether offset is in
		// range): report the range against the file's real size.
		if size < 0 {
			if size, err = fileSize(fd); err != nil {
				return nil, mapOSError("read", key, &fs.PathError{Op: "stat", Path: p, Err: err})
			}
		}
		if err := checkRange(key, offset, length, size); err != nil {
			return nil, err
		}
		if n < len(buf) {
			// The file shrank between the reads: the bytes are not there.
			return nil, mapOSError("read", key, &fs.PathError{Op: "read", Path: p, Err: errors.New("short read")})
		}
	}
	return buf, nil
}

func openRead(p string) (int, error) {
	for {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return fd, err
	}
}

func fileSize(fd int) (int64, error) {
	var st unix.Stat_t
	for {
		err := unix.Fstat(fd, &st)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return 0, err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			return 0, unix.EISDIR
		}
		return st.Size, nil
	}
}
