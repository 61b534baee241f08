package harness

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
	"time"
)

// GatewayOptions are the options of one more in-process gateway of a
// fleet that differ from the fleet's (StartGatewayWith).
type GatewayOptions struct {
	// Front, if set, sees every request the gateway sends the engine:
	// the gateway's engine requests pass through Front(engine), which
	// must forward a request to engine to have it served (unchanged: the
	// gateway's SigV4 signature names the front's Host, which the proxy
	// keeps). A test delays or holds there what one gateway sends the
	// engine (a slow network, a gateway stalled mid-request) while the
	// others reach it directly.
	Front func(engine http.Handler) http.Handler
	// DeletionSweep is how often the gateway finishes tenant deletions
	// left unfinished (node.Remote.DeletionSweep; 0: its default).
	DeletionSweep time.Duration
	// JobSweep is how often the gateway runs background jobs another
	// gateway left stalled (node.Remote.JobSweep; 0: its default).
	JobSweep time.Duration
	// PITRWait is how long the gateway's RestoreTableToPointInTime waits
	// before it answers the table CREATING (node.Remote.PITRWait; 0: its
	// default).
	PITRWait time.Duration
}

// StartGatewayThrough is StartGatewayWith with a Front.
func (f *Cluster) StartGatewayThrough(t testing.TB, dataDir string, front func(engine http.Handler) http.Handler) *Server {
	t.Helper()
	return f.StartGatewayWith(t, dataDir, GatewayOptions{Front: front})
}

// StartGatewayWith starts one more in-process gateway of the fleet on
// dataDir with go's options; t's cleanup stops it.
func (f *Cluster) StartGatewayWith(t testing.TB, dataDir string, g GatewayOptions) *Server {
	t.Helper()
	remote := f.remote
	remote.DeletionSweep, remote.JobSweep, remote.PITRWait = g.DeletionSweep, g.JobSweep, g.PITRWait
	if g.Front != nil {
		u, err := url.Parse(f.remote.Endpoint)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(g.Front(httputil.NewSingleHostReverseProxy(u)))
		t.Cleanup(func() {
			srv.CloseClientConnections()
			srv.Close()
		})
		remote.Endpoint = srv.URL
	}
	o := f.opts
	o.gateway, o.serverKey, o.dataDir = &remote, f.ServerKey, dataDir
	gw, stop, err := StartInProcess(o)
	if err != nil {
		t.Fatal(err)
	}
	if gw.Operator.Key == "" {
		gw.Operator, gw.Default = f.Operator, f.Default
	}
	f.Gateways = append(f.Gateways, gw)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return gw
}
