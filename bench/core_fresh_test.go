package bench

import (
	"os/exec"
	"strings"
	"testing"
)

// TestRunFresh: a fresh-process build's reply is its last line of output;
// a failed process, or a reply without its resident sets, is an error that
// quotes what the process said.
func TestRunFresh(t *testing.T) {
	for _, c := range []struct {
		name, script string
		want         *freshBuildReply
		errHas       string
	}{
		{"reply", `echo building; echo '{"ms":12.5,"cpuMs":20,"rssBefore":1000,"peakRss":5000}'`,
			&freshBuildReply{MS: 12.5, CPUMS: 20, RSSBefore: 1000, PeakRSS: 5000}, ""},
		{"failed", `echo 'out of luck' >&2; exit 3`, nil, "out of luck"},
		{"no peak", `echo '{"ms":1,"rssBefore":1000}'`, nil, "want {ms, cpuMs, rssBefore, peakRss}"},
		{"not json", `echo done`, nil, `printed "done`},
		{"nothing", `true`, nil, "printed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := runFresh(exec.Command("sh", "-c", c.script), "test")
			if c.want != nil {
				if err != nil || *got != *c.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.errHas) {
				t.Fatalf("got %+v, %v; want an error saying %q", got, err, c.errHas)
			}
		})
	}
}

// TestFreshBuildsNeedTheHook: without MaybeBuildChild in the binary the
// suite would start a binary that does not know it is a child (and would
// run its own main again): it refuses instead.
func TestFreshBuildsNeedTheHook(t *testing.T) {
	defer func(h bool) { buildChildHooked = h }(buildChildHooked)
	buildChildHooked = false
	c := &coreRun{o: CoreOptions{Dir: t.TempDir(), Partitions: 4}}
	if err := c.freshBuilds(t.Context()); err == nil || !strings.Contains(err.Error(), "MaybeBuildChild") {
		t.Fatalf("freshBuilds without the hook: %v, want an error naming MaybeBuildChild", err)
	}
}
