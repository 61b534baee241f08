package fleetkey

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/tenantdb/tenantdb/internal/auth"
	"github.com/tenantdb/tenantdb/internal/keyspace"
	"github.com/tenantdb/tenantdb/internal/kv"
)

// Check makes sure a gateway starting with key can serve the engine's
// records, and returns the key it is to use. The first gateway records
// the key's check value with a conditional put; a later one must have the
// key the records are sealed under, or the old key of the rotation in
// progress (it then joins it: Start). A gateway whose server.key.next
// (dataDir, "" if none) is the key the records moved to while it was
// down mid-rotation installs it first. Errors say what the operator does:
// a key a rotation retired, a key from the environment during a
// rotation, a key no rotation knows.
func Check(ctx context.Context, st Store, key *auth.ServerKey, dataDir string, fromEnv bool) (*auth.ServerKey, error) {
	k := keyspace.System(keyspace.SysServerKeyCheck)
	var b kv.Batch
	b.SetIfAbsent(k, key.Check())
	err := st.Apply(ctx, &b)
	if err == nil {
		return key, nil
	}
	if !errors.Is(err, kv.ErrConflict) {
		return nil, err
	}
	v, err := st.Get(ctx, k)
	if err != nil {
		return nil, err
	}
	rec, err := readRec(ctx, st)
	if err != nil {
		return nil, err
	}
	if dataDir != "" && !fromEnv {
		next, err := auth.LoadNextServerKey(dataDir)
		if err != nil {
			return nil, err
		}
		switch {
		case next == nil:
		case bytes.Equal(v, next.Check()):
			// NB: the rotation ended while this gateway was down after it
			// had the new key: it is the key now.
			if err := auth.CommitServerKey(dataDir); err != nil {
				return nil, err
			}
			key = next
		case rec != nil && rec.To == checkHex(next):
			// Mid-rotation: it joins with the old key (Start).
		default:
			if err := auth.DiscardNextServerKey(dataDir); err != nil { // a rotation abandoned while it was down
				return nil, err
			}
		}
	}
	mine := checkHex(key)
	switch {
	case rec != nil && rec.From == mine && fromEnv:
		return nil, fmt.Errorf("node: a server key rotation of the fleet is in progress, and this gateway's key comes from %s, which tenantdb cannot change: start it once the rotation is over, with the new key (<data-dir>/%s of a gateway that took part, or %s set to it)", auth.ServerKeyEnv, auth.ServerKeyFile, auth.ServerKeyEnv)
	case rec != nil && rec.From == mine:
		return key, nil // joins the rotation in progress (Start)
	case bytes.Equal(v, key.Check()):
		return key, nil
	case rec != nil && rec.To == mine:
		return nil, fmt.Errorf("node: this gateway was given the new server key of a rotation still in progress (phase %s): the engine's records are not all sealed under it yet; start it with the fleet's current key, or once `tenantdb server-key` shows the rotation over", phaseNames[rec.Phase])
	}
	if at, err := st.Get(ctx, retiredKey(key.Check())); err == nil {
		return nil, fmt.Errorf("node: this gateway's server key was retired by a server key rotation of the fleet (%s): start it with the fleet's current key — <data-dir>/%s of a gateway that took part in the rotation, or %s set to it", at, auth.ServerKeyFile, auth.ServerKeyEnv)
	} else if !errors.Is(err, kv.ErrNotFound) {
		return nil, err
	}
	return nil, fmt.Errorf("node: the engine's control plane is sealed under another server key; start every gateway with the same key (%s or the same <data-dir>/%s)", auth.ServerKeyEnv, auth.ServerKeyFile)
}

func readRec(ctx context.Context, st Store) (*rotation, error) {
	r := &Rotator{o: Options{Store: st}}
	rec, _, err := r.read(ctx)
	return rec, err
}
