#!/usr/bin/env bash
# ab.sh: alternate tenantdb binaries on one workload, each repetition on a
# fresh server, and print one JSON line per run (server CPU µs/op, ops/s,
# latency, CPU of other processes). Each run: fresh data dir, the default tenant's
# quota raised, 20,000 items preloaded, WARM of unmeasured puts (so the
# memtable is full as in a long run), then MEASURE of the workload.
# With --profile, the server runs with --pprof and a 10 s CPU profile of
# the measured phase is saved beside each run (MEASURE should be >= 14s).
#
#   bench/ab.sh [--reps 3] [--warm 12s] [--measure 10s] [--workload put]
#               [--profile DIR] BIN...
#
# Wrap it in `flock /tmp/tenantdb-bench.lock` on a shared machine.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
reps=3 warm=12s measure=10s workload=put profile=""
port="${PORT_TENANTDB:-18179}"
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps="$2"; shift 2 ;;
	--warm) warm="$2"; shift 2 ;;
	--measure) measure="$2"; shift 2 ;;
	--workload) workload="$2"; shift 2 ;;
	--profile) profile="$2"; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	-*) echo "ab.sh: unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "ab.sh: give one or more tenantdb binaries" >&2; exit 2; }
tdbload="$(mktemp -d)/tdbload"
(cd "$root" && go build -o "$tdbload" ./cmd/tdbload) || exit 1
[ -z "$profile" ] || mkdir -p "$profile"

for rep in $(seq "$reps"); do
	for bin in "$@"; do
		d="$(mktemp -d)"
		extra=""
		[ -z "$profile" ] || extra="--pprof"
		"$bin" serve --addr "127.0.0.1:$port" --data-dir "$d/data" $extra >"$d/log" 2>&1 &
		spid=$!
		for _ in $(seq 100); do
			[ -f "$d/data/default-credentials" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
			sleep 0.1
		done
		creds="$d/data/default-credentials"
		tid="$(grep -o 'sk_[a-z0-9]*_[0-9a-f]\{32\}_' "$creds" | head -n 1 | cut -d_ -f3)"
		TENANTDB_ENDPOINT="http://127.0.0.1:$port" TENANTDB_CREDENTIALS="$d/data/operator-credentials" \
			"$bin" quota set --tenant "$tid" --read-units 1000000 --write-units 1000000 >/dev/null
		run() { "$tdbload" run --endpoint "http://127.0.0.1:$port" --tenants "$creds" --item-size 1024 "$@"; }
		run --create-table --preload 20000 --workload get --duration 1s --warmup 0 --concurrency 16 >/dev/null 2>&1
		run --workload put --preloaded 20000 --concurrency 64 --duration "$warm" --warmup 0 >/dev/null 2>&1
		ppid=""
		if [ -n "$profile" ]; then
			opkey="$(grep '^tenantdb_key' "$d/data/operator-credentials" | cut -d' ' -f3)"
			(sleep 3; curl -s -H "Authorization: Bearer $opkey" -o "$profile/$(basename "$bin")-$rep.cpu" \
				"http://127.0.0.1:$port/debug/pprof/profile?seconds=10") &
			ppid=$!
		fi
		run --label "$(basename "$bin")" --workload "$workload" --preloaded 20000 --concurrency 64 \
			--duration "$measure" --warmup 1s --server-pid "$spid" --json |
			jq -c --arg l "$(cut -d' ' -f1 /proc/loadavg)" '{bin: .label, ops: (.ops_per_sec|floor),
				server_us_per_op: ((.server_cpu.us_per_op*10|floor)/10), p50_us: (.latency.p50_us|floor),
				p99_us: (.latency.p99_us|floor), errors: .errors,
				other_cores: (((.machine_busy_cores - .client_cpu.cores - (.server_cpu.cores // 0))*100|floor)/100), loadavg: $l}'
		[ -z "$ppid" ] || wait "$ppid"
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		rm -rf "$d"
	done
done
