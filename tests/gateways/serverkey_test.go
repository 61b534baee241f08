package gateways

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/tests/harness"
)

// keyDir returns a new data directory holding key as its server.key.
func keyDir(t *testing.T, key string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, auth.ServerKeyFile), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// fileGateway starts an in-process gateway of f whose server key is the
// file in dir.
func fileGateway(t *testing.T, f *harness.Cluster, dir string, g harness.GatewayOptions) (*harness.Server, func()) {
	t.Helper()
	gw, stop, err := f.StartGatewayOwn(t, dir, "", g)
	if err != nil {
		t.Fatal(err)
	}
	return gw, stop
}

func readKeyFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, auth.ServerKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// controlRecord reads a control-plane record of the engine (nil if none).
func controlRecord(t *testing.T, f *harness.Cluster, k []byte) []byte {
	t.Helper()
	out, err := f.EngineClient(t).GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(f.EngineTable()),
		ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{
			"tenantdb:pk": &types.AttributeValueMemberS{Value: "ctl#" + hex.EncodeToString(keyspace.Partition(k))},
			"tenantdb:sk": &types.AttributeValueMemberB{Value: k}}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Item == nil {
		return nil
	}
	return out.Item["v"].(*types.AttributeValueMemberB).Value[1:]
}

// rotationPhase is the phase of the rotation in progress (0: none).
func rotationPhase(t *testing.T, f *harness.Cluster) int {
	t.Helper()
	v := controlRecord(t, f, keyspace.System(keyspace.SysServerKeyRotation))
	if v == nil {
		return 0
	}
	var rec struct {
		Phase int `json:"phase"`
	}
	if err := json.Unmarshal(v, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Phase
}

// keyLoad has clients use tenants' keys through gateways, and create new
// keys and use them, until stop; every error is kept.
type keyLoad struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
	ok   atomic.Int64
}

func (l *keyLoad) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.errs) < 20 {
		l.errs = append(l.errs, err)
	}
}

// run has, for each gateway, one client per key writing and reading,
// and one creating keys of tenant (with the tenant's admin key) and
// using each new key at once through the next gateway.
func (l *keyLoad) run(gws []*harness.Server, admin harness.Credential, keys ...harness.Credential) {
	ctx := context.Background()
	for gi, g := range gws {
		for ki, k := range keys {
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				c := g.Client(k)
				for i := 0; !l.stop.Load(); i++ {
					pk := fmt.Sprintf("g%d-k%d-%d", gi, ki, i)
					if err := put(ctx, c, "rot", pk); err != nil {
						l.fail(fmt.Errorf("put through gateway %d with key %d: %w", gi, ki, err))
						continue
					}
					if _, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("rot"),
						Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}); err != nil {
						l.fail(fmt.Errorf("get through gateway %d with key %d: %w", gi, ki, err))
						continue
					}
					l.ok.Add(1)
				}
			}()
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			ac := &client.Client{Endpoint: g.Endpoint, Key: admin.Key}
			for i := 0; !l.stop.Load(); i++ {
				nk, err := ac.CreateKey(ctx, admin.TenantID, client.CreateKeyRequest{Role: "app"})
				if err != nil {
					l.fail(fmt.Errorf("create key through gateway %d: %w", gi, err))
					time.Sleep(50 * time.Millisecond)
					continue
				}
				other := gws[(gi+1)%len(gws)]
				c := other.Client(harness.Credential{AccessKeyID: nk.AccessKeyID, SecretAccessKey: nk.SecretAccessKey})
				if err := put(ctx, c, "rot", fmt.Sprintf("new-%d-%d", gi, i)); err != nil {
					l.fail(fmt.Errorf("a key created through gateway %d, used through the next: %w", gi, err))
					continue
				}
				l.ok.Add(1)
			}
		}()
	}
}

func (l *keyLoad) end(t *testing.T) {
	t.Helper()
	l.stop.Store(true)
	l.wg.Wait()
	for _, err := range l.errs {
		t.Errorf("during or after the rotation: %v", err)
	}
	if l.ok.Load() == 0 {
		t.Fatal("no request succeeded")
	}
	t.Logf("%d requests succeeded during and after the rotation", l.ok.Load())
}

