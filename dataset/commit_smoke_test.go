package dataset

import (
	"context"
	"testing"
)

func TestCommitSmoke(t *testing.T) {
	ctx := context.Background()
	dir, store := copyFixture(t, "history_v2_2")
	defer func() { copyTree(t, dir, "/tmp/smoke/h.lance") }()
	mem := checkedAlloc(t)
	d := openStore(t, store, 0, mem)
	rows := scanAll(t, d)
	t.Logf("version %d, %d rows", d.Version(), len(rows))
	d2, err := d.DeleteRowIDs(ctx, []uint64{rows[0].id, rows[5].id, rows[30].id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows2 := scanAll(t, d2)
	t.Logf("version %d, %d rows", d2.Version(), len(rows2))
	d3, err := d2.RenameColumn(ctx, "value", "value2", nil)
	if err != nil {
		t.Fatal(err)
	}
	d4, err := d3.DropColumns(ctx, []string{"flag"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d4.Schema().Arrow())
	old := openStore(t, store, 2, mem)
	d5, err := old.Restore(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(d5.Version(), len(scanAll(t, d5)))
	vs, err := d5.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		t.Log(v.Version, v.Operation, v.Metadata["total_rows"])
		rawTransaction(t, store, v.Version)
	}
}
