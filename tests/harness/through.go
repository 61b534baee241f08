package harness

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// StartGatewayThrough starts one more in-process gateway of the fleet on
// dataDir whose engine requests pass through front(engine) on their way
// to the fleet's engine: a test sees, delays or holds what one gateway
// sends the engine (a slow network, a gateway stalled mid-request) while
// the others reach it directly. front must forward a request to engine to
// have it served (unchanged: the gateway's SigV4 signature names the
// front's Host, which the proxy keeps). t's cleanup stops both.
func (f *Cluster) StartGatewayThrough(t testing.TB, dataDir string, front func(engine http.Handler) http.Handler) *Server {
	t.Helper()
	u, err := url.Parse(f.remote.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(front(httputil.NewSingleHostReverseProxy(u)))
	remote := f.remote
	remote.Endpoint = srv.URL
	o := f.opts
	o.gateway, o.serverKey, o.dataDir = &remote, f.ServerKey, dataDir
	gw, stop, err := StartInProcess(o)
	if err != nil {
		srv.Close()
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
		srv.CloseClientConnections()
		srv.Close()
	})
	return gw
}