// platformActions returns the actions of the platform audit log.
func platformActions(t *testing.T, g *harness.Server) []string {
	t.Helper()
	page, err := g.Admin().Audit(context.Background(), "", client.AuditQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range page.Records {
		out = append(out, r.Action)
	}
	return out
}

// TestServerKeyRotationFleet: the server key rotated through gateway 1
// while clients use tenants' keys — and create new ones and use them at
// once — through gateways 1 and 2: no request is refused during or
// after; both gateways' server.key files hold the new key; the engine
// keeps no copy of it under the old key; a gateway started with the new
// key serves, one started with the old key is refused saying why; the
// start and the end are in the platform's audit log.
func TestServerKeyRotationFleet(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 0, harness.Options{})
	d1, d2 := keyDir(t, f.ServerKey), keyDir(t, f.ServerKey)
	g1, _ := fileGateway(t, f, d1, harness.GatewayOptions{})
	g2, _ := fileGateway(t, f, d2, harness.GatewayOptions{})
	ctx := context.Background()
	createTable(t, g1, "rot")
	a := g1.NewTenant(t, "rot-a", "app")
	b := g2.NewTenant(t, "rot-b", "app")
	aAdmin := g2.NewKey(t, a.TenantID, "admin")
	within(t, "the table on gateway 2", func() bool {
		return errCode(put(ctx, g2.Client(b), "rot", "probe")) != "ResourceNotFoundException"
	})
	before, err := g1.Admin().ServerKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldIter := streamIterator(t, g1, aAdmin)

	var l keyLoad
	l.run([]*harness.Server{g1, g2}, aAdmin, a, b)
	time.Sleep(300 * time.Millisecond)
	start := time.Now()
	st, err := g1.Admin().RotateServerKey(ctx)
	if err != nil {
		l.end(t)
		t.Fatalf("server-key rotate through gateway 1: %v", err)
	}
	t.Logf("rotated in %v: %+v", time.Since(start).Round(time.Millisecond), st)
	time.Sleep(1500 * time.Millisecond)
	l.end(t)

	if st.Check == before.Check || st.Other != 0 {
		t.Errorf("status after the rotation %+v (before %+v): want a new check and no tenant key under another", st, before)
	}
	st2, err := g2.Admin().ServerKey(ctx)
	if err != nil || st2.Check != st.Check {
		t.Errorf("gateway 2's server key %+v, %v; want %s", st2, err, st.Check)
	}
	newKey := readKeyFile(t, d1)
	if newKey == f.ServerKey || readKeyFile(t, d2) != newKey {
		t.Fatalf("server.key files after the rotation: gateway 1 %.8s…, gateway 2 %.8s…, old %.8s…: want both the new key", newKey, readKeyFile(t, d2), f.ServerKey)
	}
	for _, d := range []string{d1, d2} {
		if _, err := os.Stat(filepath.Join(d, auth.NextServerKeyFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left in %s: %v", auth.NextServerKeyFile, d, err)
		}
	}
	if p := rotationPhase(t, f); p != 0 {
		t.Errorf("the rotation record (the new key sealed under the old one) is still in the engine, phase %d", p)
	}

	g3, _ := fileGateway(t, f, keyDir(t, newKey), harness.GatewayOptions{})
	if err := put(ctx, g3.Client(a), "rot", "after-new"); err != nil {
		t.Errorf("a gateway started with the new key: %v", err)
	}
	// Shard iterators: one handed out before the rotation, one after by a
	// gateway that took part, both open on the gateway started with the
	// new key (the fleet's stream secret outlives the rotation).
	for i, it := range []*string{oldIter, streamIterator(t, g1, aAdmin)} {
		if _, err := g3.Streams(aAdmin).GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}); err != nil {
			t.Errorf("shard iterator %d on the gateway started with the new key: %v", i, err)
		}
	}
	err = f.StartGatewayWithKey(t, t.TempDir(), f.ServerKey)
	if err == nil || !strings.Contains(err.Error(), "retired by a server key rotation") {
		t.Errorf("a gateway started with the old key after the rotation: %v, want a refusal saying the key was retired", err)
	}
	_, _, err = f.StartGatewayOwn(t, keyDir(t, f.ServerKey), "", harness.GatewayOptions{})
	if err == nil || !strings.Contains(err.Error(), "retired by a server key rotation") {
		t.Errorf("a gateway started with the old key file after the rotation: %v, want a refusal saying the key was retired", err)
	}
	acts := strings.Join(platformActions(t, g2), " ")
	for _, want := range []string{"server-key.rotate.start", "server-key.rotate.done", "server-key.rotate"} {
		if !strings.Contains(acts, want) {
			t.Errorf("platform audit lacks %s: %s", want, acts)
		}
	}
	// A second rotation, through gateway 2.
	if _, err := g2.Admin().RotateServerKey(ctx); err != nil {
		t.Fatal(err)
	}
	if err := put(ctx, g1.Client(a), "rot", "after-second"); err != nil {
		t.Errorf("after a second rotation: %v", err)
	}
}

