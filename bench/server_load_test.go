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
	rep := runLoad(t, ServerLoadOptions{
		Duration: 5 * time.Second, Clients: 8, Rows: 5_000, Dim: 32, Index: "ivf_hnsw_sq",
	})
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

// TestServerLoadAdversary runs the quick load test with the adversarial
// stream mixed in (issue #22): every hostile request is refused with the
// status it deserves, and the official clients see no error and lose no
// insert meanwhile.
func TestServerLoadAdversary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 8 s")
	}
	rep := runLoad(t, ServerLoadOptions{
		Duration: 8 * time.Second, Clients: 4, Rows: 5_000, Dim: 32, Index: "ivf_hnsw_sq", Adversary: true,
	})
	if rep.Adversary == nil || len(rep.Adversary.ByAttack) != len((&adversary{dim: 1}).attacks()) {
		t.Fatalf("the adversary did not send every attack: %+v", rep.Adversary)
	}
	if rep.RowsInserted == 0 || rep.FinalRows != rep.InitialRows+rep.RowsInserted {
		t.Errorf("rows: %d initial + %d inserted, %d in the table", rep.InitialRows, rep.RowsInserted, rep.FinalRows)
	}
}

// runLoad runs the load test, logs its report and fails the test on any
// failed check.
func runLoad(t *testing.T, o ServerLoadOptions) *ServerLoadReport {
	t.Helper()
	rep, err := RunServerLoad(context.Background(), o)
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
	return rep
}
