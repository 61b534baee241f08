package remote

import "github.com/tenantdb/tenantdb/internal/changelog"

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

// SetStreamSecret replaces the secret tenants' shard iterators are sealed
// with (Options.StreamSecret) by the fleet's, which the engine keeps
// across server key rotations (package fleetkey), so that an iterator
// one gateway hands out opens on every other, whatever key each started
// with. NB: call it before the gateway serves.
func (b *Backend) SetStreamSecret(secret []byte) error {
	if b.st.tokens == nil {
		return nil // no Streams: nothing to seal
	}
	l, err := changelog.New(nil, changelog.Options{Secret: secret, Now: b.opts.Now})
	if err != nil {
		return err
	}
	b.st.tokens = l
	return nil
}
