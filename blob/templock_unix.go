//go:build unix && !aix

package blob

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// renameOpen says a localWriter may rename its temporary file into place
// before it closes it, and so holds its lock (lockTemp) until the file
// has its final name: a sweep never finds a finished writer's file
// unlocked.
const renameOpen = true

// lockTemp takes a shared flock(2) on a writer's temporary file for as
// long as f is open: closing f (Close, Abort) or the death of the process
// (a killed writer) releases it. A filesystem that refuses locks leaves
// the file unlocked, so guarded by its age only (see tempInUse).
func lockTemp(f *os.File) {
	for unix.Flock(int(f.Fd()), unix.LOCK_SH) == unix.EINTR {
	}
}

// tempInUse reports whether a live writer holds the temporary file at p
// (lockTemp): whether an exclusive lock on it cannot be taken at once. The
// lock is released before it returns. A file gone is in no one's use; a
// file that cannot be opened or locked for another reason (a filesystem
// where flock is not supported, or is emulated with fcntl locks, which a
// process's own never conflict with) is reported free, leaving its age as
// the only guard, as on systems without flock.
func tempInUse(p string) bool {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		// flock needs no write access; only its fcntl emulation on
		// some network filesystems does for an exclusive lock.
		f, err = os.Open(p)
	}
	if err != nil {
		return false
	}
	defer f.Close()
	for err = unix.EINTR; err == unix.EINTR; {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	}
	return errors.Is(err, unix.EWOULDBLOCK)
}
