"""The "real servers" part of bench/RESULTS.md (scripts/bench_servers.sh's
raw figures): a table of each server natively and under corun, the ratios,
the goals of issue 13, and bench/servers.svg. Used by bench_report.py.

Rows of RAW/servers.tsv: server mode rep rate unit errors check threads
procs cpu_us. Repetitions alternate native and corun; the report takes the
median of each figure over the repetitions, sums errors, and keeps the
largest thread count.

Rows of RAW/servers_paired.tsv (scripts/servers_paired.sh, PAIR_TSV): server
pairing(corun|self) rep first_mode first_us first_ops second_mode second_us
second_ops ratio first_errors second_errors first_reply second_reply. A pair
is a native and a corun copy of the server run AT THE SAME TIME on one CPU;
ratio is the corun copy's CPU time per operation over the native one's
(self: two native copies, the second over the first: the noise left). Pairs
with load errors or a wrong reply are counted as dropped, not in the median.
"""
import os
import statistics

# name, what it is, goal (minimum corun/native ratio of the median rate)
SERVERS = [
    ("apache", "Apache 2.4, worker MPM (4 children x 64 threads), 600-byte file, wrk -c200", "threads", 1.2),
    ("apache_event", "Apache 2.4, event MPM (4 children x 64 threads, a listener's epoll), 600-byte file, wrk -c200", "threads", 1.0),
    ("postgres", "PostgreSQL 15, a process per connection, pgbench -S -c8", "processes", 1.0),
    ("nginx", "nginx, 2 worker processes (epoll), 600-byte file, wrk -c200", "event", 0.97),
    ("lighttpd", "lighttpd, 1 process (epoll), 600-byte file, wrk -c200", "event", 0.97),
    ("haproxy", "HAProxy, 2 threads, replies itself, wrk -c200", "event", 0.97),
    ("redis", "Redis 7, event loop (+ background threads), redis-benchmark SET/GET -c50", "event", 0.97),
    ("memcached", "memcached, 4 threads (libevent), memaslap get/set -c64", "event", 0.97),
]
KIND = {"threads": "thread per connection", "processes": "process per connection", "event": "event-driven"}


def load(raw):
    p = os.path.join(raw, "servers.tsv")
    rows = {}
    if not os.path.exists(p):
        return rows
    with open(p) as f:
        for line in f:
            r = line.rstrip("\n").split("\t")
            if len(r) < 9:
                continue
            cpu = float(r[9]) if len(r) > 9 and r[9] else 0.0
            rows.setdefault((r[0], r[1]), []).append({
                "rep": r[2], "rate": float(r[3] or 0), "unit": r[4], "errors": int(r[5] or 0), "check": r[6],
                "threads": int(r[7] or 0), "procs": int(r[8] or 0), "cpu": cpu,
            })
    return rows


def load_pairs(raw):
    """{(server, pairing): {"ratios": [...], "dropped": n}}"""
    p = os.path.join(raw, "servers_paired.tsv")
    out = {}
    if not os.path.exists(p):
        return out
    with open(p) as f:
        for line in f:
            r = line.rstrip("\n").split("\t")
            if len(r) < 14:
                continue
            e = out.setdefault((r[0], r[1]), {"ratios": [], "dropped": 0})
            clean = r[10] == "0" and r[11] == "0" and r[12] == "ok" and r[13] == "ok"
            ratio = float(r[9] or 0)
            if clean and ratio > 0:
                e["ratios"].append(ratio)
            else:
                e["dropped"] += 1
    return out


def paired_text(e):
    """median (min-max, n pairs) of one server's paired ratios."""
    if not e:
        return "not paired"
    if not e["ratios"]:
        return f"n/a ({e['dropped']} pairs dropped: errors or wrong reply)"
    rs = e["ratios"]
    drop = f", {e['dropped']} dropped" if e["dropped"] else ""
    return f"**{statistics.median(rs):.3f}x** ({min(rs):.3f}-{max(rs):.3f}, {len(rs)} pairs{drop})"


def summary(rs):
    ok = [x for x in rs if x["rate"] > 0]
    med = lambda k: statistics.median(x[k] for x in ok) if ok else 0.0
    cpus = [x["cpu"] for x in ok if x["cpu"] > 0]
    return {
        "rate": med("rate"), "min": min((x["rate"] for x in ok), default=0), "max": max((x["rate"] for x in ok), default=0),
        "n": len(rs), "good": len(ok), "unit": next((x["unit"] for x in rs if x["unit"] != "-"), "-"),
        "errors": sum(x["errors"] for x in rs), "checks": all(x["check"] == "ok" for x in rs),
        "threads": max((x["threads"] for x in rs), default=0), "procs": max((x["procs"] for x in rs), default=0),
        "cpu": statistics.median(cpus) if cpus else 0.0,
    }


