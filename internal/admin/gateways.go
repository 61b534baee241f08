package admin

import (
	"context"
	"net/http"

	"github.com/tenantdb/tenantdb/client"
	"github.com/tenantdb/tenantdb/internal/apierr"
)

// Fleet lists the gateways over a remote engine (internal/remote).
type Fleet interface {
	Gateways(ctx context.Context) ([]client.Gateway, error)
}

// ServeGateways adds GET /v1/gateways (operator only): the live gateways
// of the fleet this server belongs to (client.GatewaysResult). With a nil
// x (the embedded engine, a single server) it answers a
// ValidationException saying so.
func (h *Handler) ServeGateways(x Fleet) {
	h.handle("GET /v1/gateways", operatorOnly, func(c *call) error {
		if x == nil {
			return apierr.Validationf("gateways are listed on a server that is a gateway over a remote engine (tenantdb serve --backend dynamodb)")
		}
		gws, err := x.Gateways(c.ctx)
		if err != nil {
			return err
		}
		if gws == nil {
			gws = []client.Gateway{}
		}
		return WriteJSON(c.w, http.StatusOK, client.GatewaysResult{Gateways: gws})
	})
}
