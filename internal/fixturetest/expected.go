package fixturetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Manifest is lance/MANIFEST.json: the index of the fixtures and what the
// reference refused while generating them.
type Manifest struct {
	Generator   Generator `json:"generator"`
	GeneratedAt string    `json:"generated_at"`
	Fixtures    []Fixture `json:"fixtures"`
	// Errors are operations real Lance refused while generating (e.g. map
	// columns in storage version 2.0); each fixture records its own part too.
	Errors              []GeneratorError      `json:"errors"`
	Notes               []Note                `json:"notes"`
	StorageVersionProbe []StorageVersionProbe `json:"storage_version_probe"`
	TotalBytes          int64                 `json:"total_bytes"`
}

// Generator names the software that wrote the fixtures.
type Generator struct {
	LanceDB       string `json:"lancedb"`
	ApacheArrowJS string `json:"apache_arrow_js"`
	LanceCore     string `json:"lance_core"` // e.g. "12.0.0"
	Node          string `json:"node"`
}

// GeneratorError is one thing real Lance refused while generating.
type GeneratorError struct {
	Where string `json:"where"`
	Error string `json:"error"`
}

// Note is a remark the generator recorded.
type Note struct {
	Note string `json:"note"`
}

// StorageVersionProbe records which data storage version a requested
// new_table_data_storage_version value produced.
type StorageVersionProbe struct {
	Requested              string         `json:"requested"`
	Accepted               bool           `json:"accepted"`
	DataFileFooterVersions map[string]int `json:"data_file_footer_versions"`
	Error                  string         `json:"error"`
}

// Fixture is one entry of MANIFEST.json.
type Fixture struct {
	Name           string `json:"name"`            // e.g. "history_v2_2"
	DatasetDir     string `json:"dataset_dir"`     // relative to lance/
	ExpectedFile   string `json:"expected"`        // relative to lance/
	StorageVersion string `json:"storage_version"` // "legacy", "2.0" … "2.3"
	Rows           int    `json:"rows"`            // rows at the latest version
	Versions       int    `json:"versions"`        // number of versions

	// DatasetPath and ExpectedPath are absolute, filled in by LoadManifest.
	DatasetPath  string `json:"-"`
	ExpectedPath string `json:"-"`
}

// Expected is lance/<name>.expected.json: what real Lance reports for one
// fixture. Members a fixture kind does not have are left zero; see gen.mjs
// for how each was produced. Every row is a JSON object in the fixture
// encoding (package rowjson), including "_rowid".
type Expected struct {
	Fixture        string            `json:"fixture"`     // fixture name
	DatasetDir     string            `json:"dataset_dir"` // relative to lance/
	Generator      Generator         `json:"generator"`
	Kind           string            `json:"kind"` // types, history, overwrite, blob, indexed, v1_manifest_paths, compacted, deletions
	StorageVersion string            `json:"storage_version"`
	StorageOptions map[string]string `json:"storage_options"`
	// DataFileFooterVersions counts data files per footer version
	// ("0.2" legacy, "0.3" for 2.0, "2.1", ...).
	DataFileFooterVersions map[string]int `json:"data_file_footer_versions"`
	UsesV2ManifestPaths    bool           `json:"uses_v2_manifest_paths"`
	CurrentVersion         uint64         `json:"current_version"`
	NumRows                int64          `json:"num_rows"`
	Schema                 Schema         `json:"schema"`
	// ScanSchemaWithRowID is the schema of a scan asking for row ids: Schema
	// plus "_rowid" (uint64), and for blob columns the descriptor struct.
	ScanSchemaWithRowID Schema         `json:"scan_schema_with_rowid"`
	Versions            []Version      `json:"versions"`
	Tags                map[string]Tag `json:"tags"`
	Branches            BranchList     `json:"branches"`
	Stats               Stats          `json:"stats"`
	Files               []FileEntry    `json:"files"` // every file of the dataset, sorted
	// Rows is a full scan with row ids at CurrentVersion.
	Rows []json.RawMessage `json:"rows"`

	// types_*: columns this storage version refused (name → Lance's error),
	// and where the rows read back differ from the rows written.
	SkippedColumns      map[string]string   `json:"skipped_columns"`
	RoundtripMismatches []RoundtripMismatch `json:"roundtrip_mismatches"`
	Notes               []string            `json:"notes"`
	Ops                 []Op                `json:"ops"`
	Takes               *Takes              `json:"takes"`
	TimeTravel          []TimeTravelEntry   `json:"time_travel"`
	Branch              *Branch             `json:"branch"`
	OptimizeStats       *OptimizeStats      `json:"optimize_stats"`
	BlobNote            string              `json:"blob_note"`
	WrittenPayloads     []*BlobPayload      `json:"written_payloads"` // nil entry: null blob
	BlobColumns         []string            `json:"blob_columns"`
	BlobColumnsError    string              `json:"blob_columns_error"`
	FetchBlobs          []*BlobPayload      `json:"fetch_blobs"` // fetchBlobs over every row id, in scan order
	FetchBlobsMatches   *bool               `json:"fetch_blobs_matches_written"`
	FetchBlobsError     string              `json:"fetch_blobs_error"`
	Indices             []IndexInfo         `json:"indices"`
	Queries             []Query             `json:"queries"`
	VectorCenters       [][]float64         `json:"vector_centers"`
}

