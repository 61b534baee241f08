package aggregate

import (
	"errors"
	"testing"
)

// TestGroupCache: a cached group is handed out as a copy (a fold that
// changes it, and then fails to commit, leaves the cache as committed);
// an empty group is cached as absent; a group not cached is read.
func TestGroupCache(t *testing.T) {
	var c groupCache
	reads := 0
	read := func(k string) (*groupState, error) {
		reads++
		if k == "Sbad" {
			return nil, errors.New("boom")
		}
		return nil, nil
	}
	d, err := ParseDecimal("1.25")
	if err != nil {
		t.Fatal(err)
	}
	g := &groupState{Count: 2, Sums: map[string]*Decimal{"cost": &d}}
	c.committed(map[string]*groupState{"SOPEN": g, "SCLOSED": {}})

	got, err := c.load("SOPEN", read)
	if err != nil || got == nil || got.Count != 2 || got.Sums["cost"].String() != "1.25" {
		t.Fatalf("load = %+v, %v", got, err)
	}
	got.Count++
	got.Sums["cost"].Add(d)
	if again, _ := c.load("SOPEN", read); again.Count != 2 || again.Sums["cost"].String() != "1.25" {
		t.Fatalf("changing a loaded group changed the cache: %+v %s", again, again.Sums["cost"])
	}
	if got, err := c.load("SCLOSED", read); got != nil || err != nil {
		t.Fatalf("an empty committed group loads as %+v, %v", got, err)
	}
	if reads != 0 {
		t.Fatalf("%d store reads for cached groups", reads)
	}
	if _, err := c.load("Sbad", read); err == nil || reads != 1 {
		t.Fatalf("a group not cached was not read (%d reads, %v)", reads, err)
	}
	c.reset()
	if _, err := c.load("SOPEN", read); err != nil || reads != 2 {
		t.Fatalf("after reset the group was not read (%d reads)", reads)
	}
}
