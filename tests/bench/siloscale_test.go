package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// TestSiloScale measures what silo tenants cost a server: N tenants each
// write one item to one silo table (issue 17's measurement) through the
// real binary, and at checkpoints it reports the silo stores open (LOCK
// files the process holds), file descriptors (/proc/<pid>/fd), disk bytes
// of the data directory (allocated blocks, as du counts) and RSS, then the
// latency of a GetItem by a tenant whose store is closed (cold) against
// one whose store is open (warm). It is a benchmark, run on demand:
//
//	TENANTDB_SILO_SCALE=200,1000,5000,10000 [TENANTDB_SILO_SCALE_BIN=path] \
//	  [TENANTDB_SILO_SCALE_ARGS='--max-open-silos 256'] \
//	  go test -run TestSiloScale -v -timeout 60m ./tests/bench/
//
// TENANTDB_SILO_SCALE_BIN runs another build (e.g. one from before one
// store per tenant) for the baseline; by default the current source is
// built. It stops early (and says so) when the server fails, e.g. out of
// file descriptors.
func TestSiloScale(t *testing.T) {
	spec := os.Getenv("TENANTDB_SILO_SCALE")
	if spec == "" {
		t.Skip("set TENANTDB_SILO_SCALE=200,1000,... to run")
	}
	var checkpoints []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			t.Fatalf("TENANTDB_SILO_SCALE: bad checkpoint %q", f)
		}
		checkpoints = append(checkpoints, n)
	}
	sort.Ints(checkpoints)
	bin := os.Getenv("TENANTDB_SILO_SCALE_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "tenantdb")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/tenantdb/tenantdb/cmd/tenantdb")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	dir := t.TempDir()
	args := append([]string{"--fairness=false"}, strings.Fields(os.Getenv("TENANTDB_SILO_SCALE_ARGS"))...)
	srv := harness.StartBinary(t, bin, dir, args...)
	ctx := context.Background()
	_, err := srv.Client(srv.Operator).CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("scale"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		BillingMode:          types.BillingModePayPerRequest,
		Tags:                 []types.Tag{{Key: aws.String("tenantdb:isolation"), Value: aws.String("silo")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	base := sample(t, srv.Pid(), dir)
	t.Logf("binary %s %v", bin, args)
	t.Logf("%8s %7s %7s %8s %8s %7s %7s %15s %15s %10s", "tenants", "stores", "fds", "disk MB", "silos MB", "RSS MB", "load s", "cold ms p50/p90", "warm ms p50/p90", "cold/warm")
	t.Logf("%8d %7d %7d %8.1f %8.1f %7.1f", 0, base.stores, base.fds, base.disk/1e6, base.silo/1e6, base.rss/1e6)

	var creds []*dynamodb.Client
	var mu sync.Mutex
	adm := srv.Admin()
	const workers = 8
	start := time.Now()
	for _, target := range checkpoints {
		var failed atomic.Value
		var wg sync.WaitGroup
		next := atomic.Int64{}
		next.Store(int64(len(creds)))
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= target || failed.Load() != nil {
						return
					}
					c, err := scaleTenant(ctx, srv, adm, i)
					if err != nil {
						failed.Store(fmt.Errorf("tenant %d: %w", i, err))
						return
					}
					mu.Lock()
					creds = append(creds, c)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			s := sample(t, srv.Pid(), dir)
			t.Logf("stopped before %d tenants: %v (at %d tenants: %d stores, %d fds, %.1f MB disk, %.1f MB RSS)",
				target, err, len(creds), s.stores, s.fds, s.disk/1e6, s.rss/1e6)
			return
		}
		load := time.Since(start)
		s := sample(t, srv.Pid(), dir)
		cold, warm := coldWarm(t, ctx, creds)
		ratio := 0.0
		if warm[0] > 0 {
			ratio = cold[0] / warm[0]
		}
		t.Logf("%8d %7d %7d %8.1f %8.1f %7.1f %7.1f %7.2f/%7.2f %7.2f/%7.2f %10.1f", target, s.stores, s.fds, s.disk/1e6, s.silo/1e6, s.rss/1e6, load.Seconds(),
			cold[0], cold[1], warm[0], warm[1], ratio)
	}
	// What the data directory keeps once the server has stopped (Pebble
	// leaves each store's preallocated WAL behind on close).
	t0 := time.Now()
	srv.Stop(t)
	s := sample(t, os.Getpid(), dir)
	t.Logf("stopped in %.1f s: %.1f MB disk, %.1f MB of it silo stores", time.Since(t0).Seconds(), s.disk/1e6, s.silo/1e6)
}

// scaleTenant creates tenant i with an app key and writes its one item.
func scaleTenant(ctx context.Context, srv *harness.Server, adm *client.Client, i int) (*dynamodb.Client, error) {
	tn, err := adm.CreateTenant(ctx, client.CreateTenantRequest{Name: fmt.Sprintf("scale %d", i), Slug: fmt.Sprintf("scale-%d", i)})
	if err != nil {
		return nil, err
	}
	k, err := adm.CreateKey(ctx, tn.ID, client.CreateKeyRequest{Role: "app"})
	if err != nil {
		return nil, err
	}
	c := srv.Client(harness.Credential{TenantID: tn.ID, AccessKeyID: k.AccessKeyID, SecretAccessKey: k.SecretAccessKey, Key: k.Key})
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("scale"),
		Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}, "n": &types.AttributeValueMemberN{Value: strconv.Itoa(i)}}})
	return c, err
}

