package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
)

// Fleet is a set of gateways over one stand-in engine (a second
// in-process tenantdb, reached only through the DynamoDB API), all
// started with the same backend settings and server key, as an operator
// runs a fleet behind a load balancer.
type Fleet struct {
	// Engine is the stand-in engine's URL.
	Engine string
	// ServerKey is the fleet's server key (TENANTDB_SERVER_KEY format).
	ServerKey string
	// Operator is the operator credential the first gateway created.
	Operator Credential
	// Default is the default tenant's admin key (first gateway).
	Default Credential

	remote node.Remote
	log    *slog.Logger
}

// StartFleet starts the stand-in engine and n in-process gateways over
// it, each with a data directory of its own under t.TempDir() (so the
// first writes operator-credentials), and stops them when t ends.
func StartFleet(t testing.TB, n int) (*Fleet, []*Server) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
	engine, stopEngine, err := StartInProcess(Options{Logger: log, engine: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stopEngine(); err != nil {
			t.Errorf("%v", err)
		}
	})
	creds := filepath.Join(t.TempDir(), "engine-credentials")
	if err := auth.WriteCredentialsFile(creds, "engine", engine.defaultKey, Region, engine.Endpoint); err != nil {
		t.Fatal(err)
	}
	var key [32]byte
	rand.Read(key[:])
	f := &Fleet{
		Engine:    engine.Endpoint,
		ServerKey: hex.EncodeToString(key[:]),
		remote:    node.Remote{Endpoint: engine.Endpoint, Region: Region, TablePrefix: "fleet-", CredentialsFile: creds, Profile: "engine"},
		log:       log,
	}
	var gws []*Server
	for range n {
		gws = append(gws, f.Start(t, t.TempDir()))
	}
	return f, gws
}

// Start starts one more in-process gateway of the fleet on dataDir.
func (f *Fleet) Start(t testing.TB, dataDir string) *Server {
	t.Helper()
	s, stop, err := f.startGateway(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return s
}

// StartStoppable is Start, returning also the function that stops the
// gateway (for tests that stop one gateway of a running fleet).
func (f *Fleet) StartStoppable(t testing.TB, dataDir string) (*Server, func() error) {
	t.Helper()
	s, stop, err := f.startGateway(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	return s, stop
}

func (f *Fleet) startGateway(dataDir string) (*Server, func() error, error) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	n, err := node.Open(ctx, node.Options{
		DataDir: dataDir, ServerKey: f.ServerKey, Region: Region, Endpoint: l.Addr().String(),
		DefaultTenant: true, Logger: f.log, UnsafeNoSync: true,
		Backend: node.BackendDynamoDB, Remote: f.remote,
	})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- n.Serve(l) }()
	stop := func() error {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var errs []error
		if err := n.Shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("harness: shutdown: %w", err))
		}
		if err := <-served; err != nil {
			errs = append(errs, fmt.Errorf("harness: serve: %w", err))
		}
		if err := n.Close(); err != nil {
			errs = append(errs, fmt.Errorf("harness: close: %w", err))
		}
		return errors.Join(errs...)
	}
	b := n.Bootstrap()
	if b.Operator.Secret != "" {
		f.Operator, f.Default = credential(b.Operator), credential(b.Default)
	}
	return &Server{Endpoint: "http://" + l.Addr().String(), Operator: f.Operator, Default: f.Default, Remote: true, DataDir: dataDir}, stop, nil
}

// StartBinary runs the tenantdb executable bin as one more gateway of the
// fleet on dataDir (a child process, which Kill can kill -9). The
// operator credential file is copied into dataDir first, as an operator
// would give it to the new gateway (which creates none).
func (f *Fleet) StartBinary(t testing.TB, bin, dataDir string) *Server {
	t.Helper()
	k, err := auth.ParseKey(f.Operator.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := auth.WriteCredentialsFile(filepath.Join(dataDir, auth.OperatorCredentialsFile), auth.OperatorProfile, k, Region, ""); err != nil {
		t.Fatal(err)
	}
	env := []string{
		auth.ServerKeyEnv + "=" + f.ServerKey,
		"AWS_SHARED_CREDENTIALS_FILE=" + f.remote.CredentialsFile,
		"AWS_PROFILE=" + f.remote.Profile,
		"AWS_CONFIG_FILE=" + os.DevNull,
		"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=",
	}
	s := startBinary(t, bin, dataDir, Options{Env: env},
		"--backend", node.BackendDynamoDB, "--backend-endpoint", f.remote.Endpoint,
		"--backend-region", f.remote.Region, "--backend-table-prefix", f.remote.TablePrefix, "--default-tenant=false")
	s.Remote = true
	return s
}

// EngineClient returns a client of the stand-in engine with the fleet's
// own engine credential, to inspect what the gateways stored (the engine
// table is <TablePrefix>tenantdb, EngineTable).
func (f *Fleet) EngineClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	k, err := auth.ReadCredentialsFile(f.remote.CredentialsFile, f.remote.Profile)
	if err != nil {
		t.Fatal(err)
	}
	return (&Server{Endpoint: f.Engine}).Client(credential(k))
}

// EngineTable is the name of the fleet's engine table.
func (f *Fleet) EngineTable() string { return f.remote.TablePrefix + "tenantdb" }

// EngineTable starts a stand-in engine (an in-process tenantdb reached
// only through the DynamoDB API) and creates in it a table with the
// remote backend's key attributes (tenantdb:pk S, tenantdb:sk B); it
// returns the table's name and a function making independent clients of
// the engine, as separate gateways have.
func EngineTable(t testing.TB) (table string, newClient func() *dynamodb.Client) {
	t.Helper()
	engine := Start(t)
	newClient = func() *dynamodb.Client { return engine.Client(engine.Default) }
	table = "kv-tenantdb"
	_, err := newClient().CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("tenantdb:pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("tenantdb:sk"), AttributeType: types.ScalarAttributeTypeB}},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("tenantdb:pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("tenantdb:sk"), KeyType: types.KeyTypeRange}},
		BillingMode: types.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatal(err)
	}
	return table, newClient
}

// StartWithKey starts a gateway of the fleet on dataDir with another
// server key than the fleet's and returns node.Open's error (nil if it
// started, in which case t's cleanup stops it).
func (f *Fleet) StartWithKey(t testing.TB, dataDir, serverKey string) error {
	t.Helper()
	g := *f
	g.ServerKey = serverKey
	_, stop, err := g.startGateway(dataDir)
	if err == nil {
		t.Cleanup(func() { _ = stop() })
	}
	return err
}
