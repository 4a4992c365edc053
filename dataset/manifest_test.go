package dataset

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/lancerdb/lancer"
	"github.com/lancerdb/lancer/dataset/manifest"
	"github.com/lancerdb/lancer/format"
	"github.com/lancerdb/lancer/format/schema"
	"github.com/lancerdb/lancer/internal/fixturetest"
)

func TestLatestVersion(t *testing.T) {
	m := func(v uint64) []byte { return encodeManifestFile(t, emptyManifest(v), appendTxn()) }
	for _, tc := range []struct {
		name    string
		files   map[string][]byte
		want    uint64
		list    []uint64
		wantErr error
	}{
		{
			name: "V1 numeric not lexical",
			files: map[string][]byte{
				"_versions/1.manifest": m(1), "_versions/2.manifest": m(2), "_versions/10.manifest": m(10),
				"_versions/latest_version_hint.json": []byte(`{"version":2}`),
			},
			want: 10, list: []uint64{1, 2, 10},
		},
		{
			name: "V2 with stale hint, staging and detached files",
			files: map[string][]byte{
				manifest.Key(manifest.ManifestNamingV2, 1): m(1), manifest.Key(manifest.ManifestNamingV2, 2): m(2), manifest.Key(manifest.ManifestNamingV2, 3): m(3),
				"_versions/latest_version_hint.json":      []byte(`{"version":99}`),
				"_versions/4.manifest-1b2c":               []byte("partial"),
				"_versions/d9223372036854775811.manifest": m(1<<63 | 3),
			},
			want: 3, list: []uint64{1, 2, 3},
		},
		{
			name: "V2 with a gap",
			files: map[string][]byte{
				manifest.Key(manifest.ManifestNamingV2, 2): m(2), manifest.Key(manifest.ManifestNamingV2, 5): m(5),
			},
			want: 5, list: []uint64{2, 5},
		},
		{
			name: "mixed V1 before V2",
			files: map[string][]byte{
				"_versions/1.manifest": m(1), manifest.Key(manifest.ManifestNamingV2, 2): m(2),
			},
			wantErr: lancer.ErrCorrupt,
		},
		{
			name:    "no manifests",
			files:   map[string][]byte{"_versions/latest_version_hint.json": []byte(`{"version":1}`)},
			wantErr: lancer.ErrNotFound,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := fixturetest.MemStore(t, tc.files)
			got, err := LatestVersion(context.Background(), s)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && got != tc.want) {
				t.Errorf("LatestVersion = %d, %v; want %d, %v", got, err, tc.want, tc.wantErr)
			}
			list, err := ListVersions(context.Background(), s)
			if !errors.Is(err, tc.wantErr) || fmt.Sprint(list) != fmt.Sprint(tc.list) {
				t.Errorf("ListVersions = %v, %v; want %v, %v", list, err, tc.list, tc.wantErr)
			}
			d, err := Open(context.Background(), s, nil)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Open: %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if d.Version() != tc.want {
				t.Errorf("Open: version %d, want %d", d.Version(), tc.want)
			}
			for _, v := range tc.list {
				old, err := d.Checkout(context.Background(), v)
				if err != nil || old.Version() != v {
					t.Errorf("Checkout(%d) = %v, %v", v, old, err)
				}
			}
			if _, err := d.Checkout(context.Background(), 77); !errors.Is(err, lancer.ErrNotFound) {
				t.Errorf("Checkout(77): %v, want ErrNotFound", err)
			}
			versions, err := d.Versions(context.Background())
			if err != nil || len(versions) != len(tc.list) {
				t.Fatalf("Versions = %v, %v", versions, err)
			}
			for _, v := range versions {
				if v.Operation != "Append" || v.Metadata["total_rows"] != "0" {
					t.Errorf("version %+v, want an empty Append", v)
				}
			}
			n, err := d.CountRows(context.Background())
			if err != nil || n != 0 {
				t.Errorf("CountRows = %d, %v", n, err)
			}
		})
	}
}

// TestMixedNamingAfterV2 checks that a V1 name sorting after the V2 names
// is caught by the full listing.
func TestMixedNamingAfterV2(t *testing.T) {
	m := func(v uint64) []byte { return encodeManifestFile(t, emptyManifest(v), nil) }
	s := fixturetest.MemStore(t, map[string][]byte{manifest.Key(manifest.ManifestNamingV2, 1): m(1), "_versions/2.manifest": m(2)})
	if _, err := ListVersions(context.Background(), s); !errors.Is(err, lancer.ErrCorrupt) {
		t.Errorf("ListVersions: %v, want ErrCorrupt", err)
	}
}

// emptyManifest is a valid manifest of version v with one int64 column and
// no fragments.
func emptyManifest(v uint64) *manifest.Manifest {
	m := &manifest.Manifest{Version: v}
	m.SetFields([]*schema.Field{{Name: "id", ID: 0, ParentID: -1, LogicalType: "int64"}})
	m.SetDataFormat(format.Version2_2)
	return m
}

func appendTxn() *manifest.Transaction {
	return &manifest.Transaction{UUID: "u", Operation: &manifest.Append{}}
}

// encodeManifestFile lays out a manifest file of m with the transaction
// txn (none if nil).
func encodeManifestFile(t testing.TB, m *manifest.Manifest, txn *manifest.Transaction) []byte {
	t.Helper()
	var tb []byte
	if txn != nil {
		var err error
		if tb, err = manifest.EncodeTransaction(txn); err != nil {
			t.Fatal(err)
		}
	}
	b, err := manifest.EncodeFile(m, tb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
