// Package loadgen drives DynamoDB load the way an application would, through
// aws-sdk-go-v2, and measures it: throughput, latency quantiles from a
// bounded-memory histogram, errors by DynamoDB error code, throttles, and the
// CPU time the server process spent per request. It knows nothing about
// tenantdb's internals, so the same runs compare tenantdb with dynalite and
// with a no-op server. It also runs issue 4's noisy-neighbour phases and
// renders comparison tables.
//
// Items follow one key layout (see keyOf): item n has partition key
// p<n/20> and sort key s<n%20>, so Preload(n) makes n/20 collections of 20
// items, "get" reads a random preloaded item, "query" reads one whole
// collection, and the write workloads overwrite items of the same layout.
//
// The package does not import net/http: the caller builds the clients (see
// cmd/tdbload).
package loadgen
