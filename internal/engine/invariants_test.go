//go:build invariants

package engine

import "testing"

func TestInvariantCheckFires(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("checkInNamespace accepted a key outside the namespace")
		}
	}()
	checkInNamespace([]byte("t\x01ns"), []byte("t\x02ns-other-tenant"))
}
