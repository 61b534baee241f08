package engine

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tenantdb/tenantdb/internal/crashtest"

	"github.com/tenantdb/tenantdb/internal/storage"
	"github.com/tenantdb/tenantdb/internal/tenancy"
	"github.com/tenantdb/tenantdb/internal/wire"
)

const (
	streamCrashEnv     = "TENANTDB_STREAM_CRASH_CHILD"
	streamCrashWriters = 4
	streamCrashAcks    = 300
)

// streamCrashTenants are fixed so that the child and the parent agree.
var streamCrashTenants = [2]string{"5f0e6a5e2c1b4d0e9a8b7c6d5e4f3a2b", "6a1f7b6f3d2c4e1f8b9c0d1e2f3a4b5c"}

func streamCrashEnvOpen(t testing.TB, dir string) *testEnv {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := storage.Open(dir, storage.Options{Logger: log})
	if err != nil {
		t.Fatalf("storage.Open: %v", err)
	}
	env := &testEnv{t: t, db: db, clock: &testClock{}, opts: Options{Logger: log, TTLInterval: -1, InMemory: true, Streams: true, Keys: testKeys(t, dir+"-keys")}}
	env.e = env.open()
	return env
}

func streamCrashActor(env *testEnv, g int) testActor {
	id, err := tenancy.ParseTenantID(streamCrashTenants[g%2])
	if err != nil {
		env.t.Fatal(err)
	}
	return testActor{env, tenancy.Principal{Tenant: id, Env: "live", Role: tenancy.RoleApp, KeyID: "AKIDTENANT"}}
}

// TestStreamCrash re-executes the test binary as a child that puts items
// into a table with a stream from several writers of two tenants and
// prints each write once PutItem returns. The parent SIGKILLs it, reopens
// the store and checks that every acknowledged write has its record, in
// order per key, and that no record exists for a write that did not
// happen.
func TestStreamCrash(t *testing.T) {
	if dir := os.Getenv(streamCrashEnv); dir != "" {
		streamCrashChild(t, dir)
		return
	}
	cmd, out, dir := crashtest.Start(t, streamCrashEnv)
	acked := make([]int, streamCrashWriters) // per writer: acknowledged writes
	total, killed := 0, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		var g, seq int
		if _, err := fmt.Sscanf(sc.Text(), "ack %d %d", &g, &seq); err != nil {
			continue
		}
		acked[g] = seq + 1
		if total++; total == streamCrashAcks {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err := cmd.Wait()
	if !killed {
		t.Fatalf("child exited before %d acknowledgements (got %d): %v", streamCrashAcks, total, err)
	}

	env := streamCrashEnvOpen(t, dir)
	defer func() { env.e.Close(); env.db.Close() }()
	for tn := 0; tn < 2; tn++ {
		a := streamCrashActor(env, tn)
		next := map[string]int{}
		for _, line := range a.records("Crash") {
			// "INSERT w0 - -> 0" or "MODIFY w0 3 -> 4"
			f := strings.Fields(line)
			g, _ := strconv.Atoi(strings.TrimPrefix(f[1], "w"))
			v, _ := strconv.Atoi(f[len(f)-1])
			if g%2 != tn {
				t.Errorf("tenant %d reads writer %d's record %q", tn, g, line)
			}
			if v != next[f[1]] {
				t.Errorf("tenant %d: record %q where write %d was due", tn, line, next[f[1]])
			}
			next[f[1]] = v + 1
		}
		for g := tn; g < streamCrashWriters; g += 2 {
			key := fmt.Sprintf("w%d", g)
			// At most one write past the last acknowledged one may have
			// committed (acknowledgement lost with the process).
			if n := next[key]; n < acked[g] || n > acked[g]+1 {
				t.Errorf("writer %d: %d records, %d writes acknowledged", g, n, acked[g])
			}
			it := a.get("Crash", itemOf(t, fmt.Sprintf(`{"pk":{"S":%q}}`, key)))
			if it == nil || it["v"].S != strconv.Itoa(next[key]-1) {
				t.Errorf("writer %d: item %v, but the last record is write %d", g, it, next[key]-1)
			}
		}
	}
}

func streamCrashChild(t *testing.T, dir string) {
	env := streamCrashEnvOpen(t, dir)
	env.operator().create(streamTable("Crash", "NEW_AND_OLD_IMAGES"))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < streamCrashWriters; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := streamCrashActor(env, g)
			for seq := 0; ; seq++ {
				item := itemOf(t, fmt.Sprintf(`{"pk":{"S":"w%d"},"v":{"S":"%d"}}`, g, seq))
				if _, err := env.e.PutItem(testCtx, a.scope("PutItem"), &wire.PutItemInput{TableName: "Crash", Item: item}); err != nil {
					fmt.Fprintln(os.Stderr, "put:", err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Printf("ack %d %d\n", g, seq)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}
