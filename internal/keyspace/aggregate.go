package keyspace

import "bytes"

// Keys of aggregates (package aggregate), inside the namespace of the
// tenant environment that owns them:
//
//	<ns> g <name> 0x00 d                    the definition
//	<ns> g <name> 0x00 p                    consumer cursor and state
//	<ns> g <name> 0x00 g <type:1> <value>   one group's count and sums
//	s agg/ <ns> <name>                      ns holds the aggregate (to start its worker)
//	s aggf/ <name>                          an operator's aggregate for every tenant of a shared table

// Aggregate returns the prefix of everything of aggregate name in ns.
func Aggregate(ns []byte, name string) []byte {
	b := append(append(clone(ns), nsAgg), name...)
	return append(b, aggSep)
}

// AggregateRange returns the range of everything of aggregate name in ns.
func AggregateRange(ns []byte, name string) (lo, hi []byte) {
	return prefixRange(Aggregate(ns, name))
}

// Aggregates returns the range of all aggregates of namespace ns.
func Aggregates(ns []byte) (lo, hi []byte) { return prefixRange(append(clone(ns), nsAgg)) }

// AggregateName returns the name of the aggregate a key of Aggregates(ns)
// belongs to.
func AggregateName(ns, key []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(key, append(clone(ns), nsAgg))
	if !ok {
		return "", false
	}
	name, _, ok := bytes.Cut(rest, []byte{aggSep})
	return string(name), ok
}

// AggregateDefinition returns the key of an aggregate's definition.
func AggregateDefinition(ns []byte, name string) []byte {
	return append(Aggregate(ns, name), aggDefinition)
}

// AggregateProgress returns the key of an aggregate's cursor and state.
func AggregateProgress(ns []byte, name string) []byte {
	return append(Aggregate(ns, name), aggProgress)
}

// AggregateGroup returns the key of one group of an aggregate; group is
// the group value's type byte followed by its text.
func AggregateGroup(ns []byte, name string, group []byte) []byte {
	return append(append(Aggregate(ns, name), aggGroup), group...)
}

// AggregateGroups returns the range of an aggregate's groups.
func AggregateGroups(ns []byte, name string) (lo, hi []byte) {
	return prefixRange(append(Aggregate(ns, name), aggGroup))
}

// AggregateRegistry returns the key saying that ns holds aggregate name.
func AggregateRegistry(ns []byte, name string) []byte {
	return append(append(System(SysAggregates), ns...), name...)
}

// AggregateRegistryRange returns the range of all aggregate registry
// entries.
func AggregateRegistryRange() (lo, hi []byte) { return prefixRange(System(SysAggregates)) }

// SplitAggregateRegistry splits a registry key into the namespace and the
// aggregate's name.
func SplitAggregateRegistry(key []byte) (ns []byte, name string, ok bool) {
	rest, ok := bytes.CutPrefix(key, System(SysAggregates))
	if !ok || len(rest) < 1+16+1 || rest[0] != tenantPrefix || rest[17] != subNamespace {
		return nil, "", false
	}
	i := bytes.IndexByte(rest[18:], envSep)
	if i < 0 {
		return nil, "", false
	}
	end := 18 + i + 1
	return clone(rest[:end]), string(rest[end:]), true
}

// AggregateFleet returns the key of an aggregate the operator defined for
// every tenant of a shared table.
func AggregateFleet(name string) []byte { return append(System(SysAggFleet), name...) }

// AggregateFleetRange returns the range of all such definitions.
func AggregateFleetRange() (lo, hi []byte) { return prefixRange(System(SysAggFleet)) }
