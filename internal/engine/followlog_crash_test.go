package engine

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantdb/tenantdb/internal/changelog"
	"github.com/tenantdb/tenantdb/internal/crashtest"
	"github.com/tenantdb/tenantdb/internal/wire"
)

const followCrashEnv = "TENANTDB_FOLLOW_CRASH_CHILD"

// TestFollowLogCrash re-executes the test binary as a child that holds
// the log of a table (two tenants' consumers), puts items from several
// writers of both tenants while switching the table's DynamoDB stream on
// and off, and prints each write once PutItem returns. The parent
// SIGKILLs it, reopens the store and follows each tenant's log from the
// start: every acknowledged write is there exactly once, in per-key
// order, and nothing that did not happen.
func TestFollowLogCrash(t *testing.T) {
	if dir := os.Getenv(followCrashEnv); dir != "" {
		followCrashChild(t, dir)
		return
	}
	cmd, out, dir := crashtest.Start(t, followCrashEnv)
	acked := make([]int, streamCrashWriters)
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
	if streams, _ := env.e.clog.Streams(env.sharedTable("Crash").ID); len(streams) < 3 {
		t.Errorf("%d streams: the child means to switch streams while writing", len(streams))
	}
	for tn := 0; tn < 2; tn++ {
		a := streamCrashActor(env, tn)
		recs, _ := a.followAll("Crash", changelog.Cursor{})
		next := map[string]int{}
		for _, line := range recs {
			// "INSERT w0 - -> 0" or "MODIFY w0 3 -> 4"
			f := strings.Fields(line)
			g, _ := strconv.Atoi(strings.TrimPrefix(f[1], "w"))
			v, _ := strconv.Atoi(f[len(f)-1])
			if g%2 != tn {
				t.Errorf("tenant %d follows writer %d's change %q", tn, g, line)
			}
			if v != next[f[1]] || v > 0 && f[2] != strconv.Itoa(v-1) {
				t.Errorf("tenant %d: change %q where write %d was due", tn, line, next[f[1]])
			}
			next[f[1]] = v + 1
		}
		for g := tn; g < streamCrashWriters; g += 2 {
			key := fmt.Sprintf("w%d", g)
			if n := next[key]; n < acked[g] || n > acked[g]+1 {
				t.Errorf("writer %d: %d changes followed, %d writes acknowledged", g, n, acked[g])
			}
			it := a.get("Crash", itemOf(t, fmt.Sprintf(`{"pk":{"S":%q}}`, key)))
			if it == nil || it["v"].S != strconv.Itoa(next[key]-1) {
				t.Errorf("writer %d: item %v, but the last change is write %d", g, it, next[key]-1)
			}
		}
	}
}

func followCrashChild(t *testing.T, dir string) {
	env := streamCrashEnvOpen(t, dir)
	op := env.operator()
	op.create(tableInput("Crash", false))
	for tn := 0; tn < 2; tn++ {
		a := streamCrashActor(env, tn)
		if err := env.e.RetainLog(testCtx, a.scope("GetRecords"), "Crash", "webhook:crash"); err != nil {
			fmt.Fprintln(os.Stderr, "retain:", err)
			os.Exit(2)
		}
	}
	go func() {
		for i := 0; ; i++ {
			spec := &wire.StreamSpecification{StreamEnabled: boolPtr(i%2 == 0)}
			if i%2 == 0 {
				spec.StreamViewType = "KEYS_ONLY"
			}
			if _, err := env.e.UpdateTable(testCtx, op.scope("UpdateTable"), &wire.UpdateTableInput{TableName: "Crash", StreamSpecification: spec}); err != nil {
				fmt.Fprintln(os.Stderr, "update table:", err)
				os.Exit(2)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
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
