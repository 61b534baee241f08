#!/usr/bin/env bash
# faults.sh: what a server costs the kernel per request. Starts BIN (a
# tenantdb binary, or "noop" for tdbload's no-op server) on a fresh data
# dir, preloads 20,000 1 KB items, runs WARM of unmeasured puts, then
# measures 10 s of WORKLOAD at c=64 and prints, per request: server CPU
# (user and system), minor page faults, syscalls by kind (perf stat
# tracepoints), and the peak resident set size.
#
#   bench/faults.sh [--warm 12s] [--perf-record FILE] BIN|noop WORKLOAD [serve flags...]
#
# --perf-record also records the page faults' call graphs (perf report -i
# FILE --no-children). Needs perf with tracepoints (linux-perf); wrap it in
# `flock /tmp/tenantdb-bench.lock` on a shared machine.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
warm=12s record=""
port="${PORT_TENANTDB:-18291}"
while [ $# -gt 0 ]; do
	case "$1" in
	--warm) warm="$2"; shift 2 ;;
	--perf-record) record="$2"; shift 2 ;;
	-h|--help) sed -n '2,13p' "$0"; exit 0 ;;
	-*) echo "faults.sh: unknown flag $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
[ $# -ge 2 ] || { echo "faults.sh: give BIN|noop and WORKLOAD" >&2; exit 2; }
bin="$1" wl="$2"; shift 2
command -v perf >/dev/null || { echo "faults.sh: needs perf" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
tdbload="$tmp/tdbload"
(cd "$root" && go build -o "$tdbload" ./cmd/tdbload) || exit 1

d="$tmp/run"
mkdir -p "$d/data"
if [ "$bin" = noop ]; then
	"$tdbload" noop --addr "127.0.0.1:$port" >"$d/log" 2>&1 &
	spid=$!
	cred=(--credentials AKIDEXAMPLE:secret)
	ready() { (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
else
	"$bin" serve --addr "127.0.0.1:$port" --data-dir "$d/data" "$@" >"$d/log" 2>&1 &
	spid=$!
	cred=(--tenants "$d/data/default-credentials")
	ready() { [ -f "$d/data/default-credentials" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; }
fi
trap 'kill $spid 2>/dev/null; wait $spid 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do ready && break; sleep 0.1; done
if [ "$bin" != noop ]; then
	tid="$(grep -o 'sk_[a-z0-9]*_[0-9a-f]\{32\}_' "$d/data/default-credentials" | head -n 1 | cut -d_ -f3)"
	TENANTDB_ENDPOINT="http://127.0.0.1:$port" TENANTDB_CREDENTIALS="$d/data/operator-credentials" \
		"$bin" quota set --tenant "$tid" --read-units 1000000 --write-units 1000000 >/dev/null
fi
run() { "$tdbload" run --endpoint "http://127.0.0.1:$port" "${cred[@]}" --item-size 1024 "$@"; }
run --create-table --preload 20000 --workload get --duration 1s --warmup 0 --concurrency 16 >/dev/null 2>&1
run --workload put --preloaded 20000 --concurrency 64 --duration "$warm" --warmup 0 >/dev/null 2>&1

events=raw_syscalls:sys_enter,page-faults,context-switches
for s in read write futex epoll_pwait nanosleep fdatasync pread64 pwrite64 madvise mmap munmap; do
	events="$events,syscalls:sys_enter_$s"
done
stat0="$(cut -d' ' -f14,15 "/proc/$spid/stat")"
if [ -n "$record" ]; then
	perf record -q -e page-faults -c 1 -g -o "$record" -p "$spid" -- sleep 10 2>/dev/null &
fi
perf stat -x, -o "$d/perf" -e "$events" -p "$spid" -- sleep 10 2>/dev/null &
perfpid=$!
run --workload "$wl" --preloaded 20000 --concurrency 64 --duration 10s --warmup 0 --server-pid "$spid" --json >"$d/out.json"
wait "$perfpid"
[ -z "$record" ] || wait
stat1="$(cut -d' ' -f14,15 "/proc/$spid/stat")"
n="$(jq '.ops_per_sec*10|floor' "$d/out.json")"
hz="$(getconf CLK_TCK)"
read -r u0 s0 <<<"$stat0"
read -r u1 s1 <<<"$stat1"
echo "$(basename "$bin") $wl: $((n / 10)) ops/s, server CPU $(jq '.server_cpu.us_per_op|floor' "$d/out.json") us/op" \
	"(user $(((u1 - u0) * 1000000 / hz / n)), system $(((s1 - s0) * 1000000 / hz / n))), peak RSS $(awk '/VmHWM/{print $2}' "/proc/$spid/status") kB," \
	"load $(cut -d' ' -f1 /proc/loadavg)"
awk -F, -v n="$n" 'NF > 2 && $1 + 0 > 0 { printf "  %-32s %8.3f per request\n", $3, $1 / n }' "$d/perf"