// TestServerKeyRotationEnvRefused: a gateway given its key by
// TENANTDB_SERVER_KEY cannot rotate it, and a fleet with such a gateway
// does not rotate (nothing changes, the reason is given).
func TestServerKeyRotationEnvRefused(t *testing.T) {
	t.Parallel()
	f := harness.StartCluster(t, 1, harness.Options{}) // key from the environment
	env := f.Gateways[0]
	ctx := context.Background()
	_, err := env.Admin().RotateServerKey(ctx)
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, auth.ServerKeyEnv) {
		t.Fatalf("rotation on a gateway whose key comes from the environment: %v", err)
	}
	d := keyDir(t, f.ServerKey)
	g, _ := fileGateway(t, f, d, harness.GatewayOptions{})
	_, err = g.Admin().RotateServerKey(ctx)
	if !errors.As(err, &ae) || ae.Status != 400 || !strings.Contains(ae.Message, "abandoned") {
		t.Fatalf("rotation in a fleet with a gateway whose key comes from the environment: %v", err)
	}
	if readKeyFile(t, d) != f.ServerKey || rotationPhase(t, f) != 0 {
		t.Fatal("an abandoned rotation changed the key or left its record")
	}
	if _, err := env.Admin().ServerKey(ctx); err != nil {
		t.Fatalf("the environment gateway after the abandoned rotation: %v", err)
	}
}

// TestKeyRotationsKilled: the gateway rotating the server key (a
// process) is killed with kill -9 midway, once every gateway seals under
// the new key; another gateway takes the rotation over and finishes it,
// while clients keep using keys through it without a refusal; the killed
// gateway, started again on its data directory, has the new key.
//
// And a tenant key rotation whose gateway process is killed before it
// re-sealed anything is taken over by another gateway and finished.
func TestKeyRotationsKilled(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("-short: builds and kills tenantdb processes")
	}
	bin := binary(t)
	t.Run("server key", func(t *testing.T) { serverKeyRotationKilled(t, bin) })
	t.Run("tenant key", func(t *testing.T) { tenantKeyRotationKilled(t, bin) })
}