def figures(raw):
    rows = load(raw)
    pairs_all = load_pairs(raw)
    out = []
    for name, label, kind, want in SERVERS:
        n, c = rows.get((name, "native")), rows.get((name, "corun"))
        if not n and not c:
            continue
        sn, sc = summary(n or []), summary(c or [])
        # Each repetition ran native and corun back to back: the ratio of
        # each pair shares the machine's mood of the moment, and the median
        # of those ratios is steadier than the ratio of the medians.
        by_rep = {x["rep"]: x for x in (n or [])}
        pairs = [(x["rate"] / by_rep[x["rep"]]["rate"], x["cpu"], by_rep[x["rep"]]["cpu"])
                 for x in (c or []) if x["rep"] in by_rep and x["rate"] > 0 and by_rep[x["rep"]]["rate"] > 0]
        ratio = statistics.median(p[0] for p in pairs) if pairs else None
        cpus = [nc / cc for _, cc, nc in pairs if cc > 0 and nc > 0]
        cpu_ratio = statistics.median(cpus) if cpus else None
        out.append({"name": name, "label": label, "kind": kind, "want": want, "native": sn, "corun": sc,
                    "ratio": ratio, "cpu_ratio": cpu_ratio, "pairs": [p[0] for p in pairs],
                    "paired": pairs_all.get((name, "corun")), "self": pairs_all.get((name, "self"))})
    return out


def goals(figs):
    """(text, ok or None, figure) for the Goals table."""
    g = []
    for f in figs:
        replies = f["native"]["checks"] and f["corun"]["checks"] and f["corun"]["errors"] == 0
        ok = None if f["ratio"] is None else (f["ratio"] >= f["want"] and replies)
        g.append((f"{f['name']} ({KIND[f['kind']]}) under corun >= {f['want']:.2f}x native {f['native']['unit']}, "
                  "replies checked, no errors", ok,
                  "median of the runs' ratios "
                  + ("n/a" if f["ratio"] is None else f"{f['ratio']:.2f}x")
                  + f" (median rates {f['corun']['rate']:,.0f} vs {f['native']['rate']:,.0f})"
                  + ("" if replies else "; **reply check or errors failed**")))
    return g


def svg(figs, path):
    """Horizontal bars: corun/native rate, and native/corun CPU per
    operation (above 1: corun used less CPU), with each goal marked."""
    if not figs:
        return
    W, L, R, T, row = 780, 150, 30, 50, 46
    H = T + row * len(figs) + 60
    pw = W - L - R
    hi = max(1.6, max(max(f["ratio"] or 0, f["cpu_ratio"] or 0) for f in figs) * 1.1)
    fx = lambda v: L + min(v, hi) / hi * pw
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="15">Real servers under corun, relative to native (median of paired runs)</text>',
         f'<rect x="{L}" y="{T - 8}" width="12" height="10" fill="#1f77b4"/>'
         f'<text x="{L + 16}" y="{T + 1}">rate corun / native</text>',
         f'<rect x="{L + 170}" y="{T - 8}" width="12" height="10" fill="#ff7f0e"/>'
         f'<text x="{L + 186}" y="{T + 1}">CPU per operation native / corun</text>',
         f'<line x1="{L + 400}" x2="{L + 400}" y1="{T - 10}" y2="{T + 2}" stroke="#2ca02c" stroke-width="3"/>'
         f'<text x="{L + 406}" y="{T + 1}">goal</text>']
    top = T + 12
    t = 0.0
    while t <= hi + 1e-9:
        x = fx(t)
        o.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + row * len(figs)}" stroke="{"#888" if abs(t - 1) < 1e-9 else "#e4e4e4"}"/>')
        o.append(f'<text x="{x:.1f}" y="{top + row * len(figs) + 16}" text-anchor="middle">{t:.1f}x</text>')
        t += 0.2
    for i, f in enumerate(figs):
        y = top + i * row + 6
        o.append(f'<text x="{L - 8}" y="{y + 12}" text-anchor="end">{f["name"]}</text>')
        o.append(f'<text x="{L - 8}" y="{y + 26}" text-anchor="end" fill="#666" font-size="10">{KIND[f["kind"]]}</text>')
        gx = fx(f["want"])
        for k, (v, col) in enumerate(((f["ratio"], "#1f77b4"), (f["cpu_ratio"], "#ff7f0e"))):
            if v is None:
                continue
            yy = y + k * 16
            o.append(f'<rect x="{L}" y="{yy}" width="{fx(v) - L:.1f}" height="13" fill="{col}"/>')
            lx = max(fx(v), gx + 2 if k == 0 else 0) + 4
            o.append(f'<text x="{lx:.1f}" y="{yy + 11}" font-size="10">{v:.2f}x</text>')
        o.append(f'<line x1="{gx:.1f}" x2="{gx:.1f}" y1="{y - 2}" y2="{y + 16}" stroke="#2ca02c" stroke-width="3"/>')
    o.append(f'<text x="{W / 2}" y="{H - 10}" text-anchor="middle" fill="#444">'
             'each server natively and under corun in the same run, alternating; blue: throughput ratio</text>')
    o.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(o) + "\n")


