//go:build !unix || aix

package blob

import "os"

// renameOpen is false where a file cannot be renamed while open (Windows):
// a localWriter closes its temporary file first.
const renameOpen = false

// lockTemp does nothing where flock(2) is missing (Windows, AIX): a
// writer's temporary file is guarded by its age only
// (dataset.MinTempFileAge).
func lockTemp(*os.File) {}

// tempInUse reports no temporary file in use where writers lock none.
func tempInUse(string) bool { return false }
