#!/usr/bin/env bash
# compare.sh: run the same tdbload workloads, same client, same concurrency,
# against (a) the no-op server, (b) dynalite and (c) tenantdb (when given),
# alternating targets, and print a markdown table of medians. The target
# floor (not run by default) is `tdbload noop --storage`: the no-op plus
# tenantdb's storage package doing what a put must (read the old item, write
# the new one with a synced WAL), and nothing else; the least any server
# that stores items durably in that store spends per request.
#
#   bench/compare.sh [--duration 10s] [--reps 3] [--concurrency 64] [--item-size 1024]
#                    [--workloads put,get,query,batchwrite,transact,mixed] [--preload 20000]
#                    [--targets noop,dynalite,tenantdb,floor] [--out DIR]
#                    [--tenantdb-cmd 'CMD'] [--tenantdb-credentials FILE|ID:SECRET]
#                    [--tenantdb-units 1000000]
#
# tenantdb is started with --tenantdb-cmd (run by bash with $PORT and
# $DATA_DIR set; `exec` is prepended so its pid is the server's) or, if
# TENANTDB_BIN is set, as "$TENANTDB_BIN serve --addr 127.0.0.1:$PORT
# --data-dir $DATA_DIR" on a fresh data dir. Without --tenantdb-credentials
# (a file, in any form tdbload --tenants reads, or ID:SECRET) the script uses
# the admin key serve writes to $DATA_DIR/default-credentials, or else
# creates a tenant and an admin key with "$TENANTDB_BIN tenant create / key
# create" and the operator credentials; the table is then the tenant's own.
# Without --tenantdb-cmd or TENANTDB_BIN, tenantdb is skipped. This measures
# throughput, not quotas: with TENANTDB_BIN the bench tenant's read and write
# quota is raised to --tenantdb-units (0: keep the server's defaults).
#
# Output: DIR (default bench/results/<UTC time>) holds runs.jsonl (one
# `tdbload --json` result per run), summary.md (the table), compare.log and
# env.txt. Every server this script starts is stopped on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cache="$here/.cache"

duration=10s
reps=3
concurrency=64
item_size=1024
workloads=put,get,query,batchwrite,transact,mixed
preload=20000
targets=""
out=""
tenantdb_cmd="${TENANTDB_CMD:-}"
tenantdb_creds="${TENANTDB_BENCH_CREDENTIALS:-}"
tenantdb_units=1000000
port_noop="${PORT_NOOP:-18101}"
port_dynalite="${PORT_DYNALITE:-18102}"
port_tenantdb="${PORT_TENANTDB:-18103}"
port_floor="${PORT_FLOOR:-18104}"

while [ $# -gt 0 ]; do
	case "$1" in
	--duration) duration="$2"; shift 2 ;;
	--reps) reps="$2"; shift 2 ;;
	--concurrency) concurrency="$2"; shift 2 ;;
	--item-size) item_size="$2"; shift 2 ;;
	--workloads) workloads="$2"; shift 2 ;;
	--preload) preload="$2"; shift 2 ;;
	--targets) targets="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	--tenantdb-cmd) tenantdb_cmd="$2"; shift 2 ;;
	--tenantdb-credentials) tenantdb_creds="$2"; shift 2 ;;
	--tenantdb-units) tenantdb_units="$2"; shift 2 ;;
	-h|--help) sed -n '2,25p' "$0"; exit 0 ;;
	*) echo "compare.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

if [ -z "$tenantdb_cmd" ] && [ -n "${TENANTDB_BIN:-}" ]; then
	tenantdb_cmd="$TENANTDB_BIN serve --addr 127.0.0.1:\$PORT --data-dir \$DATA_DIR"
fi
if [ -z "$targets" ]; then
	targets=noop,dynalite
	[ -n "$tenantdb_cmd" ] && targets=noop,dynalite,tenantdb
