package server

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"sync/atomic"
)

// idGen issues request ids: a random per-process prefix and a counter,
// base32-encoded to 26 upper-case characters, unique across restarts
// without coordination.
type idGen struct {
	prefix [8]byte
	n      atomic.Uint64
}

func (g *idGen) init() {
	if _, err := rand.Read(g.prefix[:]); err != nil {
		panic("server: no randomness: " + err.Error())
	}
}

var idEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

func (g *idGen) next() string {
	var raw [16]byte
	copy(raw[:8], g.prefix[:])
	binary.BigEndian.PutUint64(raw[8:], g.n.Add(1))
	var out [26]byte
	idEncoding.Encode(out[:], raw[:])
	return string(out[:])
}