// Schema is a schema as gen.mjs describes it.
type Schema struct {
	Fields   []Field           `json:"fields"`
	Metadata map[string]string `json:"metadata"`
}

// Field is a field (or, for Dictionary Index/Value, a bare type) as gen.mjs
// describes it. Type is "int8" … "uint64", "float16/32/64", "bool", "utf8",
// "large_utf8", "binary", "large_binary", "fixed_size_binary", "date32",
// "date64", "timestamp", "decimal128", "list", "fixed_size_list", "struct",
// "map", "dictionary", "null"; the members after it apply to some types only.
type Field struct {
	Name     string            `json:"name"`
	Nullable bool              `json:"nullable"`
	ArrowJS  string            `json:"arrow_js"` // the Arrow JS type name, e.g. "Timestamp<MICROSECOND, UTC>"
	Type     string            `json:"type"`
	Metadata map[string]string `json:"metadata"`

	ByteWidth  int     `json:"byte_width"` // fixed_size_binary
	Unit       string  `json:"unit"`       // timestamp: "s", "ms", "us", "ns"
	TZ         *string `json:"tz"`         // timestamp; nil: no time zone
	Precision  int     `json:"precision"`  // decimal
	Scale      int     `json:"scale"`      // decimal
	Size       int     `json:"size"`       // fixed_size_list
	Item       *Field  `json:"item"`       // list, fixed_size_list
	Fields     []Field `json:"fields"`     // struct
	KeysSorted bool    `json:"keys_sorted"`
	Entries    *Field  `json:"entries"` // map: struct<key, value>
	Index      *Field  `json:"index"`   // dictionary index type
	Value      *Field  `json:"value"`   // dictionary value type
	Ordered    bool    `json:"ordered"` // dictionary
}

// Version is one entry of listVersions.
type Version struct {
	Version     uint64            `json:"version"`
	Timestamp   string            `json:"timestamp"` // RFC 3339, millisecond precision
	TimestampMs int64             `json:"timestamp_ms"`
	Metadata    map[string]string `json:"metadata"` // e.g. total_rows, total_fragments
}

// Tag is what tags.list reports for one tag.
type Tag struct {
	Version      uint64 `json:"version"`
	ManifestSize int64  `json:"manifest_size"`
}

// BranchList is what branches.list reported: ByName, or Error if listing
// failed.
type BranchList struct {
	ByName map[string]BranchRef
	Error  string
}