fi
[ -n "$out" ] || out="$here/results/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out" "$cache/bin"
log="$out/compare.log"
: >"$log"
say() { echo "compare.sh: $*" | tee -a "$log" >&2; }
die() { say "$*"; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/tdbcompare.XXXXXX")"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_port() { # port pid
	for _ in $(seq 1 300); do
		kill -0 "$2" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

say "building tdbload"
(cd "$root" && go build -o "$cache/bin/tdbload" ./cmd/tdbload)
tdbload="$cache/bin/tdbload"

declare -A endpoint pid cred_args
IFS=, read -r -a target_list <<<"$targets"
for t in "${target_list[@]}"; do
	case "$t" in
	noop)
		"$tdbload" noop --addr "127.0.0.1:$port_noop" --item-size "$item_size" >>"$log" 2>&1 &
		p=$!; pids+=("$p")
		wait_port "$port_noop" "$p" || die "the no-op server did not start on port $port_noop"
		endpoint[noop]="http://127.0.0.1:$port_noop"; pid[noop]=$p; cred_args[noop]=""
		;;
	floor)
		# the storage floor: the no-op plus tenantdb's store doing a put's read and synced write
		"$tdbload" noop --addr "127.0.0.1:$port_floor" --item-size "$item_size" --storage "$work/floor-data" >>"$log" 2>&1 &
		p=$!; pids+=("$p")
		wait_port "$port_floor" "$p" || die "the storage floor did not start on port $port_floor"
		endpoint[floor]="http://127.0.0.1:$port_floor"; pid[floor]=$p; cred_args[floor]=""
		;;
	dynalite)
		p="$("$here/dynalite.sh" --port "$port_dynalite" --path "$work/dynalite-data" --log "$work/dynalite.log" 2>>"$log")" ||
			die "dynalite did not start (see $log)"
		pids+=("$p")
		endpoint[dynalite]="http://127.0.0.1:$port_dynalite"; pid[dynalite]=$p; cred_args[dynalite]=""
		;;
	tenantdb)
		[ -n "$tenantdb_cmd" ] || die "target tenantdb needs --tenantdb-cmd or TENANTDB_BIN"
		mkdir -p "$work/tenantdb-data"
		PORT="$port_tenantdb" DATA_DIR="$work/tenantdb-data" bash -c "exec $tenantdb_cmd" >"$work/tenantdb.log" 2>&1 &
		p=$!; pids+=("$p")
		wait_port "$port_tenantdb" "$p" || { tail -n 20 "$work/tenantdb.log" >&2; die "tenantdb did not start on port $port_tenantdb"; }
		endpoint[tenantdb]="http://127.0.0.1:$port_tenantdb"; pid[tenantdb]=$p
		for _ in $(seq 1 50); do
			[ -n "$tenantdb_creds" ] || [ -f "$work/tenantdb-data/default-credentials" ] && break
			sleep 0.1
		done
		if [ -z "$tenantdb_creds" ] && [ -f "$work/tenantdb-data/default-credentials" ]; then
			# serve --default-tenant writes an admin key of tenant "default" there.
			tenantdb_creds="$work/tenantdb-data/default-credentials"
		fi
		if [ -z "$tenantdb_creds" ]; then
			[ -n "${TENANTDB_BIN:-}" ] || die "tenantdb: give --tenantdb-credentials, or TENANTDB_BIN to create a tenant"
			opcreds="$work/tenantdb-data/operator-credentials"
			export TENANTDB_ENDPOINT="${endpoint[tenantdb]}" TENANTDB_CREDENTIALS="$opcreds"
			tid="$("$TENANTDB_BIN" tenant create --json bench | jq -r .id)" ||
				die "tenantdb: 'tenant create' failed"
			"$TENANTDB_BIN" key create --tenant "$tid" --role admin --json >"$work/tenantdb-creds.json" ||
				die "tenantdb: 'key create' failed"
			unset TENANTDB_ENDPOINT TENANTDB_CREDENTIALS
			tenantdb_creds="$work/tenantdb-creds.json"
		fi
		if [ -f "$tenantdb_creds" ]; then cred_args[tenantdb]="--tenants $tenantdb_creds"; else cred_args[tenantdb]="--credentials $tenantdb_creds"; fi
		tenantdb_quota="server default"
		if [ -n "${TENANTDB_BIN:-}" ] && [ "$tenantdb_units" != 0 ]; then
			# The tenant id is the 32 hex digits inside the key id sk_<env>_<id>_<random>.
			tid="$( (cat "$tenantdb_creds" 2>/dev/null || echo "$tenantdb_creds") | grep -o 'sk_[a-z0-9]*_[0-9a-f]\{32\}_' | head -n 1 | cut -d_ -f3)"
			if [ -n "$tid" ] && TENANTDB_ENDPOINT="${endpoint[tenantdb]}" TENANTDB_CREDENTIALS="$work/tenantdb-data/operator-credentials" \
				"$TENANTDB_BIN" quota set --tenant "$tid" --read-units "$tenantdb_units" --write-units "$tenantdb_units" >>"$log" 2>&1; then
				tenantdb_quota="$tenantdb_units RCU/WCU"
			else
				say "tenantdb: could not raise the bench tenant's quota; throttles will show in the errors column"
			fi
		fi
		;;
	*) die "unknown target $t (want noop, floor, dynalite or tenantdb)" ;;
	esac
	say "$t: ${endpoint[$t]} pid ${pid[$t]}"
