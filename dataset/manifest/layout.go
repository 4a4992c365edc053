package manifest

import (
	"slices"
	"strings"

	"github.com/lancerdb/lancer/blob"
)

// rootEntries are the names Lance and lancer give the entries at the top
// of a dataset root: the folders of its own files (_versions/,
// _transactions/, _deletions/, data/, _indices/), of its refs and branches
// (_refs/, tree/: package branch), Lance's legacy blob and MemWAL folders
// and its legacy latest-manifest file. This is the one list of them.
var rootEntries = []string{
	"_versions", "_transactions", "_deletions", "data", "_indices",
	"_refs", "tree", "_blobs", "_mem_wal", "_latest.manifest",
}

// IsRootEntry reports whether name is the name of an entry Lance or lancer
// writes at the top of a dataset root (_versions, data, _indices, tree,
// ...). A branch is a dataset root nested at tree/<name> inside its
// parent's root, so package branch refuses a branch name segment that is
// one: the branch's folders would lie inside its parent's own.
func IsRootEntry(name string) bool {
	return slices.Contains(rootEntries, name)
}

// OwnKey reports whether key, relative to a dataset root, lies where the
// dataset keeps files of its own: directly in _versions/, _transactions/,
// _deletions/ or data/, in a folder of data/ (a data file's blob
// sidecars) or in a folder of _indices/ (an index segment), with no
// segment after the first named like a root entry (IsRootEntry). The last
// rule keeps out the files of a dataset root nested inside this one's
// folders (a branch tree/p/data of branch p, made before such names were
// refused): their keys read <folder>/<root entry>/..., never a file of
// this root's. dataset.Cleanup removes only such keys; so does package
// branch when it discards a branch.
func OwnKey(key string) bool {
	segs := strings.Split(key, "/")
	for _, s := range segs[1:] {
		if IsRootEntry(s) {
			return false
		}
	}
	switch segs[0] + "/" {
	case VersionsDir, TransactionsDir, "_deletions/":
		return len(segs) == 2
	case "data/":
		return len(segs) == 2 || len(segs) == 3
	case "_indices/":
		return len(segs) >= 3
	}
	return false
}

// RootPath returns the location of a dataset root at store as Lance
// records it in a BasePath's Path: a local directory as its absolute path,
// anything else as its URI.
func RootPath(store blob.Store) string {
	uri := store.URI()
	if rest, ok := strings.CutPrefix(uri, "file://"); ok {
		return rest
	}
	return uri
}
