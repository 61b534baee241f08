package harness

import (
	"flag"
	"runtime"
	"strconv"
)

// WaitingParallel raises the test binary's -parallel to n (when it is
// below n) unless the command line set it. It is for a package whose
// parallel tests spend most of their time waiting rather than computing —
// a fleet's settle, a deletion's write fence (node.FleetWriteFence), a
// gateway's staleness bound — so that on a small machine, where -parallel
// defaults to GOMAXPROCS, their waits overlap instead of adding up. Call
// it from TestMain, before m.Run.
func WaitingParallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set || n <= runtime.GOMAXPROCS(0) {
		return
	}
	if f := flag.Lookup("test.parallel"); f != nil {
		_ = f.Value.Set(strconv.Itoa(n))
	}
}
