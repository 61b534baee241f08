package tenantkey

import "sync/atomic"

// atomicState holds a Key's state; it is replaced whole, never changed.
type atomicState struct{ p atomic.Pointer[keyState] }

func (a *atomicState) Load() *keyState    { return a.p.Load() }
func (a *atomicState) Store(st *keyState) { a.p.Store(st) }
