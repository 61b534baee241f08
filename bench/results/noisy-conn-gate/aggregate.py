"""aggregate.py DIR: medians per --conn-gate setting and phase of the
noisy-matrix.sh runs under DIR/gate-<off|on>-r<N>/fairness-on-1.json
(the same columns as noisy-matrix.sh's summary.md)."""
import glob, json, os, re, statistics, sys

rows = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "gate-*-r*", "fairness-*.json"))):
    gate = re.search(r"gate-(on|off)-r", path).group(1)
    phases = json.load(open(path))
    base = next((p["victim"] for p in phases if p["phase"] == 1), None)
    for p in phases:
        v, a = p["victim"], p.get("aggressor") or {}
        r = {
            "ops": v["ops_per_sec"], "p50": v["latency"]["p50_us"], "p99": v["latency"]["p99_us"],
            "sp99": (v.get("sched_latency") or {}).get("p99_us", 0),
            "vthr": v["throttled"], "verr": v["errors"] - v["throttled"],
            "aops": a.get("ops_per_sec", 0), "athr": a.get("throttled", 0), "aerr": a.get("errors", 0) - a.get("throttled", 0),
            "cores": (v.get("server_cpu") or {}).get("cores", 0),
            "other": max(0, v.get("machine_busy_cores", 0) - v["client_cpu"]["cores"] - (v.get("server_cpu") or {}).get("cores", 0) - (a.get("client_cpu") or {}).get("cores", 0)),
            "tr": v["ops_per_sec"] / base["ops_per_sec"] if base else 0,
            "lr": v["latency"]["p99_us"] / base["latency"]["p99_us"] if base else 0,
        }
        rows.setdefault((gate, p["phase"], p["name"]), []).append(r)

med = lambda k, rs: statistics.median(x[k] for x in rs)
print("| conn gate | phase | runs | victim ops/s | vs solo | victim p50 ms | victim p99 ms | p99 vs solo | victim p99 from schedule ms | victim throttled/errors | aggressor ops/s | aggressor errors | server cores | other load cores | per-run p99 vs solo |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (gate, ph, nm), rs in sorted(rows.items(), key=lambda kv: (kv[0][0] != "off", kv[0][1])):
    per = " ".join(f"{x['lr']:.2f}" for x in rs)
    print(f"| {gate} | {ph}: {nm} | {len(rs)} | {med('ops', rs):.1f} | {med('tr', rs):.2f} | {med('p50', rs)/1000:.2f} | {med('p99', rs)/1000:.2f} | {med('lr', rs):.2f}x | {med('sp99', rs)/1000:.2f} | {med('vthr', rs):g}/{med('verr', rs):g} | {med('aops', rs):.0f} | {med('aerr', rs):g} | {med('cores', rs):.2f} | {med('other', rs):.2f} | {per} |")