// coldWarm returns the latency in ms (median, 90th percentile) of a
// GetItem by each of 100 of the earliest tenants (written longest ago:
// their stores are the first closed under a bound; none is read twice
// across checkpoints), then of 100 GetItems by the latest tenant (whose
// store is open).
func coldWarm(t *testing.T, ctx context.Context, creds []*dynamodb.Client) (cold, warm [2]float64) {
	t.Helper()
	get := func(c *dynamodb.Client) float64 {
		t0 := time.Now()
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("scale"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}})
		d := time.Since(t0)
		if err != nil || out.Item == nil {
			t.Fatalf("GetItem: %v %v", out, err)
		}
		return float64(d.Microseconds()) / 1000
	}
	n := min(100, len(creds)/2)
	var cs, ws []float64
	for i := range n {
		cs = append(cs, get(coldOrder(creds, i)))
	}
	last := creds[len(creds)-1]
	get(last)
	for range n {
		ws = append(ws, get(last))
	}
	return pct(cs), pct(ws)
}

// coldOrder picks the i-th tenant to read cold: spread over the first
// half, so that successive checkpoints read different ones.
var coldRead = map[*dynamodb.Client]bool{}

func coldOrder(creds []*dynamodb.Client, i int) *dynamodb.Client {
	for j := i; j < len(creds)/2; j++ {
		if !coldRead[creds[j]] {
			coldRead[creds[j]] = true
			return creds[j]
		}
	}
	return creds[i]
}

// pct returns the median and the 90th percentile of v.
func pct(v []float64) [2]float64 {
	if len(v) == 0 {
		return [2]float64{}
	}
	sort.Float64s(v)
	return [2]float64{v[len(v)/2], v[len(v)*9/10]}
}

type scaleSample struct {
	stores, fds     int
	disk, silo, rss float64 // silo: the disk of the silo stores alone
}

// sample measures the server process pid and its data directory dir.
func sample(t *testing.T, pid int, dir string) scaleSample {
	t.Helper()
	var s scaleSample
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		t.Fatalf("reading %s: %v", fdDir, err)
	}
	s.fds = len(ents)
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(fdDir, e.Name())); err == nil && strings.HasSuffix(l, "/LOCK") && strings.Contains(l, "/silos/") {
			s.stores++
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			s.rss = kb * 1024
		}
	}
	silos := filepath.Join(dir, "silos") + string(filepath.Separator)
	filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				s.disk += float64(st.Blocks * 512)
				if strings.HasPrefix(path, silos) {
					s.silo += float64(st.Blocks * 512)
				}
			}
		}
		return nil
	})
	return s
}