// UnmarshalJSON reads either {name: BranchRef, ...} or {"error": "..."}.
func (b *BranchList) UnmarshalJSON(data []byte) error {
	var probe struct {
		Error *string `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err == nil && probe.Error != nil {
		b.Error = *probe.Error
		return nil
	}
	return json.Unmarshal(data, &b.ByName)
}

// BranchRef is one branch as branches.list reports it.
type BranchRef struct {
	ParentBranch  *string `json:"parent_branch"` // nil: main
	ParentVersion uint64  `json:"parent_version"`
	ManifestSize  int64   `json:"manifest_size"`
}

// Stats is table.stats().
type Stats struct {
	TotalBytes    int64 `json:"totalBytes"`
	NumRows       int64 `json:"numRows"`
	NumIndices    int   `json:"numIndices"`
	FragmentStats struct {
		NumFragments      int `json:"numFragments"`
		NumSmallFragments int `json:"numSmallFragments"`
		Lengths           struct {
			Min  int64   `json:"min"`
			Max  int64   `json:"max"`
			Mean float64 `json:"mean"`
			P25  int64   `json:"p25"`
			P50  int64   `json:"p50"`
			P75  int64   `json:"p75"`
			P99  int64   `json:"p99"`
		} `json:"lengths"`
	} `json:"fragmentStats"`
	Error string `json:"error"`
}

// FileEntry is one file of the dataset: its path relative to the dataset
// root and its size. In the JSON it is the pair [path, size].
type FileEntry struct {
	Path string
	Size int64
}

// UnmarshalJSON reads [path, size].
func (f *FileEntry) UnmarshalJSON(data []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(data, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("file entry %s: want [path, size]", data)
	}
	if err := json.Unmarshal(pair[0], &f.Path); err != nil {
		return err
	}
	return json.Unmarshal(pair[1], &f.Size)
}

// RoundtripMismatch is a value Lance read back differently from how it was
// written (types_* fixtures; the list stops after 20).
type RoundtripMismatch struct {
	Row     int             `json:"row"`
	Column  string          `json:"column"`
	Written json.RawMessage `json:"written"`
	Read    json.RawMessage `json:"read"`
}

// Op is one operation the generator applied, and the version it produced.
type Op struct {
	Version uint64 `json:"version"`
	Op      string `json:"op"` // create, append, delete, update, add_columns, alter_columns, overwrite, create_index
	Detail  string `json:"detail"`
	NumRows int64  `json:"num_rows"`
	Error   string `json:"error"`
}

// Takes holds take results at the latest version: by scan offset and by row
// id, each with row ids in the rows.
type Takes struct {
	Offsets    []uint64          `json:"offsets"`
	OffsetRows []json.RawMessage `json:"offset_rows"`
	RowIDs     []uint64          `json:"row_ids"`
	RowIDRows  []json.RawMessage `json:"row_id_rows"`
	Error      string            `json:"error"` // set when Lance failed (legacy files)
}

// TimeTravelEntry is the dataset as checked out at one version. Rows is nil
// for fixtures generated without rows at each version.
type TimeTravelEntry struct {
	Version      uint64            `json:"version"`
	NumRows      int64             `json:"num_rows"`
	SchemaFields []string          `json:"schema_fields"`
	Rows         []json.RawMessage `json:"rows"`
}

// Branch describes the branch the history fixtures create ("exp").
type Branch struct {
	Name               string            `json:"name"`
	CreatedFromVersion uint64            `json:"created_from_version"`
	Ops                []string          `json:"ops"`
	CurrentVersion     uint64            `json:"current_version"`
	CurrentBranch      string            `json:"current_branch"`
	Versions           []Version         `json:"versions"`
	NumRows            int64             `json:"num_rows"`
	Rows               []json.RawMessage `json:"rows"`
	TimeTravel         []TimeTravelEntry `json:"time_travel"` // without rows
	Error              string            `json:"error"`
}

// OptimizeStats is what table.optimize() reported.
type OptimizeStats struct {
	Compaction struct {
		FragmentsRemoved int `json:"fragmentsRemoved"`
		FragmentsAdded   int `json:"fragmentsAdded"`
		FilesRemoved     int `json:"filesRemoved"`
		FilesAdded       int `json:"filesAdded"`
	} `json:"compaction"`
	Prune struct {
		BytesRemoved       int64 `json:"bytesRemoved"`
		OldVersionsRemoved int64 `json:"oldVersionsRemoved"`
	} `json:"prune"`
	Error string `json:"error"`
}

// BlobPayload describes one blob's bytes. Base64 is set only for blobs of
// at most 4096 bytes.
type BlobPayload struct {
	Size   int64   `json:"size"`
	SHA256 string  `json:"sha256"` // hex
	Base64 *string `json:"base64"`
}

// IndexInfo is one entry of listIndices plus its indexStats. IndexDetails
// and Stats differ per index type and stay raw.
type IndexInfo struct {
	Name             string          `json:"name"`
	IndexType        string          `json:"indexType"`
	Columns          []string        `json:"columns"`
	IndexUUID        string          `json:"indexUuid"`
	TypeURL          string          `json:"typeUrl"`
	CreatedAt        string          `json:"createdAt"`
	NumIndexedRows   int64           `json:"numIndexedRows"`
	NumUnindexedRows int64           `json:"numUnindexedRows"`
	SizeBytes        int64           `json:"sizeBytes"`
	NumSegments      int             `json:"numSegments"`
	IndexVersion     int             `json:"indexVersion"`
	IndexDetails     json.RawMessage `json:"indexDetails"`
	Stats            json.RawMessage `json:"stats"`
}

// Query is one reference query result of indexed_v2_2. Kind is "vector",
// "fts" or "filter"; result rows are JSON objects ({"id", "_distance"},
// {"id", "text", "_score"}).
type Query struct {
	Kind    string    `json:"kind"`
	Column  string    `json:"column"` // vector
	Query   RawOrText `json:"query"`  // vector: the query vector; fts: the query text
	K       int       `json:"k"`
	NProbes int       `json:"nprobes"`
	Ef      int       `json:"ef"`
	Limit   int       `json:"limit"`

	AnnIvfPq     []json.RawMessage `json:"ann_ivf_pq"`      // vector on "vec", through the IVF_PQ index
	ExactFlat    []json.RawMessage `json:"exact_flat"`      // vector on "vec", bypassing the index
	AnnIvfHnswSq []json.RawMessage `json:"ann_ivf_hnsw_sq"` // vector on "vec2"
	Results      []json.RawMessage `json:"results"`         // fts

	Filter string  `json:"filter"` // filter: the SQL predicate
	Count  int     `json:"count"`
	IDs    []int64 `json:"ids"` // filter: matching ids, sorted

	Error string `json:"error"`
}

// RawOrText is a member that is a string for some kinds and another JSON
// value for others: Text holds the string, Raw anything else.
type RawOrText struct {
	Text string
	Raw  json.RawMessage
}

// UnmarshalJSON keeps a JSON string in Text and any other value in Raw.
func (r *RawOrText) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &r.Text)
	}
	r.Raw = append(json.RawMessage(nil), data...)
	return nil
}

// Vector decodes Raw as a list of numbers (a vector query).
func (r RawOrText) Vector() ([]float64, error) {
	var v []float64
	err := json.Unmarshal(r.Raw, &v)
	return v, err
}

// LoadManifest reads lance/MANIFEST.json, failing the test if it cannot.
func LoadManifest(t testing.TB) *Manifest {
	t.Helper()
	lanceDir := filepath.Join(Dir(t), "lance")
	var m Manifest
	decodeFile(t, filepath.Join(lanceDir, "MANIFEST.json"), &m, false)
	if len(m.Fixtures) == 0 {
		t.Fatalf("fixturetest: %s lists no fixtures", filepath.Join(lanceDir, "MANIFEST.json"))
	}
	for i := range m.Fixtures {
		fx := &m.Fixtures[i]
		fx.DatasetPath = filepath.Join(lanceDir, fx.DatasetDir)
		fx.ExpectedPath = filepath.Join(lanceDir, fx.ExpectedFile)
	}
	return &m
}

// LoadExpected reads lance/<name>.expected.json, failing the test if it
// cannot. Each call decodes the file afresh, so callers may modify the result.
func LoadExpected(t testing.TB, name string) *Expected {
	t.Helper()
	var exp Expected
	path := filepath.Join(Dir(t), "lance", name+".expected.json")
	decodeFile(t, path, &exp, false)
	if exp.Fixture != name {
		t.Fatalf("fixturetest: %s describes fixture %q, want %q", path, exp.Fixture, name)
	}
	return &exp
}

// decodeFile decodes one JSON document. strict rejects members v has no
// field for; the package's own tests use it to prove the types are complete.
func decodeFile(t testing.TB, path string, v any, strict bool) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("fixturetest: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // nothing typed any, but never let a number become float64 silently
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		t.Fatalf("fixturetest: decoding %s: %v", path, err)
	}
}

// Each runs fn as a subtest (named after the fixture) for every fixture in
// MANIFEST.json, with its Expected loaded.
func Each(t *testing.T, fn func(t *testing.T, fx Fixture, exp *Expected)) {
	t.Helper()
	for _, fx := range LoadManifest(t).Fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			fn(t, fx, LoadExpected(t, fx.Name))
		})
	}
}

// EachKind is Each restricted to fixtures whose Expected.Kind is kind. It
// fails if no fixture has that kind, so a misspelt kind cannot pass vacuously.
func EachKind(t *testing.T, kind string, fn func(t *testing.T, fx Fixture, exp *Expected)) {
	t.Helper()
	ran := false
	for _, fx := range LoadManifest(t).Fixtures {
		exp := LoadExpected(t, fx.Name)
		if exp.Kind != kind {
			continue
		}
		ran = true
		t.Run(fx.Name, func(t *testing.T) { fn(t, fx, exp) })
	}
	if !ran {
		t.Fatalf("fixturetest: no fixture of kind %q", kind)
	}
}