done

{
	echo "date: $(date -u +%FT%TZ)"
	echo "git: $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "host: $(uname -srm), $(nproc) cpus, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
	echo "go: $(go version | cut -d' ' -f3)  node: $(node --version 2>/dev/null || echo none)"
	echo "dynalite: $(node -p 'require(process.argv[1]).version' "$cache/dynalite/node_modules/dynalite/package.json" 2>/dev/null || echo none)"
	echo "targets: $targets"
	echo "tenantdb cmd: ${tenantdb_cmd:-none}  bench tenant quota: ${tenantdb_quota:-n/a}"
	[ -z "${TENANTDB_BIN:-}" ] || echo "tenantdb binary: sha256 $(sha256sum "$TENANTDB_BIN" | cut -c1-16), built $(date -u -r "$TENANTDB_BIN" +%FT%TZ)"
	echo "workloads: $workloads  reps: $reps  duration: $duration  warmup: 1s  concurrency: $concurrency  item size: $item_size  preload: $preload"
	echo "loadavg before: $(cat /proc/loadavg)"
} >"$out/env.txt"

timeout_s=$(( $(echo "$duration" | sed 's/[^0-9].*//') + 120 ))
for t in "${target_list[@]}"; do
	say "$t: creating table and preloading $preload items"
	# shellcheck disable=SC2086
	timeout 900 "$tdbload" run --endpoint "${endpoint[$t]}" ${cred_args[$t]} --create-table --preload "$preload" \
		--item-size "$item_size" --workload get --duration 1s --warmup 0 --concurrency 16 >>"$log" 2>&1 ||
		die "$t: setup failed (see $log)"
done

IFS=, read -r -a workload_list <<<"$workloads"
runs="$out/runs.jsonl"
: >"$runs"
n=${#target_list[@]}
for rep in $(seq 1 "$reps"); do
	for w in "${workload_list[@]}"; do
		for i in $(seq 0 $((n - 1))); do
			# Rotate the target order each repetition so no target always runs first.
			t="${target_list[$(((i + rep - 1) % n))]}"
			say "rep $rep/$reps $w $t (loadavg $(cut -d' ' -f1-3 /proc/loadavg))"
			# shellcheck disable=SC2086
			if ! timeout "$timeout_s" "$tdbload" run --endpoint "${endpoint[$t]}" ${cred_args[$t]} --label "$t" \
				--workload "$w" --preloaded "$preload" --item-size "$item_size" --concurrency "$concurrency" \
				--duration "$duration" --warmup 1s --server-pid "${pid[$t]}" --json >>"$runs" 2>>"$log"; then
				say "rep $rep $w $t: tdbload failed (see $log)"
			fi
			tail -n 1 "$runs" | jq -r '"  \(.ops_per_sec|floor) ops/s  p50 \(.latency.p50_us|floor)µs  p99 \(.latency.p99_us|floor)µs  server \(.server_cpu.us_per_op // 0|floor)µs/op  errors \(.errors)  other cores \((.machine_busy_cores - .client_cpu.cores - (.server_cpu.cores // 0))*100|floor/100)"' 2>/dev/null | tee -a "$log" >&2 || true
		done
	done
done
echo "loadavg after: $(cat /proc/loadavg)" >>"$out/env.txt"

baselines=""
for b in noop dynalite; do
	[[ ",$targets," == *",$b,"* ]] && baselines="$baselines,$b"
done
{
	echo "# tdbload comparison, medians of $reps runs"
	echo
	echo '```'
	cat "$out/env.txt"
	echo '```'
	echo
	"$tdbload" table --baseline "${baselines#,}" "$runs"
} >"$out/summary.md"
cat "$out/summary.md"
say "results in $out"
