#!/usr/bin/env bash
# noisy-matrix.sh: issue 4's noisy-neighbour benchmark, repeated: for each
# repetition and fairness setting (on, then off) it starts tenantdb on a fresh data directory, creates a
# victim and an aggressor tenant, and runs `tdbload noisy`:
#
#   phase 1  the victim alone (steady get/put at --victim-rate)
#   phase 2  + the aggressor at --overload x its quota, --aggressor-concurrency connections
#   phase 3  + the aggressor within its quota (raised to --phase3-quota) but unbounded
#
# The phase hook sets the aggressor's quota with `tenantdb quota set` before
# each phase: phase 2 --aggressor-quota write/read units with a 1 s burst (so
# that burst credit earned while idle does not hide the overload), phase 3
# --phase3-quota units.
#
# With --split the victim and the aggressor run as two tdbload processes, the
# aggressor's at nice 19: on this 2-core machine the clients use more CPU
# than the server, and in one process the aggressor's 128 client goroutines
# delay the victim's client itself. --split approximates an aggressor whose
# client runs on other machines (its requests still reach the server as fast
# as the CPU it gets allows). --flood (implies --split) makes the phase 3
# aggressor tests/noisy/flood, which replays pre-signed GetItems for a few
# microseconds of client CPU each and so can saturate the server, which an
# SDK client on this machine cannot. --aggressor-cpus LIST (implies
# --split) also pins the aggressor's client to those CPUs (taskset -c), so
# that on a 2-core machine it cannot take the victim's client's or the
# server's core: closer still to an aggressor on other machines.
# --fairness takes a list of true (fairness on), false (off) and separate:
# the control, in which the aggressor's load goes to a second tenantdb
# process of its own on the same machine (needs --split). It measures what
# the machine alone does to the victim: the clients' and a second server's
# CPU, with no shared server. bench/noisy.sh is the single run of tdbload
# noisy. SERVER_GOMAXPROCS in the environment sets the servers' GOMAXPROCS
# (not the clients').
#
#   bench/noisy-matrix.sh [--split] [--reps 3] [--phase-duration 10s] [--fairness "true false separate"]
#                  [--aggressor-quota 100] [--overload 10] [--aggressor-concurrency 128]
#                  [--victim-rate 200] [--victim-concurrency 8] [--phase3-quota 1000000]
#                  [--phase3-workload get] [--aggressor-cpus LIST] [--out DIR]
#                  [-- extra tenantdb serve flags]
#
# Writes DIR/{fairness-<on|off|separate>-<rep>.txt,.json}, DIR/summary.md (medians)
# and DIR/env.txt, and prints the tables. DIR defaults to
# bench/results/noisy-matrix-<time>.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
reps=3
phase_dur=10s
fairness="true false"
aquota=100
overload=10
aconc=128
vrate=200
vconc=8
p3quota=1000000
p3workload=get
out=""
split=false
flood=false
acpus=""
extra=()
while [ $# -gt 0 ]; do
	case "$1" in
	--reps) reps="$2"; shift 2 ;;
	--split) split=true; shift ;;
	--flood) split=true; flood=true; shift ;;
	--phase-duration) phase_dur="$2"; shift 2 ;;
	--fairness) fairness="$2"; shift 2 ;;
	--aggressor-quota) aquota="$2"; shift 2 ;;
	--overload) overload="$2"; shift 2 ;;
	--aggressor-concurrency) aconc="$2"; shift 2 ;;
	--victim-rate) vrate="$2"; shift 2 ;;
	--victim-concurrency) vconc="$2"; shift 2 ;;
	--phase3-quota) p3quota="$2"; shift 2 ;;
	--phase3-workload) p3workload="$2"; shift 2 ;;
	--aggressor-cpus) split=true; acpus="$2"; shift 2 ;;
	--out) out="$2"; shift 2 ;;
	--) shift; extra=("$@"); break ;;
	-h|--help) sed -n '2,45p' "$0"; exit 0 ;;
	*) echo "noisy-matrix.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
