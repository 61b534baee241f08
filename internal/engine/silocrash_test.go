package engine

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/internal/attr"
	"github.com/tenantdb/tenantdb/internal/crashtest"
	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

const (
	siloCrashEnv     = "TENANTDB_SILO_CRASH_CHILD"
	siloCrashTenants = 12
	siloCrashBound   = 3
	siloCrashAcks    = 600
)

func siloCrashOpen(t testing.TB, dir string, opened func()) *testEnv {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open(filepath.Join(dir, "db"), storage.Options{Logger: log})
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	env := &testEnv{t: t, db: db, clock: &testClock{}, opts: Options{Logger: log, TTLInterval: -1,
		SiloDir: filepath.Join(dir, "silos"), MaxOpenSilos: siloCrashBound, Keys: testKeys(t, filepath.Join(dir, "keys"))}}
	env.e = env.open()
	if opened != nil {
		env.e.openStore = func(dir string, o storage.Options) (*storage.DB, error) {
			opened()
			return storage.Open(dir, o)
		}
	}
	return env
}

func siloCrashActor(env *testEnv, g int) testActor {
	id, err := tenancy.ParseTenantID(fmt.Sprintf("%032x", 0x51100+g))
	if err != nil {
		env.t.Fatal(err)
	}
	return testActor{env, tenancy.Principal{Tenant: id, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDTENANT"}}
}

// TestSiloEvictionCrash re-executes the test binary as a child in which 12
// tenants write to a silo table under a bound of 3 open stores, so that
// their stores are evicted and reopened all the time, and print each
// write once it is acknowledged. The parent SIGKILLs the child (whether a
// tenant's store is open, opening, closing or closed at that moment),
// reopens the data directory and reads back every acknowledged write.
func TestSiloEvictionCrash(t *testing.T) {
	if dir := os.Getenv(siloCrashEnv); dir != "" {
		siloCrashChild(t, dir)
		return
	}
	cmd, out, dir := crashtest.Start(t, siloCrashEnv)
	acked := make([]int, siloCrashTenants)
	total, opens, killed := 0, 0, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if sc.Text() == "open" {
			opens++
			continue
		}
		var g, seq int
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &g, &seq); err != nil {
			continue
		}
		acked[g] = seq + 1
		if total++; total == siloCrashAcks {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err := cmd.Wait()
	if !killed {
		t.Fatalf("child exited before %d acknowledgements (got %d): %v", siloCrashAcks, total, err)
	}
	if opens <= siloCrashTenants {
		t.Fatalf("the child opened %d stores for %d tenants: none was evicted", opens, siloCrashTenants)
	}
	env := siloCrashOpen(t, dir, nil)
	defer func() { env.e.Close(); env.db.Close() }()
	lost := 0
	for g := range siloCrashTenants {
		a := siloCrashActor(env, g)
		for seq := range acked[g] {
			it := a.get("SiloCrash", attr.Item{"pk": sval(fmt.Sprint(seq))})
			if it == nil || it["v"].S != fmt.Sprintf("%d.%d", g, seq) {
				if lost++; lost < 10 {
					t.Errorf("tenant %d: acknowledged write %d is %v after kill -9", g, seq, it)
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged writes lost (%d store opens before the kill)", lost, total, opens)
	}
	t.Logf("%d acknowledged writes of %d tenants survived kill -9 after %d store opens under a bound of %d", total, siloCrashTenants, opens, siloCrashBound)
}

func siloCrashChild(t *testing.T, dir string) {
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		fmt.Println(s)
		mu.Unlock()
	}
	env := siloCrashOpen(t, dir, func() { say("open") })
	in := tableInput("SiloCrash", false)
	in.Tags = []wire.Tag{{Key: tenancy.TagIsolation, Value: "silo"}}
	env.operator().create(in)
	var wg sync.WaitGroup
	for g := range siloCrashTenants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := siloCrashActor(env, g)
			for seq := 0; ; seq++ {
				item := attr.Item{"pk": sval(fmt.Sprint(seq)), "v": sval(fmt.Sprintf("%d.%d", g, seq))}
				if _, err := env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "SiloCrash", Item: item}); err != nil {
					fmt.Fprintln(os.Stderr, "put:", err)
					os.Exit(2)
				}
				say(fmt.Sprintf("ack %d %d", g, seq))
			}
		}()
	}
	wg.Wait()
}
