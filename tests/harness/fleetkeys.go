package harness

import (
	"sync"
	"testing"
)

// StartGatewayOwn starts one more in-process gateway of the fleet on
// dataDir with serverKey ("": the key in <dataDir>/server.key, as
// `tenantdb serve` reads it without TENANTDB_SERVER_KEY) and g's
// options. It returns node.Open's error instead of failing t, and a stop
// function (also called by t's cleanup; only the first call acts) that
// closes the gateway as `kill -TERM` would, so that a test can take a
// gateway away mid-work.
func (f *Cluster) StartGatewayOwn(t testing.TB, dataDir, serverKey string, g GatewayOptions) (*Server, func(), error) {
	t.Helper()
	remote := f.remote
	remote.DeletionSweep, remote.JobSweep = g.DeletionSweep, g.JobSweep
	o := f.opts
	o.gateway, o.serverKey, o.dataDir = &remote, serverKey, dataDir
	gw, stop, err := StartInProcess(o)
	if err != nil {
		return nil, nil, err
	}
	if f.Operator.Key == "" {
		f.Operator, f.Default = gw.Operator, gw.Default
	}
	if gw.Operator.Key == "" {
		gw.Operator, gw.Default = f.Operator, f.Default
	}
	f.Gateways = append(f.Gateways, gw)
	var once sync.Once
	stopOnce := func() {
		once.Do(func() {
			if err := stop(); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
	t.Cleanup(stopOnce)
	return gw, stopOnce, nil
}

// StartBinaryGatewayKeyFile is StartBinaryGateway for a gateway that
// reads its server key from <dataDir>/server.key (no
// TENANTDB_SERVER_KEY): the caller writes the file first.
func (f *Cluster) StartBinaryGatewayKeyFile(t testing.TB, bin, dataDir string, o Options) *Server {
	t.Helper()
	g := *f
	g.ServerKey = ""
	gw := g.StartBinaryGateway(t, bin, dataDir, o)
	if f.Operator.Key == "" {
		f.Operator = g.Operator
	}
	return gw
}