case " $fairness " in
*" separate "*) [ "$split" = true ] || { echo "noisy-matrix.sh: --fairness separate needs --split (or --aggressor-cpus, --flood)" >&2; exit 2; } ;;
esac
[ -n "$out" ] || out="$root/bench/results/noisy-matrix-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/tdbnoisymatrix.XXXXXX")"
pid=""
aspid=""
cleanup() {
	if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	if [ -n "$aspid" ]; then kill "$aspid" 2>/dev/null || true; wait "$aspid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# server_latency.py prints, per phase, the victim's and the aggressor's
# latency inside the server (quota's per-tenant histogram: admission to the
# end of the operation, without HTTP and decoding), from /metrics scraped at
# the start of each phase and at the end.
cat >"$work/server_latency.py" <<'PY'
import re, sys
base, victim, aggr = sys.argv[1], sys.argv[2], sys.argv[3]
rx = re.compile(r'^tenantdb_tenant_request_duration_seconds_bucket\{([^}]*)\} (\S+)$')
def load(ph):
    h = {}
    try:
        for line in open(f"{base}.metrics-{ph}"):
            m = rx.match(line.strip())
            if m:
                labels = dict(kv.split("=", 1) for kv in m.group(1).split(","))
                h.setdefault(labels["tenant"].strip('"'), {})[labels["le"].strip('"')] = float(m.group(2))
    except FileNotFoundError:
        return None
    return h
def q(d, frac):
    les = sorted(d, key=lambda le: float("inf") if le == "+Inf" else float(le))
    total = d[les[-1]]
    if total <= 0:
        return "-"
    for le in les:
        if d[le] >= frac * total:
            return "<= %s ms" % ("inf" if le == "+Inf" else "%g" % (float(le) * 1000))
snaps = [load(p) for p in ("1", "2", "3", "end")]
print("\nlatency inside the server (admission to end of operation; bucket upper bounds):")
print("| phase | victim requests | victim p50 | victim p99 | aggressor requests | aggressor p99 |")
print("|---|---|---|---|---|---|")
for i, ph in enumerate(("1", "2", "3")):
    a, b = snaps[i], snaps[i + 1]
    if a is None or b is None:
        continue
    def delta(t):
        d = {le: b.get(t, {}).get(le, 0) - a.get(t, {}).get(le, 0) for le in b.get(t, {})}
        return d
    v = delta(victim)
    if ph == "1":  # before the first label rebalance the victim may count as "other"
        o = delta("other")
        v = {le: v.get(le, 0) + o.get(le, 0) for le in set(v) | set(o)}
    ag = delta(aggr)
    n = lambda d: int(d.get("+Inf", 0))
    print(f"| {ph} | {n(v)} | {q(v, .5) if v else '-'} | {q(v, .99) if v else '-'} | {n(ag)} | {q(ag, .99) if ag else '-'} |")
PY

# summary.py prints one run's phases, or with several files the medians per
# fairness setting and phase, as a markdown table.
cat >"$work/summary.py" <<'PY'
import json, os, re, statistics, sys
rows = {}
for path in sys.argv[1:]:
    name = os.path.basename(path)
    fair = re.match(r"fairness-(on|off|separate)-", name).group(1)
    phases = json.load(open(path))
    base = next((p["victim"] for p in phases if p["phase"] == 1), None)
    for p in phases:
        v, a = p["victim"], p.get("aggressor") or {}
        r = {
            "ops": v["ops_per_sec"], "p50": v["latency"]["p50_us"], "p99": v["latency"]["p99_us"],
            "sp99": (v.get("sched_latency") or {}).get("p99_us", 0),
            "vthr": v["throttled"], "verr": v["errors"] - v["throttled"],
            "aops": a.get("ops_per_sec", 0), "athr": a.get("throttled", 0), "aerr": a.get("errors", 0) - a.get("throttled", 0),
            "cores": (v.get("server_cpu") or {}).get("cores", 0), "other": max(0, v.get("machine_busy_cores", 0) - v["client_cpu"]["cores"] - (v.get("server_cpu") or {}).get("cores", 0) - (a.get("client_cpu") or {}).get("cores", 0)),
            "tr": v["ops_per_sec"] / base["ops_per_sec"] if base else 0,
            "lr": v["latency"]["p99_us"] / base["latency"]["p99_us"] if base else 0,
        }
        rows.setdefault((fair, p["phase"], p["name"]), []).append(r)
med = lambda k, rs: statistics.median(x[k] for x in rs)
print("| fairness | phase | victim ops/s | vs solo | victim p50 ms | victim p99 ms | p99 vs solo | victim p99 from schedule ms | victim throttled/errors | aggressor ops/s | aggressor throttled | server cores | other load cores | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (fair, ph, nm), rs in sorted(rows.items(), key=lambda kv: (["on", "off", "separate"].index(kv[0][0]), kv[0][1])):
    tr, lr = med("tr", rs), med("lr", rs)
    verdict = "-"
    if ph != 1:
        miss = [m for m, bad in (("throughput", tr < 0.9), ("p99", lr > 1.5), ("victim throttled", med("vthr", rs) > 0)) if bad]
        verdict = "MISS " + "+".join(miss) if miss else "ok"
    print(f"| {fair} | {ph}: {nm} | {med('ops', rs):.1f} | {tr:.2f} | {med('p50', rs)/1000:.2f} | {med('p99', rs)/1000:.2f} | {lr:.2f}x | {med('sp99', rs)/1000:.2f} | {med('vthr', rs):g}/{med('verr', rs):g} | {med('aops', rs):.0f} | {med('athr', rs):g} | {med('cores', rs):.2f} | {med('other', rs):.2f} | {verdict} |")
if len(sys.argv) > 2:
    print(f"\nmedians of {max(len(r) for r in rows.values())} runs per row")
PY

echo "noisy-matrix.sh: building" >&2
(cd "$root" && go build -o "$work/tenantdb" ./cmd/tenantdb && go build -o "$work/tdbload" ./cmd/tdbload &&
	go build -o "$work/flood" ./tests/noisy/flood)

{
	echo "date: $(date -u +%FT%TZ)"
	echo "commit: $(cd "$root" && git rev-parse --short HEAD)"
	echo "cpus: $(nproc)  load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "go: $(go version)"
	echo "args: split=$split flood=$flood reps=$reps phase_duration=$phase_dur aggressor_quota=$aquota overload=$overload aggressor_concurrency=$aconc aggressor_cpus=${acpus:-any} server_gomaxprocs=${SERVER_GOMAXPROCS:-default} victim_rate=$vrate victim_concurrency=$vconc phase3_quota=$p3quota phase3_workload=$p3workload extra=${extra[*]:-}"
} >"$out/env.txt"

# run_split NAME ENDPOINT CREDS HOOK: the three phases with the victim and
# the aggressor in separate tdbload processes (the aggressor's niced), the
# results assembled into tdbload noisy's JSON shape.
run_split() {
	local name=$1 endpoint=$2 creds=$3 hook=$4 aendpoint=$5 d="$work/split-$1"
	mkdir -p "$d"
	# key create --json prints one JSON object per key (possibly indented)
	python3 - "$creds" "$d" <<'PY'
import json, sys
text = open(sys.argv[1]).read()
dec, objs, i = json.JSONDecoder(), [], 0
while i < len(text):
    if text[i].isspace(): i += 1; continue
    o, i = dec.raw_decode(text, i); objs.append(o)
for n, o in zip(("victim", "aggressor"), objs):
    open(f"{sys.argv[2]}/{n}.creds", "w").write(o["access_key_id"] + ":" + o["secret_access_key"] + "\n")
PY
	local common=(--endpoint "$endpoint" --preloaded 2000 --json)
	local acommon=(--endpoint "$aendpoint" --preloaded 2000 --json)
	local who ep
	for who in victim aggressor; do
		ep=$endpoint
		[ "$who" = victim ] || ep=$aendpoint
		"$work/tdbload" run --endpoint "$ep" --tenants "$d/$who.creds" --create-table --preload 2000 \
			--workload get --requests 1 --warmup 0 >/dev/null 2>"$work/tdbload.log" || { cat "$work/tdbload.log" >&2; exit 1; }
	done
	local secs=${phase_dur%s}
	local pin=()
	[ -z "$acpus" ] || pin=(taskset -c "$acpus")
	for phase in 1 2 3; do
		[ "$phase" = 1 ] || sleep 2
		TDBLOAD_PHASE=$phase sh -c "$hook"
		local apid=""
		case $phase in
		2) "${pin[@]}" nice -n 19 "$work/tdbload" run "${acommon[@]}" --tenants "$d/aggressor.creds" --workload put \
			--rate $((aquota * overload)) --concurrency "$aconc" --duration "$((secs + 3))s" --warmup 0 \
			>"$d/aggressor-$phase.json" 2>/dev/null & apid=$! ;;
		3) if [ "$flood" = true ]; then
			"${pin[@]}" nice -n 19 "$work/flood" --endpoint "$aendpoint" --key "$(tr -d "\n" <"$d/aggressor.creds")" \
				--concurrency "$aconc" --duration "$((secs + 3))s" --json >"$d/flood.json" 2>/dev/null & apid=$!
		else
			"${pin[@]}" nice -n 19 "$work/tdbload" run "${acommon[@]}" --tenants "$d/aggressor.creds" --workload "$p3workload" \
				--concurrency "$aconc" --duration "$((secs + 3))s" --warmup 0 \
				>"$d/aggressor-$phase.json" 2>/dev/null & apid=$!
		fi ;;
		esac
		[ -z "$apid" ] || sleep 1
		"$work/tdbload" run "${common[@]}" --tenants "$d/victim.creds" --workload mixed --mix get=50,put=50 \
			--rate "$vrate" --concurrency "$vconc" --duration "$phase_dur" --warmup 1s --server-pid "$pid" \
			>"$d/victim-$phase.json" 2>"$work/tdbload.log" || { cat "$work/tdbload.log" >&2; exit 1; }
		[ -z "$apid" ] || wait "$apid"
	done
	python3 - "$d" "$aquota" "$overload" >"$out/$name.json" <<'PY'
import json, os, sys
d, q, o = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
names = {1: "victim alone", 2: f"aggressor at {o:g}x quota", 3: "aggressor within quota, saturating"}
out = []
for ph in (1, 2, 3):
    p = {"phase": ph, "name": names[ph], "victim": json.load(open(f"{d}/victim-{ph}.json"))}
    if os.path.exists(f"{d}/aggressor-{ph}.json"):
        p["aggressor"] = json.load(open(f"{d}/aggressor-{ph}.json"))
    elif ph == 3 and os.path.exists(f"{d}/flood.json"):
        f = json.load(open(f"{d}/flood.json"))
        p["aggressor"] = {"ops_per_sec": f["ops_per_sec"], "throttled": f["throttled"], "errors": f["errors"] + f["throttled"], "client_cpu": {"cores": 0}}
    out.append(p)
print(json.dumps(out))
PY
}

