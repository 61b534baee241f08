#!/usr/bin/env bash
# noisy.sh: issue 4's noisy-neighbour benchmark against a fresh tenantdb,
# with fairness on and off, using `tdbload noisy`.
#
#   TENANTDB_BIN=/tmp/tenantdb bench/noisy.sh [--fairness both|true|false]
#       [--phase-duration 10s] [--victim-rate 200] [--aggressor-quota 100] [--out DIR]
#
# The victim is the tenant "default" that `serve` creates (admin key in
# <data-dir>/default-credentials) running get/put at a steady rate; the
# aggressor is a second tenant with an admin key (each tenant creates its own table). Before phase 2 the
# aggressor's quota is set to --aggressor-quota WCU/RCU with 1 s of burst,
# and it sends 10x that (1 KB puts: 1 WCU each) on 128 connections; before
# phase 3 its quota is raised out of reach and it sends as fast as it can.
# Output: DIR (default bench/results/noisy-<UTC time>) with one text and one
# JSON file per fairness setting.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
fairness=both
phase_duration=10s
victim_rate=200
quota=100
out=""
port="${PORT_TENANTDB:-18104}"
while [ $# -gt 0 ]; do
	case "$1" in
	--fairness) fairness="$2"; shift 2 ;;
	--phase-duration) phase_duration="$2"; shift 2 ;;
	--victim-rate) victim_rate="$2"; shift 2 ;;
	--aggressor-quota) quota="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	-h|--help) sed -n '2,17p' "$0"; exit 0 ;;
	*) echo "noisy.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "${TENANTDB_BIN:-}" ] || { echo "noisy.sh: set TENANTDB_BIN to a tenantdb binary" >&2; exit 2; }
[ "$fairness" = both ] && fairness="true false"
[ -n "$out" ] || out="$here/results/noisy-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out" "$here/.cache/bin"
(cd "$root" && go build -o "$here/.cache/bin/tdbload" ./cmd/tdbload)
tdbload="$here/.cache/bin/tdbload"

work="$(mktemp -d "${TMPDIR:-/tmp}/tdbnoisy.XXXXXX")"
srv=""
cleanup() {
	[ -z "$srv" ] || { kill "$srv" 2>/dev/null || true; wait "$srv" 2>/dev/null || true; }
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for f in $fairness; do
	data="$work/data-$f"
	"$TENANTDB_BIN" serve --addr "127.0.0.1:$port" --data-dir "$data" --fairness="$f" >"$out/server-fairness-$f.log" 2>&1 &
	srv=$!
	for _ in $(seq 1 100); do
		[ -f "$data/default-credentials" ] && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
		kill -0 "$srv" 2>/dev/null || { tail "$out/server-fairness-$f.log" >&2; exit 1; }
		sleep 0.1
	done
	export TENANTDB_ENDPOINT="http://127.0.0.1:$port" TENANTDB_CREDENTIALS="$data/operator-credentials"
	victim_id="$(grep -o 'sk_[a-z0-9]*_[0-9a-f]\{32\}_' "$data/default-credentials" | head -n 1 | cut -d_ -f3)"
	agg_id="$("$TENANTDB_BIN" tenant create --json noisy-aggressor | jq -r .id)"
	"$TENANTDB_BIN" key create --tenant "$agg_id" --role admin --json >"$work/aggressor.json"
	"$TENANTDB_BIN" quota set --tenant "$victim_id" --read-units 1000000 --write-units 1000000 >/dev/null
	cat >"$work/hook.sh" <<HOOK
case "\$TDBLOAD_PHASE" in
2) "$TENANTDB_BIN" quota set --tenant "$agg_id" --read-units "$quota" --write-units "$quota" --burst-seconds 1 >/dev/null ;;
3) "$TENANTDB_BIN" quota set --tenant "$agg_id" --read-units 1000000 --write-units 1000000 >/dev/null ;;
esac
HOOK
	common=(--endpoint "$TENANTDB_ENDPOINT" --victim "@$data/default-credentials" --aggressor "@$work/aggressor.json"
		--create-table --preload 2000 --victim-rate "$victim_rate" --aggressor-quota "$quota" --phase3-rate -1
		--phase-duration "$phase_duration" --phase-hook "sh $work/hook.sh" --server-pid "$srv")
	echo "noisy.sh: fairness=$f" >&2
	{
		echo "fairness=$f  victim: get/put 50/50 at $victim_rate/s on 8 conns; aggressor: 1 KB puts on 128 conns, quota $quota/s"
		"$tdbload" noisy "${common[@]}" --json-out "$out/fairness-$f.json"
	} >"$out/fairness-$f.txt"
	kill "$srv"; wait "$srv" 2>/dev/null || true; srv=""
	unset TENANTDB_ENDPOINT TENANTDB_CREDENTIALS
done
cat "$out"/fairness-*.txt
echo "noisy.sh: results in $out" >&2
