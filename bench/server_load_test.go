package bench

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestServerLoadQuick runs the server load test briefly (8 clients, 5 s,
// a small table) and checks its properties only: every request
// succeeded, every acknowledged insert is in the table once, nothing else
// is, and every operation kind ran. It fails, not skips, without node or
// the LanceDB client.
func TestServerLoadQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 5 s")
	}
	rep, err := RunServerLoad(context.Background(), ServerLoadOptions{
		Duration: 5 * time.Second, Clients: 8, Rows: 5_000, Dim: 32, Index: "ivf_hnsw_sq",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []string{"search", "insert", "count"} {
		if rep.Ops[op].Count == 0 {
			t.Errorf("no %s completed", op)
		}
	}
	if rep.RowsInserted == 0 || rep.FinalRows != rep.InitialRows+rep.RowsInserted {
		t.Errorf("rows: %d initial + %d inserted, %d in the table", rep.InitialRows, rep.RowsInserted, rep.FinalRows)
	}
	if rep.ShortResults != 0 {
		t.Errorf("%d searches returned fewer than k rows", rep.ShortResults)
	}
}