# start_server DATA FAIRNESS: starts tenantdb on a free port with a fresh data
# directory; sets spid and sendpoint.
start_server() {
	local data=$1 fair=$2 try port log="$work/serve-$(basename "$1").log"
	spid=""
	for try in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 20000))
		sendpoint="http://127.0.0.1:$port"
		env ${SERVER_GOMAXPROCS:+GOMAXPROCS=$SERVER_GOMAXPROCS} \
			"$work/tenantdb" serve --addr "127.0.0.1:$port" --data-dir "$data" --log-level error \
			--default-tenant=false --fairness="$fair" "${extra[@]}" >"$log" 2>&1 &
		spid=$!
		for _ in $(seq 1 300); do
			grep -q "listening on" "$log" && break
			kill -0 "$spid" 2>/dev/null || break
			sleep 0.1
		done
		grep -q "listening on" "$log" && [ -f "$data/operator-credentials" ] && return 0
		wait "$spid" 2>/dev/null || true
		spid=""
		grep -q "address already in use" "$log" || { cat "$log" >&2; exit 1; }
	done
	cat "$log" >&2
	exit 1
}

for rep in $(seq 1 "$reps"); do
	for fair in $fairness; do
		case $fair in
		true) label=on ;;
		false) label=off ;;
		separate) label=separate ;;
		*) echo "noisy-matrix.sh: --fairness takes true, false and separate, not $fair" >&2; exit 2 ;;
		esac
		name="fairness-$label-$rep"
		data="$work/data-$name"
		if [ "$fair" = separate ]; then
			start_server "$data" true
		else
			start_server "$data" "$fair"
		fi
		pid=$spid endpoint=$sendpoint
		aendpoint=$endpoint adata=$data
		if [ "$fair" = separate ]; then
			# the control: the aggressor gets a tenantdb process of its own
			start_server "$work/data-$name-aggressor" true
			aspid=$spid aendpoint=$sendpoint adata="$work/data-$name-aggressor"
		fi
		export TENANTDB_ENDPOINT="$endpoint" TENANTDB_CREDENTIALS="$data/operator-credentials"
		v=$("$work/tenantdb" tenant create victim --json | sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p')
		a=$(TENANTDB_ENDPOINT="$aendpoint" TENANTDB_CREDENTIALS="$adata/operator-credentials" \
			"$work/tenantdb" tenant create aggressor --json | sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p')
		creds="$work/creds-$name.txt"
		"$work/tenantdb" key create --tenant "$v" --role admin --json >>"$creds"
		echo >>"$creds"
		TENANTDB_ENDPOINT="$aendpoint" TENANTDB_CREDENTIALS="$adata/operator-credentials" \
			"$work/tenantdb" key create --tenant "$a" --role admin --json >>"$creds"
		echo >>"$creds"
		opkey=$(sed -n 's/^tenantdb_key *= *//p' "$data/operator-credentials")
		aq="TENANTDB_ENDPOINT='$aendpoint' TENANTDB_CREDENTIALS='$adata/operator-credentials' '$work/tenantdb' quota set --tenant $a"
		hook="curl -s -H 'Authorization: Bearer $opkey' $endpoint/metrics >'$out/$name.metrics-'\$TDBLOAD_PHASE
			case \$TDBLOAD_PHASE in
			2) $aq --read-units $aquota --write-units $aquota --burst-seconds 1 >/dev/null ;;
			3) $aq --read-units $p3quota --write-units $p3quota --burst-seconds 1 >/dev/null ;;
			esac"
		echo "noisy-matrix.sh: $name (server pid $pid)" >&2
		if [ "$split" = true ]; then
			run_split "$name" "$endpoint" "$creds" "$hook" "$aendpoint"
		else
			"$work/tdbload" noisy --endpoint "$endpoint" --tenants "$creds" --create-table \
				--victim-rate "$vrate" --victim-concurrency "$vconc" \
				--aggressor-concurrency "$aconc" --aggressor-quota "$aquota" --overload "$overload" \
				--phase3-rate -1 --phase3-workload "$p3workload" \
				--phase-duration "$phase_dur" --phase-hook "$hook" --server-pid "$pid" --json \
				>"$out/$name.json" 2>"$work/tdbload.log" || { cat "$work/tdbload.log" >&2; exit 1; }
		fi
		curl -s -H "Authorization: Bearer $opkey" "$endpoint/metrics" >"$out/$name.metrics-end"
		kill "$pid"
		wait "$pid" 2>/dev/null || true
		pid=""
		if [ -n "$aspid" ]; then kill "$aspid"; wait "$aspid" 2>/dev/null || true; aspid=""; fi
		python3 "$work/summary.py" "$out/$name.json" >"$out/$name.txt"
		python3 "$work/server_latency.py" "$out/$name" "$v" "$a" >>"$out/$name.txt"
		echo "== $name" && cat "$out/$name.txt"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/env.txt"
python3 "$work/summary.py" "$out"/fairness-*.json >"$out/summary.md"
cat "$out/summary.md"
echo "noisy-matrix.sh: results in $out" >&2
