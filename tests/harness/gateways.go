package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/node"
)

// GatewaysEnv names the environment variable that runs every in-process
// Start as that many gateways (2 or more) over one stand-in engine,
// behind a front that alternates requests between them (a Remote server;
// TENANTDB_REMOTE=1 is implied):
//
//	TENANTDB_REMOTE_GATEWAYS=2 go test ./tests/conformance ./tests/isolation ./tests/model ./tests/seeds
const GatewaysEnv = "TENANTDB_REMOTE_GATEWAYS"

// gatewaysWanted is how many gateways a Start with o runs: 0 or 1 mean
// one server as before.
func gatewaysWanted(o Options) int {
	if o.engine || o.gateway != nil || o.RemoteEngine != "" {
		return 0
	}
	if o.gateways > 0 {
		return o.gateways
	}
	n, _ := strconv.Atoi(os.Getenv(GatewaysEnv))
	return n
}

// Cluster is a fleet of gateways over one stand-in engine: a plain
// tenantdb (in-process, or a binary: StartBinaryEngine) that the gateways
// reach with its default tenant's key (EngineKey) through the AWS
// shared-credentials chain, each keeping everything in the same engine
// table, all started with the same backend settings and server key, as
// an operator runs a fleet behind a load balancer. It is the one way
// tests start gateways (Start's GatewaysEnv and RemoteGatewaysFor use it
// too).
type Cluster struct {
	// Engine is the stand-in engine.
	Engine *Server
	// EngineKey is the gateways' credential for the engine: a client with
	// it talks to the engine directly, as the gateways do.
	EngineKey Credential
	// Gateways are the gateways started so far, in order.
	Gateways []*Server
	// ServerKey is the fleet's server key (TENANTDB_SERVER_KEY format):
	// gateways of one fleet share it.
	ServerKey string
	// Operator is the operator credential the fleet's first gateway
	// created in the engine (zero until one started), and Default the
	// default tenant's admin key it created.
	Operator, Default Credential

	remote node.Remote // the gateways' backend settings
	opts   Options     // the in-process gateways' options
	dir    string      // the cluster's scratch directory
}

// newServerKey returns a random server key.
func newServerKey() string {
	var key [32]byte
	rand.Read(key[:])
	return hex.EncodeToString(key[:])
}

// StartCluster starts a stand-in engine and n in-process gateways over it
// for t, each on a data directory of its own (so the first writes
// operator-credentials there, as `tenantdb serve` does), o configuring
// the gateways, and stops them when t ends. StartGateway adds more.
func StartCluster(t testing.TB, n int, o Options) *Cluster {
	t.Helper()
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
	f, stop, err := startCluster(o, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return f
}

func startCluster(o Options, n int) (f *Cluster, stop func() error, err error) {
	var stops []func() error
	stop = func() error {
		var errs []error
		for i := len(stops) - 1; i >= 0; i-- {
			errs = append(errs, stops[i]())
		}
		return errors.Join(errs...)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, stop())
		}
	}()
	engine, stopEngine, err := StartInProcess(Options{Logger: o.Logger, engine: true})
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, stopEngine)
	dir, err := os.MkdirTemp("", "tenantdb-fleet-")
	if err != nil {
		return nil, nil, err
	}
	stops = append(stops, func() error { return os.RemoveAll(dir) })
	creds := filepath.Join(dir, "engine-credentials")
	if err := auth.WriteCredentialsFile(creds, "engine", engine.defaultKey, Region, engine.Endpoint); err != nil {
		return nil, nil, err
	}
	f = &Cluster{Engine: engine, EngineKey: engine.Default, ServerKey: newServerKey(), opts: o, dir: dir,
		remote: node.Remote{Endpoint: engine.Endpoint, Region: Region, TablePrefix: "gw-", CredentialsFile: creds, Profile: "engine"}}
	for i := range n {
		_, stopGW, err := f.startGateway(filepath.Join(dir, fmt.Sprintf("gateway%d", i)), f.ServerKey)
		if err != nil {
			return nil, nil, err
		}
		stops = append(stops, stopGW)
	}
	return f, stop, nil
}

// StartGateway starts one more in-process gateway of the fleet on
// dataDir; t's cleanup stops it.
func (f *Cluster) StartGateway(t testing.TB, dataDir string) *Server {
	t.Helper()
	gw, stop, err := f.startGateway(dataDir, f.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return gw
}

// StartGatewayWithKey starts a gateway of the fleet on dataDir with
// another server key than the fleet's and returns node.Open's error (nil
// if it started, in which case t's cleanup stops it).
func (f *Cluster) StartGatewayWithKey(t testing.TB, dataDir, serverKey string) error {
	t.Helper()
	_, stop, err := f.startGateway(dataDir, serverKey)
	if err == nil {
		t.Cleanup(func() { _ = stop() })
	}
	return err
}

func (f *Cluster) startGateway(dataDir, serverKey string) (*Server, func() error, error) {
	o := f.opts
	o.gateway, o.serverKey, o.dataDir = &f.remote, serverKey, dataDir
	gw, stop, err := StartInProcess(o)
	if err != nil {
		return nil, nil, err
	}
	// NB: only the first gateway on an empty engine creates the operator
	// (and the default tenant); the others find them.
	if f.Operator.Key == "" {
		f.Operator, f.Default = gw.Operator, gw.Default
	}
	if gw.Operator.Key == "" {
		gw.Operator, gw.Default = f.Operator, f.Default
	}
	f.Gateways = append(f.Gateways, gw)
	return gw, stop, nil
}

// EngineClient returns a client of the stand-in engine with the fleet's
// own engine credential, to inspect what the gateways stored (in the
// table EngineTable).
func (f *Cluster) EngineClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return f.Engine.Client(f.EngineKey)
}