func tenantKeyRotationKilled(t *testing.T, bin string) {
	f := harness.StartCluster(t, 0, harness.Options{})
	g2, _, err := f.StartGatewayOwn(t, t.TempDir(), f.ServerKey, harness.GatewayOptions{JobSweep: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := g2.NewTenant(t, "killed-rotation", "admin")
	for range 20 {
		g2.NewKey(t, a.TenantID, "app") // audit records to re-seal
	}
	victim := f.StartBinaryGateway(t, bin, t.TempDir(), harness.Options{})
	if _, err := victim.Admin().RotateTenantKey(ctx, a.TenantID); err != nil {
		t.Fatal(err)
	}
	victim.Kill(t) // within its settle: nothing re-sealed yet
	enc, err := g2.Admin().Encryption(ctx, a.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	if enc.Rotation == nil {
		t.Fatalf("the rotation ended before its gateway was killed: %+v", enc)
	}
	start := time.Now()
	waitRotated(t, g2, a.TenantID, 2, 60*time.Second)
	t.Logf("killed with %d values done; finished by another gateway after %v", enc.Rotation.Done, time.Since(start).Round(time.Millisecond))
	if n := storedVersions(t, f, a.TenantID); n != 1 {
		t.Errorf("%d versions stored after the rotation, want 1", n)
	}
	auditActions(t, g2, a.TenantID)
}

func serverKeyRotationKilled(t *testing.T, bin string) {
	f := harness.StartCluster(t, 0, harness.Options{})
	d2 := keyDir(t, f.ServerKey)
	g2, _ := fileGateway(t, f, d2, harness.GatewayOptions{})
	ctx := context.Background()
	createTable(t, g2, "rot")
	a := g2.NewTenant(t, "kill-a", "app")
	aAdmin := g2.NewKey(t, a.TenantID, "admin")
	d1 := keyDir(t, f.ServerKey)
	victim := f.StartBinaryGatewayKeyFile(t, bin, d1, harness.Options{})
	within(t, "the table on the victim", func() bool {
		return errCode(put(ctx, victim.Client(a), "rot", "probe")) != "ResourceNotFoundException"
	})

	var l keyLoad
	l.run([]*harness.Server{g2}, aAdmin, a)
	rotated := make(chan error, 1)
	go func() {
		_, err := victim.Admin().RotateServerKey(ctx)
		rotated <- err
	}()
	deadline := time.Now().Add(30 * time.Second)
	for rotationPhase(t, f) < 2 { // switch: every gateway seals under the new key
		if time.Now().After(deadline) {
			l.end(t)
			t.Fatal("the rotation did not reach its switch phase")
		}
		time.Sleep(20 * time.Millisecond)
	}
	phase := rotationPhase(t, f)
	victim.Kill(t)
	t.Logf("killed the rotating gateway in phase %d", phase)
	if err := <-rotated; err == nil {
		t.Fatal("the rotation request answered although its gateway was killed midway")
	}
	if st, err := g2.Admin().ServerKey(ctx); err != nil || !strings.Contains(st.Rotation, "phase") {
		t.Errorf("server-key status during the rotation: %+v, %v; want the rotation in progress", st, err)
	}
	start := time.Now()
	for rotationPhase(t, f) != 0 {
		if time.Since(start) > 60*time.Second {
			l.end(t)
			t.Fatalf("the rotation was not finished by the other gateway (phase %d)", rotationPhase(t, f))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("finished by the other gateway after %v", time.Since(start).Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)
	l.end(t)

	newKey := readKeyFile(t, d2)
	if newKey == f.ServerKey {
		t.Fatal("the surviving gateway's server.key is still the old key")
	}
	acts := strings.Join(platformActions(t, g2), " ")
	for _, want := range []string{"server-key.rotate.start", "server-key.rotate.resumed", "server-key.rotate.done"} {
		if !strings.Contains(acts, want) {
			t.Errorf("platform audit lacks %s: %s", want, acts)
		}
	}
	// The killed gateway's directory holds the old server.key and the new
	// key in server.key.next: started again, it takes the new one.
	again, _ := fileGateway(t, f, d1, harness.GatewayOptions{})
	if err := put(ctx, again.Client(a), "rot", "after-restart"); err != nil {
		t.Errorf("the killed gateway started again: %v", err)
	}
	if readKeyFile(t, d1) != newKey {
		t.Errorf("the killed gateway's server.key after its restart is not the new key")
	}
}

// streamIterator returns a TRIM_HORIZON iterator of the first shard of
// tenant c's table "rots" (created, with a stream, on first use) through g.
func streamIterator(t *testing.T, g *harness.Server, c harness.Credential) *string {
	t.Helper()
	ctx := context.Background()
	d := g.Client(c)
	desc, err := d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("rots")})
	if errCode(err) == "ResourceNotFoundException" {
		_, err = d.CreateTable(ctx, &dynamodb.CreateTableInput{
			TableName:            aws.String("rots"),
			AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
			KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
			BillingMode:          types.BillingModePayPerRequest,
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
		})
		if err != nil {
			t.Fatal(err)
		}
		harness.WaitActive(t, ctx, d, "rots")
		if err := put(ctx, d, "rots", "x"); err != nil {
			t.Fatal(err)
		}
		desc, err = d.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("rots")})
	}
	if err != nil {
		t.Fatal(err)
	}
	sc := g.Streams(c)
	sd, err := sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: desc.Table.LatestStreamArn})
	if err != nil || len(sd.StreamDescription.Shards) == 0 {
		t.Fatalf("describe stream: %v, %v", sd, err)
	}
	it, err := sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: desc.Table.LatestStreamArn,
		ShardId: sd.StreamDescription.Shards[0].ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
	if err != nil {
		t.Fatal(err)
	}
	return it.ShardIterator
}
