#!/usr/bin/env bash
# tenancy.sh: issue 3's overhead benchmark. Runs the same tdbload
# workloads against two tenantdb servers of the same binary, one as
# `serve` runs by default and one with --bench-bypass-tenancy (signatures
# trusted after a key's first request, guard checks off), alternating the
# order each repetition, and prints the medians with ratios against the
# bypassed server. The flag exists only in builds with the benchbypass
# tag: the script builds such a binary itself unless TENANTDB_BIN names
# one (go build -tags benchbypass -o /tmp/tenantdb-bench ./cmd/tenantdb).
#
#   [TENANTDB_BIN=/tmp/tenantdb-bench] bench/tenancy.sh [--duration 10s] [--reps 3]
#       [--concurrency 64] [--item-size 1024] [--workloads put,get,query]
#       [--preload 20000] [--out DIR]
#
# Output: DIR (default bench/results/tenancy-<UTC time>) with runs.jsonl,
# summary.md, tenancy.log and env.txt. Both servers are stopped on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
duration=10s reps=3 concurrency=64 item_size=1024 workloads=put,get,query preload=20000 out=""
port_full="${PORT_TENANTDB:-18113}" port_bypass="${PORT_TENANTDB_BYPASS:-18114}"
while [ $# -gt 0 ]; do
	case "$1" in
	--duration) duration="$2"; shift 2 ;;
	--reps) reps="$2"; shift 2 ;;
	--concurrency) concurrency="$2"; shift 2 ;;
	--item-size) item_size="$2"; shift 2 ;;
	--workloads) workloads="$2"; shift 2 ;;
	--preload) preload="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "tenancy.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
bin="${TENANTDB_BIN:-}"
[ -n "$out" ] || out="$here/results/tenancy-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out" "$here/.cache/bin"
log="$out/tenancy.log"
: >"$log"
say() { echo "tenancy.sh: $*" | tee -a "$log" >&2; }
die() { say "$*"; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/tdbtenancy.XXXXXX")"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "building tdbload"
(cd "$root" && go build -o "$here/.cache/bin/tdbload" ./cmd/tdbload)
tdbload="$here/.cache/bin/tdbload"
if [ -z "$bin" ]; then
	say "building tenantdb with -tags benchbypass"
	(cd "$root" && go build -tags benchbypass -o "$here/.cache/bin/tenantdb-benchbypass" ./cmd/tenantdb)
	bin="$here/.cache/bin/tenantdb-benchbypass"
fi
{ "$bin" serve --help 2>&1 || true; } | grep -q -- -bench-bypass-tenancy ||
	die "$bin has no --bench-bypass-tenancy: build it with go build -tags benchbypass"

declare -A port pid
port[tenantdb]=$port_full port[tenantdb-bypass]=$port_bypass
targets=(tenantdb tenantdb-bypass)
for t in "${targets[@]}"; do
	extra=""
	[ "$t" = tenantdb-bypass ] && extra="--bench-bypass-tenancy"
	mkdir -p "$work/$t"
	# shellcheck disable=SC2086
	"$bin" serve --addr "127.0.0.1:${port[$t]}" --data-dir "$work/$t" --log-level warn $extra >"$work/$t.log" 2>&1 &
	pid[$t]=$!; pids+=("${pid[$t]}")
	for _ in $(seq 1 300); do
		[ -f "$work/$t/default-credentials" ] && (exec 3<>"/dev/tcp/127.0.0.1/${port[$t]}") 2>/dev/null && break
		kill -0 "${pid[$t]}" 2>/dev/null || { cat "$work/$t.log" >&2; die "$t did not start"; }
		sleep 0.1
	done
	tid="$(grep -o 'sk_[a-z0-9]*_[0-9a-f]\{32\}_' "$work/$t/default-credentials" | head -n 1 | cut -d_ -f3)"
	TENANTDB_ENDPOINT="http://127.0.0.1:${port[$t]}" TENANTDB_CREDENTIALS="$work/$t/operator-credentials" \
		"$bin" quota set --tenant "$tid" --read-units 1000000 --write-units 1000000 >>"$log" 2>&1 ||
		die "$t: could not raise the bench tenant's quota"
	say "$t: pid ${pid[$t]}, preloading $preload items"
	timeout 900 "$tdbload" run --endpoint "http://127.0.0.1:${port[$t]}" --tenants "$work/$t/default-credentials" \
		--create-table --preload "$preload" --item-size "$item_size" --workload get --duration 1s --warmup 0 \
		--concurrency 16 >>"$log" 2>&1 || die "$t: setup failed (see $log)"
done

{
	echo "date: $(date -u +%FT%TZ)"
	echo "git: $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "tenantdb binary: $bin sha256 $(sha256sum "$bin" | cut -c1-16), built $(date -u -r "$bin" +%FT%TZ)"
	echo "host: $(uname -srm), $(nproc) cpus"
	echo "workloads: $workloads  reps: $reps  duration: $duration  warmup: 1s  concurrency: $concurrency  item size: $item_size  preload: $preload"
	echo "loadavg before: $(cat /proc/loadavg)"
} >"$out/env.txt"

IFS=, read -r -a workload_list <<<"$workloads"
runs="$out/runs.jsonl"
: >"$runs"
for rep in $(seq 1 "$reps"); do
	for w in "${workload_list[@]}"; do
		for i in 0 1; do
			t="${targets[$(((i + rep - 1) % 2))]}"
			say "rep $rep/$reps $w $t (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
			timeout $(( ${duration%s} + 120 )) "$tdbload" run --endpoint "http://127.0.0.1:${port[$t]}" \
				--tenants "$work/$t/default-credentials" --label "$t" --workload "$w" --preloaded "$preload" \
				--item-size "$item_size" --concurrency "$concurrency" --duration "$duration" --warmup 1s \
				--server-pid "${pid[$t]}" --json >>"$runs" 2>>"$log" || say "rep $rep $w $t: tdbload failed"
		done
	done
done
echo "loadavg after: $(cat /proc/loadavg)" >>"$out/env.txt"
{
	echo "# tenancy overhead: tenantdb vs tenantdb --bench-bypass-tenancy, medians of $reps runs"
	echo
	echo '```'
	cat "$out/env.txt"
	echo '```'
	echo
	"$tdbload" table --baseline tenantdb-bypass "$runs"
} >"$out/summary.md"
cat "$out/summary.md"
say "results in $out"
