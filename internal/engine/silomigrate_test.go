package engine

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

// TestLegacySiloStoresMigrate builds a data directory of the old layout
// (one store per tenant and silo table: <tenant>/<table id>), opens it and
// checks that the tenant's store holds all of it (items, counters, change
// log ceiling), that the old stores are gone, and that a crash after a
// copy but before its store was removed (the copy runs again) changes
// nothing.
func TestLegacySiloStoresMigrate(t *testing.T) {
	siloDir := t.TempDir() // NB: before openEnv, so removed after the engine's Close
	env := openEnv(t)
	env.e.Close()
	env.opts.SiloDir, env.opts.InMemory, env.opts.Streams = siloDir, false, true
	env.e = env.open()

	op := env.operator()
	silo := []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	in1 := streamTable("Tab1", "NEW_AND_OLD_IMAGES")
	in1.Tags = silo
	op.create(in1)
	in2 := tableInput("Tab2", false)
	in2.Tags = silo
	op.create(in2)
	t1, t2 := env.sharedTable("Tab1"), env.sharedTable("Tab2")
	a := env.tenant(tenancy.RoleApp)
	tdir := filepath.Join(siloDir, a.p.Tenant.String())
	aside := t.TempDir()
	// offline changes the silo directory with the engine closed: an open
	// engine's background pass may migrate (open, copy, remove) stores of
	// the old layout at any time.
	offline := func(change func()) {
		t.Helper()
		must(t, env.e.Close())
		change()
		env.e = env.open()
	}

	// Old layout: each table's data in a store of its own.
	for i := range 30 {
		a.put("Tab1", attr.Item{"pk": sval(fmt.Sprint(i)), "v": sval("one")})
	}
	ns := keyspace.Namespace(a.p.Tenant, a.p.Env)
	oldCeil := ceilingIn(t, env, a.p.Tenant, ns)
	offline(func() {
		must(t, os.Rename(filepath.Join(tdir, siloStoreName), filepath.Join(aside, "t1")))
	})
	for i := range 20 {
		a.put("Tab2", attr.Item{"pk": sval(fmt.Sprint(i)), "v": sval("two")})
	}
	check := func(when string) {
		t.Helper()
		for i := range 30 {
			if got := a.get("Tab1", attr.Item{"pk": sval(fmt.Sprint(i))}); got["v"].S != "one" {
				t.Fatalf("%s: T1 item %d = %v", when, i, got)
			}
		}
		for i := range 20 {
			if got := a.get("Tab2", attr.Item{"pk": sval(fmt.Sprint(i))}); got["v"].S != "two" {
				t.Fatalf("%s: T2 item %d = %v", when, i, got)
			}
		}
		if n1, n2 := a.describe("Tab1").ItemCount, a.describe("Tab2").ItemCount; n1 != 30 || n2 != 20 {
			t.Fatalf("%s: item counts %d, %d; want 30, 20", when, n1, n2)
		}
		ents, err := os.ReadDir(tdir)
		if err != nil || len(ents) != 1 || ents[0].Name() != siloStoreName {
			names := []string{}
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Fatalf("%s: tenant directory holds %v (%v), want only %q", when, names, err, siloStoreName)
		}
	}
	offline(func() {
		must(t, os.Rename(filepath.Join(tdir, siloStoreName), filepath.Join(tdir, fmt.Sprint(t2.ID))))
		must(t, os.Rename(filepath.Join(aside, "t1"), filepath.Join(tdir, fmt.Sprint(t1.ID))))
		// A copy of T1's old store, to play a crash after its copy.
		if out, err := exec.Command("cp", "-a", filepath.Join(tdir, fmt.Sprint(t1.ID)), filepath.Join(aside, "t1copy")).CombinedOutput(); err != nil {
			t.Fatalf("copying T1's old store: %v\n%s", err, out)
		}
	})
	// Nobody uses the tenant: the background pass moves its old stores.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		ents, _ := os.ReadDir(tdir)
		if len(ents) == 1 && ents[0].Name() == siloStoreName {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the background pass left %d entries in the tenant's directory", len(ents))
		}
		time.Sleep(10 * time.Millisecond)
	}
	check("after the migration")
	if c := ceilingIn(t, env, a.p.Tenant, ns); c < oldCeil {
		t.Fatalf("change log ceiling %d after the migration, below the old store's %d", c, oldCeil)
	}
	// A crash after T1's old store was copied but before it was removed
	// (nothing is written in between: the store is not used before its
	// migration is done): the copy runs again.
	offline(func() {
		must(t, os.Rename(filepath.Join(aside, "t1copy"), filepath.Join(tdir, fmt.Sprint(t1.ID))))
		must(t, os.MkdirAll(filepath.Join(tdir, "99.migrated"), 0o700)) // a removal cut short
	})
	check("after a repeated copy")
	a.put("Tab1", attr.Item{"pk": sval("new"), "v": sval("after")})
	env.reopen()
	if got := a.get("Tab1", attr.Item{"pk": sval("new")}); got["v"].S != "after" || a.describe("Tab1").ItemCount != 31 {
		t.Fatalf("write after the migration: %v", got)
	}
}

// ceilingIn reads namespace ns's change log sequence ceiling from tenant's
// silo store.
func ceilingIn(t *testing.T, env *testEnv, tenant tenancy.TenantID, ns []byte) uint64 {
	t.Helper()
	db, release, err := env.e.siloStoreOf(testCtx, tenant)
	if err != nil || db == nil {
		t.Fatalf("tenant's store: %v", err)
	}
	defer release()
	v, err := db.Get(keyspace.ChangeCeiling(ns))
	if err != nil {
		t.Fatalf("reading the ceiling: %v", err)
	}
	return binary.BigEndian.Uint64(v)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