// EngineTable is the name of the fleet's engine table.
func (f *Cluster) EngineTable() string { return f.remote.TablePrefix + "tenantdb" }

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

// startClusterFront is Start for GatewaysEnv: n gateways over one engine,
// seen through one front that alternates requests between them; the
// credentials are the first gateway's.
func startClusterFront(o Options, n int) (*Server, func() error, error) {
	f, stopFleet, err := startCluster(o, n)
	if err != nil {
		return nil, nil, err
	}
	front, stopFront, err := newFront(f.Gateways...)
	if err != nil {
		return nil, nil, errors.Join(err, stopFleet())
	}
	return front, func() error { return errors.Join(stopFront(), stopFleet()) }, nil
}

// Front returns a server whose endpoint alternates requests (not
// connections) between gateways, round robin, with the first one's
// credentials; it stops when t ends. A request to a gateway that is down
// gets 502 from the front.
func Front(t testing.TB, gateways ...*Server) *Server {
	t.Helper()
	s, stop, err := newFront(gateways...)
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

func newFront(gateways ...*Server) (*Server, func() error, error) {
	var targets []*url.URL
	for _, g := range gateways {
		u, err := url.Parse(g.Endpoint)
		if err != nil {
			return nil, nil, err
		}
		targets = append(targets, u)
	}
	var next atomic.Uint64
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[next.Add(1)%uint64(len(targets))])
			// NB: SigV4 signs the Host the client saw (the front's).
			r.Out.Host = r.In.Host
		},
		Transport:     tr,
		FlushInterval: -1,
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	hs := &http.Server{Handler: proxy, ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(l) }()
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := hs.Shutdown(ctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		tr.CloseIdleConnections()
		return err
	}
	first := gateways[0]
	return &Server{
		Endpoint:   "http://" + l.Addr().String(),
		Operator:   first.Operator,
		Default:    first.Default,
		Remote:     true,
		defaultKey: first.defaultKey,
	}, stop, nil
}

// StartBinaryEngine runs the tenantdb executable bin as a stand-in
// engine on dataDir (o as for any binary server; admission control off
// unless o.Fairness, so that it never throttles the gateways' shared
// credential) and returns a Cluster over it without gateways: add them with
// StartBinaryGateway.
func StartBinaryEngine(t testing.TB, bin, dataDir string, o Options) *Cluster {
	t.Helper()
	engine := startBinary(t, bin, dataDir, o)
	creds := filepath.Join(t.TempDir(), "engine-credentials")
	k := engine.Default
	if err := os.WriteFile(creds, []byte("[engine]\naws_access_key_id = "+k.AccessKeyID+"\naws_secret_access_key = "+k.SecretAccessKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Cluster{Engine: engine, EngineKey: k, ServerKey: newServerKey(),
		remote: node.Remote{Endpoint: engine.Endpoint, Region: Region, TablePrefix: "gw-", CredentialsFile: creds, Profile: "engine"}}
}

// StartBinaryGateway runs the tenantdb executable bin as one more gateway
// over f's engine (`serve --backend dynamodb`, the engine's key from the
// AWS chain through AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE), on
// dataDir. Kill it with Kill; t's cleanup stops it.
func (f *Cluster) StartBinaryGateway(t testing.TB, bin, dataDir string, o Options) *Server {
	t.Helper()
	o.Env = append(o.Env, "AWS_SHARED_CREDENTIALS_FILE="+f.remote.CredentialsFile, "AWS_PROFILE="+f.remote.Profile,
		"AWS_CONFIG_FILE=/dev/null", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_EC2_METADATA_DISABLED=true",
		auth.ServerKeyEnv+"="+f.ServerKey)
	if f.Operator.Key != "" {
		op := f.Operator
		o.operator = &op
	}
	gw := startBinary(t, bin, dataDir, o, "--backend", node.BackendDynamoDB, "--backend-endpoint", f.remote.Endpoint,
		"--backend-region", f.remote.Region, "--backend-table-prefix", f.remote.TablePrefix)
	if f.Operator.Key == "" {
		f.Operator = gw.Operator
	}
	return gw
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelError}))
}
