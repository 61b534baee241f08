package client

import (
	"context"
	"time"
)

// Gateway is one live gateway of a fleet over a remote engine (tenantdb
// serve --backend dynamodb), as its heartbeat record in the engine says.
type Gateway struct {
	ID       string `json:"id"`
	Endpoint string `json:"endpoint,omitempty"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid"`
	// Started is when the gateway registered, Heartbeat its last renewal
	// and Expires when its record stops counting as alive (Heartbeat +
	// the lease) unless renewed.
	Started   time.Time `json:"started"`
	Heartbeat time.Time `json:"heartbeat"`
	Expires   time.Time `json:"expires"`
	// Self marks the gateway that answered.
	Self bool `json:"self,omitempty"`
}

// GatewaysResult lists the live gateways, oldest first.
type GatewaysResult struct {
	Gateways []Gateway `json:"gateways"`
}

// Gateways lists the gateways of the fleet the server belongs to
// (GET /v1/gateways, operator only).
func (c *Client) Gateways(ctx context.Context) (GatewaysResult, error) {
	var out GatewaysResult
	return out, c.do(ctx, "GET", "/v1/gateways", c.Key, nil, &out)
}
