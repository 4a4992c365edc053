//go:build !unix || aix

package blob

import (
	"errors"
	"io"
	"os"
)

// preadFile reads length bytes at offset from the file at p, checking the
// range against the file's size first. key names the object in errors.
func preadFile(key, p string, offset, length int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, mapOSError("read", key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, mapOSError("read", key, err)
	}
	if err := checkRange(key, offset, length, fi.Size()); err != nil {
		return nil, err
	}
	buf := make([]byte, length)
	if _, err := f.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && length == 0) {
		return nil, mapOSError("read", key, err)
	}
	return buf, nil
}
