package format

import (
	"fmt"

	"github.com/lancerdb/lancer"
)

// Version is a Lance data file version as the table format names it
// (DataFile.file_major_version / file_minor_version and
// Manifest.data_format.version): 0.1 for legacy v1 files, then 2.0, 2.1, 2.2
// and the unstable 2.3. It is not always what the file footer says: 2.0 files
// carry footer version 0.3, and legacy files 0.1 or 0.2.
type Version struct {
	Major, Minor uint16
}

// The file versions lancer knows.
var (
	VersionLegacy = Version{0, 1}
	Version2_0    = Version{2, 0}
	Version2_1    = Version{2, 1}
	Version2_2    = Version{2, 2}
	Version2_3    = Version{2, 3}
)

func (v Version) String() string {
	if v.IsLegacy() {
		return "legacy"
	}
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// IsLegacy reports whether v is the v1 file layout.
func (v Version) IsLegacy() bool { return v.Major == 0 && v.Minor < 3 }

// structural reports whether files of version v use the 2.1+ structural
// encodings (leaf columns, repetition and definition levels).
func (v Version) structural() bool { return v.Major == 2 && v.Minor >= 1 }

// Less orders versions.
func (v Version) Less(w Version) bool {
	return v.Major < w.Major || (v.Major == w.Major && v.Minor < w.Minor)
}

// ParseVersion parses a manifest data_format version string ("0.1", "2.0",
// "2.1", "2.2", "2.3"; "legacy" and "stable"/"next" aliases too).
func ParseVersion(s string) (Version, error) {
	switch s {
	case "legacy", "0.1", "0.2", "":
		return VersionLegacy, nil
	case "2.0", "0.3":
		return Version2_0, nil
	case "2.1":
		return Version2_1, nil
	case "2.2", "stable":
		return Version2_2, nil
	case "2.3", "next":
		return Version2_3, nil
	}
	return Version{}, fmt.Errorf("format: unknown Lance file version %q: %w", s, lancer.ErrUnsupported)
}
