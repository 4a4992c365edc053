package manifest

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// VersionsDir is where a root keeps its manifest files.
const VersionsDir = "_versions/"

// ManifestNaming is how a dataset names its manifest files (doc.go, M1). A
// dataset keeps the scheme it was created with; the two are never mixed
// in one directory.
type ManifestNaming uint8

const (
	// ManifestNamingV2 names version v _versions/{MaxUint64-v}.manifest,
	// zero-padded to 20 digits, so a listing finds the latest first. It is
	// what LanceDB uses.
	ManifestNamingV2 ManifestNaming = iota
	// ManifestNamingV1 names version v _versions/{v}.manifest, Lance's
	// original scheme.
	ManifestNamingV1
)

// String names the scheme: "V2" or "V1".
func (n ManifestNaming) String() string {
	switch n {
	case ManifestNamingV2:
		return "V2"
	case ManifestNamingV1:
		return "V1"
	}
	return "ManifestNaming(" + strconv.Itoa(int(n)) + ")"
}

// DetachedVersionBit marks a detached version: a manifest that is not part
// of the history and never the latest.
const DetachedVersionBit = 1 << 63

// Key returns the key of version v's manifest under the naming.
func Key(n ManifestNaming, v uint64) string {
	if n == ManifestNamingV2 {
		return fmt.Sprintf("%s%020d.manifest", VersionsDir, uint64(math.MaxUint64)-v)
	}
	return VersionsDir + strconv.FormatUint(v, 10) + ".manifest"
}

// Name is what a file name in _versions/ says.
type Name struct {
	// OK says the name is a manifest's; the rest is meaningless otherwise.
	OK       bool
	Naming   ManifestNaming
	Version  uint64
	Detached bool
}

// ParseName classifies a file name in _versions/. Anything that is not a
// committed or detached manifest name (staging files "N.manifest-<uuid>",
// temporary files, the version hint, a number that encodes no valid
// version) is not a manifest, as for Lance.
func ParseName(name string) Name {
	stem, ok := strings.CutSuffix(name, ".manifest")
	if !ok || strings.Contains(stem, "/") {
		return Name{}
	}
	if digits, ok := strings.CutPrefix(stem, "d"); ok {
		v, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || !IsDigits(digits) || v&DetachedVersionBit == 0 {
			return Name{}
		}
		// Detached manifests only exist with V2 naming.
		return Name{OK: true, Naming: ManifestNamingV2, Version: v, Detached: true}
	}
	if !IsDigits(stem) {
		return Name{}
	}
	n, err := strconv.ParseUint(stem, 10, 64)
	if err != nil {
		return Name{}
	}
	s, v := ManifestNamingV1, n
	if len(stem) == 20 {
		s, v = ManifestNamingV2, math.MaxUint64-n
	}
	if v == 0 || v&DetachedVersionBit != 0 {
		return Name{}
	}
	return Name{OK: true, Naming: s, Version: v}
}

// IsDigits reports whether s is a non-empty string of ASCII digits.
func IsDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