def markdown(figs, meta):
    L = []
    a = L.append
    a("## 5. Real servers")
    a("")
    a("Servers from Debian's packages, unchanged, each started natively and under `LD_PRELOAD=libcorun.so` "
      f"({meta.get('servers_reps', '4')} repetitions, native and corun alternating, a fresh server each run, "
      f"{meta.get('servers_duration', '4')} s of load each; `scripts/bench_servers.sh`). The load generator runs on the same "
      "2 CPUs. *rate* is the load generator's figure (req/s, or transactions/s for pgbench), median of the runs; *CPU per op* "
      "is the server's CPU time (all its processes) divided by the operations served, a figure that other work on the "
      "machine disturbs less; *errors* sums wrk's socket errors and non-2xx replies, redis-benchmark's error replies and "
      "pgbench's failed transactions; *reply* is a reply fetched and compared before the load; *threads* is the most "
      "kernel threads the server's processes had together.")
    a("")
    a("![real servers](servers.svg)")
    a("")
    a("*corun / native* is the median of the ratios of the repetitions (native and corun ran back to back in each), "
      "with each ratio listed; *CPU per op* likewise.")
    a("")
    paired_any = any(f["paired"] or f["self"] for f in figs)
    if paired_any:
        a(f"*paired CPU per op* is a second figure for the event-driven servers and PostgreSQL: a native and a corun "
          f"copy run at the same time on one CPU, each with its own load generator on the other CPU "
          f"({meta.get('servers_pair_reps', '4')} pairs of {meta.get('servers_pair_duration', '4')} s, which copy starts "
          "first alternating; nginx with 1 worker here; `scripts/servers_paired.sh`), and the corun copy's CPU time per "
          "operation (its threads' run time from `/proc/PID/task/*/schedstat`; PostgreSQL's backends end with the "
          "load, so there the postmaster's own and reaped children's clock ticks, 10 ms each) over the native copy's: median "
          "(min-max) over the pairs, **above 1: corun uses more CPU** (the opposite way round from the *CPU per op* "
          "column). The two figures answer the same question differently. The req/s ratio compares runs seconds apart, "
          "and on this shared 2-CPU machine a single-process event loop's 4 s rate swings 10-20% from one run to the "
          "next, so 4 repetitions cannot tell 0.97x from 1.00x. The paired ratio is the steadier one: both copies live "
          "through the same seconds, so whatever else the machine does hits both, and CPU time per operation does not "
          "depend on how much CPU the copy was given; the native-against-native row shows the noise that is left. The "
          "goal rows still judge the req/s ratio.")
        a("")
    head = "| server | kind | native rate (min-max) | corun rate (min-max) | corun / native (each run) | goal | CPU per op native / corun (ratio) | errors native / corun | reply | threads native / corun (processes) |"
    rule = "|---|---|---|---|---|---|---|---|---|---|"
    if paired_any:
        head += " paired CPU per op, corun / native (same seconds) |"
        rule += "---|"
    a(head)
    a(rule)
    for f in figs:
        n, c = f["native"], f["corun"]
        rate = lambda s: f"{s['rate']:,.0f} {s['unit']} ({s['min']:,.0f}-{s['max']:,.0f}, {s['good']}/{s['n']} runs)"
        ratio = "n/a" if f["ratio"] is None else (
            f"**{f['ratio']:.2f}x** ({', '.join(f'{p:.2f}' for p in f['pairs'])})")
        cpu = (f"{n['cpu']:.1f} / {c['cpu']:.1f} us ({f['cpu_ratio']:.2f}x)"
               if n["cpu"] and c["cpu"] and f["cpu_ratio"] else "n/a")
        reply = "ok" if n["checks"] and c["checks"] else "**WRONG**"
        a(f"| {f['name']} | {KIND[f['kind']]} | {rate(n)} | {rate(c)} | {ratio} | >= {f['want']:.2f}x | {cpu} | "
          f"{n['errors']} / {c['errors']} | {reply} | {n['threads']} / {c['threads']} ({c['procs']}) |"
          + (f" {paired_text(f['paired'])} |" if paired_any else ""))
    for f in figs:
        if f["self"]:
            a(f"| {f['name']}, native against native (noise) | {KIND[f['kind']]} | | | | | | | | | "
              f"{paired_text(f['self'])} (second copy / first) |")
    a("")
    a("What each run is:")
    a("")
    for f in figs:
        a(f"- **{f['name']}**: {f['label']}.")
    a("")
    return L


if __name__ == "__main__":
    # The servers section alone: bench_servers_report.py RAW_DIR (after
    # scripts/bench_servers.sh RAW_DIR) prints its markdown.
    import sys
    raw_dir = sys.argv[1]
    meta_path = os.path.join(raw_dir, "meta.tsv")
    meta_rows = open(meta_path).read().splitlines() if os.path.exists(meta_path) else []
    figs = figures(raw_dir)
    print("\n".join(markdown(figs, dict(r.split("\t", 1) for r in meta_rows if "\t" in r))))
    for text, ok, fig in goals(figs):
        print(f"goal: {text}: {'n/a' if ok is None else 'met' if ok else 'NOT met'} ({fig})")
