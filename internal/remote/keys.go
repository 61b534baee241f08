package remote

// GatewayID returns this gateway's id among the fleet's heartbeat records
// ("" before it registered): what it signs its claims on shared work
// with (a tenant key rotation, a server key rotation).
func (b *Backend) GatewayID() string {
	b.fleetMu.Lock()
	defer b.fleetMu.Unlock()
	if b.fleet == nil {
		return ""
	}
	return b.fleet.id
}
