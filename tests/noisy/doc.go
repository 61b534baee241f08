// Package noisy holds issue 4's in-process noisy-neighbour benchmark: a
// victim tenant at a steady rate and an aggressor tenant driving the
// engine of a node (internal/node, assembled as `tenantdb serve` does)
// through the quota decorator directly, without HTTP or an SDK
// client, so that on a small machine the aggressor can saturate the
// server's CPU (through the network, the SDK client costs more CPU per
// request than the server does). The end-to-end variant is `tdbload noisy`
// (bench/noisy.sh, bench/noisy-matrix.sh).
package noisy
