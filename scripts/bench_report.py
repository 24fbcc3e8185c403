#!/usr/bin/env python3
"""Renders the raw figures of scripts/bench.sh into bench/RESULTS.md,
bench/throughput.svg and bench/latency.svg. Every ratio is computed here
from figures of the same run; nothing is typed in by hand.

usage: bench_report.py RAW_DIR OUT_DIR
"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_servers_report  # noqa: E402

RAW, OUT = sys.argv[1], sys.argv[2]
os.makedirs(OUT, exist_ok=True)


def read_tsv(name):
    p = os.path.join(RAW, name)
    if not os.path.exists(p):
        return []
    with open(p) as f:
        return [l.rstrip("\n").split("\t") for l in f if l.strip()]


meta = {r[0]: r[1] for r in read_tsv("meta.tsv") if len(r) > 1}
NCPU = int(meta.get("cpus", "2"))

# ---------------------------------------------------------------- micro
micro = {}
micro_failed = {}
for r in read_tsv("micro.tsv"):
    key, rest = r[0], r[1]
    if rest.startswith("FAILED"):
        micro_failed[key] = rest[len("FAILED "):].strip()
        continue
    d = dict(kv.split("=", 1) for kv in rest.split())
    micro[key] = {
        "median": float(d["median"]),
        "min": float(d["min"]),
        "max": float(d["max"]),
        "unit": d["unit"],
        "trials": d["trials"],
    }


def m(key):
    return micro[key]["median"] if key in micro else None


def fmt_t(v, unit):
    if v is None:
        return "failed"
    if unit == "ms":
        return f"{v:,.1f} ms"
    if v >= 10000:
        return f"{v / 1000:,.1f} us"
    return f"{v:,.1f} ns"


def ratio(a, b):
    """a / b, or None."""
    if a is None or b is None or b == 0:
        return None
    return a / b


def fr(x, digits=1):
    return "n/a" if x is None else f"{x:,.{digits}f}x"


# ---------------------------------------------------------------- idle
idle = {}
idle_failed = []
for r in read_tsv("idle.tsv"):
    if len(r) < 13:
        idle_failed.append(r[0])
        continue
    v, rep = r[0], r[1]
    rss0, rss1, thr, av0, ks0, pt0, sl0, av1, ks1, pt1, sl1 = (int(x or 0) for x in r[2:13])
    idle.setdefault(v, []).append((rss1 - rss0, av0 - av1, thr, ks1 - ks0, pt1 - pt0, sl1 - sl0))
N_IDLE = int(meta.get("idle_n", "10000"))


def idle_med(v, i):
    if v not in idle:
        return None
    return statistics.median(x[i] for x in idle[v]) / N_IDLE  # KiB per connection


# ---------------------------------------------------------------- wrk
runs = {}
for r in read_tsv("wrk.tsv"):
    g, v, c = r[0], r[1], int(r[2])
    req, dur, p50, p99, mx, ce, re_, we, te, se, hwm, thr, ticks = (int(x or 0) for x in r[4:17])
    runs.setdefault((g, v, c), []).append({
        "rps": req / (dur / 1e6) if dur > 0 else 0.0,
        "req": req,
        "p50": p50 / 1000.0,
        "p99": p99 / 1000.0,
        "max": mx / 1000.0,
        "err": ce + re_ + we + te,
        "errs": (ce, re_, we, te),
        "status": se,
        "hwm": hwm / 1024.0,
        "thr": thr,
        "cpu": ticks / os.sysconf("SC_CLK_TCK"),
        "dur": dur / 1e6,
    })
# Per point: the median of each figure over the repetitions; errors summed;
# peak RSS and threads the largest seen.
wrk = {}
for k, rs in runs.items():
    med = lambda f: statistics.median(x[f] for x in rs)
    wrk[k] = {
        "rps": med("rps"), "p50": med("p50"), "p99": med("p99"), "max": max(x["max"] for x in rs),
        "req": med("req"), "cpu": med("cpu"),
        "err": sum(x["err"] for x in rs), "errs": tuple(sum(x["errs"][i] for x in rs) for i in range(4)),
        "status": sum(x["status"] for x in rs), "hwm": max(x["hwm"] for x in rs), "thr": max(x["thr"] for x in rs),
        "n": len(rs), "rps_min": min(x["rps"] for x in rs), "rps_max": max(x["rps"] for x in rs),
    }
CONNS = sorted({k[2] for k in wrk})
VNAMES = {
    "native": "threaded_http, native threads",
    "corun1": "threaded_http under corun, 1 worker",
    "corunN": f"threaded_http under corun, {NCPU} workers",
    "epoll": "epoll_http (1 thread, edge-triggered)",
    "go1": "Go raw net.Conn server, GOMAXPROCS=1",
    "goN": f"Go raw net.Conn server, GOMAXPROCS={NCPU}",
    "may1": "may (Rust coroutines), 1 worker",
    "mayN": f"may (Rust coroutines), {NCPU} workers",
}
# The wrk variants of each group: threaded_http natively and under corun,
# epoll_http, and the two peers with as many threads as corun has workers.
GROUP_VARIANTS = {"pinned": ("native", "corun1", "epoll", "go1", "may1"),
                  "shared": ("native", "corunN", "epoll", "goN", "mayN")}


def w(g, v, c, k):
    x = wrk.get((g, v, c))
    return None if x is None else x[k]


# ---------------------------------------------------------------- goals
# ---------------------------------------------------------------- mariadb
mdb, mdb_failed = {}, {}
for r in read_tsv("mariadb.tsv"):
    if len(r) < 2:
        continue
    if r[1].startswith("FAILED"):
        mdb_failed[r[0]] = r[1][len("FAILED "):].strip()
        continue
    mdb[r[0]] = dict(kv.split("=", 1) for kv in r[1].split() if "=" in kv)

goals = []


def goal(text, ok, figure):
    goals.append((text, "n/a (no data)" if ok is None else ("**met**" if ok else "**not met**"), figure))


def cmp(a, b, op):
    if a is None or b is None:
        return None
    return op(a, b)


for g, cv, label in (("pinned", "corun1", "server on 1 CPU, wrk on the other"),
                     ("shared", "corunN", f"{NCPU} workers, all CPUs shared with wrk")):
    e, n, c = w(g, "epoll", 1000, "rps"), w(g, "native", 1000, "rps"), w(g, cv, 1000, "rps")
    if g == "pinned":
        goal("corun threaded_http at 1,000 connections >= 0.9x epoll_http req/s on the same cores "
             f"({label})", cmp(c, e, lambda a, b: a >= 0.9 * b),
             f"{c or 0:,.0f} vs {e or 0:,.0f} req/s = {fr(ratio(c, e), 2)}")
    else:
        goal("corun threaded_http at 1,000 connections >= 0.9x epoll_http req/s "
             f"({label}; epoll_http uses one thread)", cmp(c, e, lambda a, b: a >= 0.9 * b),
             f"{c or 0:,.0f} vs {e or 0:,.0f} req/s = {fr(ratio(c, e), 2)}")
    goal(f"corun threaded_http at 1,000 connections >= native threads' req/s ({label})",
         cmp(c, n, lambda a, b: a >= b), f"{c or 0:,.0f} vs {n or 0:,.0f} req/s = {fr(ratio(c, n), 2)}")
    n10, c10 = w(g, "native", 10000, "rps"), w(g, cv, 10000, "rps")
    n99, c99 = w(g, "native", 10000, "p99"), w(g, cv, 10000, "p99")
    ok10 = None if None in (n10, c10, n99, c99) else (c10 > n10 and c99 < n99)
    goal(f"corun at 10,000 connections: more req/s and lower p99 than native ({label})", ok10,
         f"{c10 or 0:,.0f} vs {n10 or 0:,.0f} req/s ({fr(ratio(c10, n10), 2)}); "
         f"p99 {c99 or 0:,.1f} vs {n99 or 0:,.1f} ms")

pp, sw, ev = m("pingpong_w1"), m("swapcontext"), m("eventfd_pinned")
goal("yield round trip under 20 ns", cmp(pp, 20.0, lambda a, b: a < b), f"{fmt_t(pp, 'ns')} (two coroutines, 1 worker)")
goal("yield round trip >= 10x faster than swapcontext", cmp(sw, pp, lambda a, b: a >= 10 * b),
     f"swapcontext {fmt_t(sw, 'ns')} / corun {fmt_t(pp, 'ns')} = {fr(ratio(sw, pp))}")
sp1, spN, pt = m("spawn_w1"), m("spawn_wall"), m("pthread")
goal(f"spawn+join >= 20x faster than pthread_create+join (default: {NCPU} workers)",
     cmp(pt, spN, lambda a, b: a >= 20 * b),
     f"pthread {fmt_t(pt, 'ns')} / corun {fmt_t(spN, 'ns')} = {fr(ratio(pt, spN))}; "
     f"with 1 worker {fmt_t(sp1, 'ns')} = {fr(ratio(pt, sp1))}")
sl = m("sleepers_100k")
sl_fig = f"{fmt_t(sl, 'ms')}"
if sl is None:
    sl_fig = f"failed: {micro_failed.get('sleepers_100k', '?')}"
    if m("sleepers_30k") is not None:
        sl_fig += f"; 30,000 sleepers: {fmt_t(m('sleepers_30k'), 'ms')}"
goal("100,000 coroutines sleeping 1 ms done within 50 ms", cmp(sl, 50.0, lambda a, b: a <= b), sl_fig)
ia_n, ia_c = idle_med("native", 1), idle_med("corun", 1)
goal("memory per idle connection <= 1/4 of native threads' (MemAvailable; threaded_http)",
     cmp(ia_c, ia_n, lambda a, b: a <= b / 4),
     f"{ia_c or 0:,.1f} vs {ia_n or 0:,.1f} KiB = {fr(ratio(ia_c, ia_n), 2)} of native")
ie_n, ie_c = idle_med("echo_native", 1), idle_med("echo_corun", 1)
if ie_n is not None and ie_c is not None:
    goal("memory per idle connection <= 1/4 of native threads' (MemAvailable; threaded_echo)",
         cmp(ie_c, ie_n, lambda a, b: a <= b / 4),
         f"{ie_c:,.1f} vs {ie_n:,.1f} KiB = {fr(ratio(ie_c, ie_n), 2)} of native")

# Side by side with the peers (issue 14): each row is (label, unit, corun,
# Go, may, higher is better), every figure from this run.
def cpu_us(g, v, c):
    x = wrk.get((g, v, c))
    return None if not x or not x["req"] or x["cpu"] <= 0 else x["cpu"] / x["req"] * 1e6


PEER_ROWS = [
    ("req/s at 1,000 connections (server on 1 CPU)", "req/s",
     w("pinned", "corun1", 1000, "rps"), w("pinned", "go1", 1000, "rps"), w("pinned", "may1", 1000, "rps"), True),
    (f"req/s at 1,000 connections ({NCPU} threads, CPUs shared)", "req/s",
     w("shared", "corunN", 1000, "rps"), w("shared", "goN", 1000, "rps"), w("shared", "mayN", 1000, "rps"), True),
    ("server CPU per request at 1,000 connections (1 CPU)", "us",
     cpu_us("pinned", "corun1", 1000), cpu_us("pinned", "go1", 1000), cpu_us("pinned", "may1", 1000), False),
    ("p50 at 10,000 connections (1 CPU)", "ms",
     w("pinned", "corun1", 10000, "p50"), w("pinned", "go1", 10000, "p50"), w("pinned", "may1", 10000, "p50"), False),
    ("p99 at 10,000 connections (1 CPU)", "ms",
     w("pinned", "corun1", 10000, "p99"), w("pinned", "go1", 10000, "p99"), w("pinned", "may1", 10000, "p99"), False),
    ("memory per idle keep-alive connection (server RSS)", "KiB",
     idle_med("corun", 0), idle_med("go", 0), idle_med("may", 0), False),
    ("yield round trip, 1 worker", "ns", m("pingpong_w1"), m("go_pingpong_p1"), m("may_pingpong_w1"), False),
    ("spawn+join, 1 worker", "ns", m("spawn_w1"), m("go_spawn_p1"), m("may_spawn_w1"), False),
    ("spawn+join, 2 workers", "ns", m("spawn_w2"), m("go_spawn_p2"), m("may_spawn_w2"), False),
    ("100,000 x sleep 1 ms, 2 workers", "ms", m("sleepers_w2"), m("go_sleepers_p2"), m("may_sleepers_w2"), False),
    ("100,000 x sleep 1 ms, 1 worker", "ms", m("sleepers_w1"), m("go_sleepers_p1"), m("may_sleepers_w1"), False),
]


def ahead(row):
    """Whether corun beats every peer that has a figure (None: no corun figure)."""
    _, _, c, g_, y, hi = row
    if c is None:
        return None
    return all(p is None or (c > p if hi else c < p) for p in (g_, y))


sp2 = m("spawn_w2")
goal("spawn+join with 2 workers at most 400 ns (issue 14)", cmp(sp2, 400.0, lambda a, b: a <= b),
     f"{fmt_t(sp2, 'ns')}; Go {fmt_t(m('go_spawn_p2'), 'ns')}")
goal(f"100,000 sleepers with the default workers ({NCPU}) within 100 ms (issue 14)",
     cmp(sl, 100.0, lambda a, b: a <= b), sl_fig)
behind = [r[0] for r in PEER_ROWS if ahead(r) is False]
goal("ahead of Go and may on every row of the side-by-side table (issue 14)",
     None if all(ahead(r) is None for r in PEER_ROWS) else not behind,
     "behind on: " + "; ".join(behind) if behind else "ahead on every row with figures")

SRV = bench_servers_report.figures(RAW)
for t_, ok_, fig_ in bench_servers_report.goals(SRV):
    goal(t_, ok_, fig_)

# ---------------------------------------------------------------- SVG
COLORS = {"native": "#d62728", "corun1": "#1f77b4", "corunN": "#17becf", "epoll": "#2ca02c",
          "go1": "#9467bd", "goN": "#9467bd", "may1": "#ff7f0e", "mayN": "#ff7f0e"}
SERIES = [(g, v) for g in ("pinned", "shared") for v in GROUP_VARIANTS[g]]


def svg_chart(path, title, ylabel, key, logy):
    W, H, L, R, T, B = 760, 460 + 36 * max(0, len(SERIES) - 10), 80, 250, 40, 60
    pw, ph = W - L - R, H - T - B
    vals = [w(g, v, c, key) for g, v in SERIES for c in CONNS if w(g, v, c, key)]
    if not vals or not CONNS:
        return
    if logy:
        lo = 10 ** math.floor(math.log10(max(min(vals), 1e-3)))
        hi = 10 ** math.ceil(math.log10(max(vals)))
        ticks = []
        t = lo
        while t <= hi * 1.0001:
            ticks.append(t)
            t *= 10
        fy = lambda y: T + ph - (math.log10(max(y, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph
    else:
        lo, top = 0.0, max(vals) * 1.1
        step = 10 ** math.floor(math.log10(top))
        if top / step < 3:
            step /= 5 if top / step < 1.5 else 2
        hi = math.ceil(top / step) * step
        ticks = [i * step for i in range(int(round(hi / step)) + 1)]
        fy = lambda y: T + ph - (y - lo) / (hi - lo) * ph
    xs = CONNS
    lx0, lx1 = math.log10(xs[0]), math.log10(xs[-1]) if len(xs) > 1 else math.log10(xs[0]) + 1
    fx = lambda x: L + (math.log10(x) - lx0) / ((lx1 - lx0) or 1) * pw
    o = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
         f'<rect width="{W}" height="{H}" fill="white"/>',
         f'<text x="{L + pw / 2}" y="22" text-anchor="middle" font-size="15">{title}</text>',
         f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for t in ticks:
        y = fy(t)
        lab = f"{t:,.0f}" if t >= 1 else f"{t:g}"
        if not logy and hi >= 10000:
            lab = f"{t / 1000:,.0f}k"
        o.append(f'<line x1="{L}" x2="{L + pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>')
        o.append(f'<text x="{L - 6}" y="{y + 4:.1f}" text-anchor="end">{lab}</text>')
    for x in xs:
        o.append(f'<line x1="{fx(x):.1f}" x2="{fx(x):.1f}" y1="{T}" y2="{T + ph}" stroke="#e4e4e4"/>')
        o.append(f'<text x="{fx(x):.1f}" y="{T + ph + 18}" text-anchor="middle">{x:,}</text>')
    o.append(f'<text x="{L + pw / 2}" y="{H - 18}" text-anchor="middle">concurrent keep-alive connections (log scale)</text>')
    o.append(f'<text transform="translate(18,{T + ph / 2}) rotate(-90)" text-anchor="middle">{ylabel}</text>')
    ly = T + 10
    for g, v in SERIES:
        pts = [(fx(c), fy(w(g, v, c, key))) for c in xs if w(g, v, c, key)]
        dash = ' stroke-dasharray="6,4"' if g == "shared" else ""
        if pts:
            o.append(f'<polyline fill="none" stroke="{COLORS[v]}" stroke-width="2"{dash} points="'
                     + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts) + '"/>')
            for x, y in pts:
                o.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{COLORS[v]}"/>')
        o.append(f'<line x1="{L + pw + 12}" x2="{L + pw + 40}" y1="{ly}" y2="{ly}" stroke="{COLORS[v]}" stroke-width="2"{dash}/>')
        name = {"native": "native threads", "corun1": "corun, 1 worker", "corunN": f"corun, {NCPU} workers",
                "epoll": "epoll_http", "go1": "Go, GOMAXPROCS=1", "goN": f"Go, GOMAXPROCS={NCPU}",
                "may1": "may, 1 worker", "mayN": f"may, {NCPU} workers"}[v]
        o.append(f'<text x="{L + pw + 46}" y="{ly + 4}">{name}</text>')
        o.append(f'<text x="{L + pw + 46}" y="{ly + 18}" fill="#666" font-size="10">'
                 f'{"server 1 CPU, wrk 1 CPU" if g == "pinned" else "all CPUs shared"}</text>')
        ly += 36
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")


svg_chart(os.path.join(OUT, "throughput.svg"), "threaded_http: requests per second (wrk, keep-alive)",
          "requests / s", "rps", False)
svg_chart(os.path.join(OUT, "latency.svg"), "threaded_http: p99 latency (wrk, keep-alive)",
          "p99 latency, ms (log scale)", "p99", True)
bench_servers_report.svg(SRV, os.path.join(OUT, "servers.svg"))

# ---------------------------------------------------------------- markdown
L = []
a = L.append
a("# corun benchmarks")
a("")
a(f"Generated by `make bench` (`scripts/bench.sh`, rendered by `scripts/bench_report.py`) "
  f"on {meta.get('date', '?')} in {int(meta.get('elapsed', '0')) // 60} min {int(meta.get('elapsed', '0')) % 60} s. "
  "Regenerated on every run; do not edit by hand. Every ratio below is computed from figures of this one run.")
if meta.get("quick") == "1":
    a("")
    a("**Quick run (BENCH_QUICK=1 or shortened settings): figures are indicative only.**")
a("")
a("| machine | |")
a("|---|---|")
for k, label in (("cpu", "CPU"), ("cpus", "CPUs"), ("mem", "memory"), ("kernel", "kernel"), ("glibc", "glibc"),
                 ("gcc", "gcc"), ("rustc", "rustc"), ("wrk", "wrk"), ("commit", "corun commit"),
                 ("nofile", "RLIMIT_NOFILE"), ("hwcounters", "hardware perf counters"),
                 ("load_start", "load average at start (1, 5, 15 min)"), ("load_end", "load average at end"),
                 ("procs_start", "processes at start")):
    a(f"| {label} | {meta.get(k, '?')} |")
a("")
# Did pthread_create make coroutines (transparent mode) in this build?
corun_thr = [x["thr"] for (g, v, c), x in wrk.items() if v in ("corun1", "corunN") and c >= 1000]
if corun_thr:
    most = max(corun_thr)
    if most > NCPU + 4:
        a(f"**Transparent mode was not active in this build:** threaded_http under corun had up to {most:,} kernel "
          "threads, i.e. `pthread_create` still made a kernel thread per connection. The corun rows below therefore "
          "measure corun's I/O hooks on native threads, not connections as coroutines; rerun `make bench` on a build "
          "with transparent `pthread_create` for the real comparison.")
    else:
        a(f"Transparent mode was active: threaded_http under corun had at most {most} kernel threads "
          f"(workers plus corun's helper threads) at 1,000 and 10,000 connections.")
    a("")
a(f"**Read this first.** The machine has {NCPU} CPUs and the load generator (wrk) runs on it too: "
  "client and server share the machine. Other work may run on it at the same time (see the load average above; "
  "a 10,000-thread server alone adds to it); repetitions and medians soften that, the min-max columns show it. In the *pinned* runs the server is confined to CPU 1 with `taskset` and wrk "
  "to CPU 0, so every server variant gets exactly one CPU (the fair comparison with the single-threaded epoll_http); "
  f"in the *shared* runs nothing is pinned and corun uses all {NCPU} workers, competing with wrk for the same CPUs. "
  "wrk is a closed-loop generator (each connection waits for its reply before sending the next request), so its "
  "latencies understate what an open-loop load would see once a server saturates. Traffic is over loopback.")
a("")
a("## Goals")
a("")
a("| goal | result | figure |")
a("|---|---|---|")
for t, r, f_ in goals:
    a(f"| {t} | {r} | {f_} |")
a("")

a("## Side by side: corun, Go and may")
a("")
a(f"Go {meta.get('go', '?')}: a raw `net.Conn` server with a goroutine per connection (`c-tests/go/http_server.go`) "
  "and `c-tests/go/micro.go`; may " + meta.get("may", "?") + ": the Rust stackful-coroutine runtime under "
  "may_minihttp, a coroutine per connection (`bench/may_http`). Both servers send threaded_http's exact bytes; "
  "every figure is from this run (the tables below have the details). Workers: CORUN_WORKERS, GOMAXPROCS, "
  "MAY_WORKERS. *n/a*: not measured in this run, or the program failed (the tables below say which; may maps a "
  "stack per coroutine and fails at 100,000 sleepers).")
a("")
a("| measure | corun | Go | may | corun ahead |")
a("|---|---|---|---|---|")


def peer_fig(v, unit):
    if v is None:
        return "n/a"
    if unit in ("ns", "ms"):
        return fmt_t(v, unit)
    if unit == "req/s":
        return f"{v:,.0f}"
    return f"{v:,.1f} {unit}"


for row in PEER_ROWS:
    label, unit, c, g_, y, _ = row
    ok = ahead(row)
    a(f"| {label} | {peer_fig(c, unit)} | {peer_fig(g_, unit)} | {peer_fig(y, unit)} | "
      f"{'n/a' if ok is None else ('yes' if ok else '**no**')} |")
a("")

a("## 1. Micro benchmarks")
a("")
a("Median of the trials (each trial times a whole loop and divides); min and max show the spread. corun's side is "
  "`c-tests/co_bench_micro.c` run under `LD_PRELOAD=libcorun.so`; the baselines are `c-tests/bench_baselines.c` run "
  "natively, in the same bench run.")
a("")
a("| operation | median | min | max |")
a("|---|---|---|---|")
rows = [
    ("pingpong_w1", "corun: yield round trip, two coroutines alternating on 1 worker (A -> B -> A)"),
    ("yield_alone", f"corun: corun_yield with nothing else runnable ({NCPU} workers; may return without switching)"),
    ("swapcontext", "baseline: swapcontext round trip (main -> B -> main)"),
    ("eventfd_pinned", "baseline: kernel-thread ping-pong over eventfd, both threads on one CPU"),
    ("eventfd_unpinned", "baseline: kernel-thread ping-pong over eventfd, unpinned"),
    ("spawn_w1", "corun: spawn + join of an empty coroutine, 1 worker"),
    ("spawn_wall", f"corun: spawn + join of an empty coroutine, {NCPU} workers (default)"),
    ("pthread", "baseline: pthread_create + pthread_join of an empty thread"),
    ("thread_spawn_w1", "corun: pthread_create + pthread_join, 1 worker, each thread its own TLS (default)"),
    ("thread_spawn_w1_shared", "corun: the same, threads sharing the worker's TLS (CORUN_TLS=worker)"),
    ("thread_yield_w1", "corun: two pthreads alternating with sched_yield, 1 worker, own TLS (default)"),
    ("thread_yield_w1_shared", "corun: the same, sharing the worker's TLS (CORUN_TLS=worker)"),
    ("sleepers_100k", f"corun: 100,000 coroutines each sleeping 1 ms, wall time ({NCPU} workers)"),
    ("sleepers_30k", "corun: 30,000 coroutines each sleeping 1 ms (run because 100,000 failed)"),
    ("sleepers_threads", "baseline: 100,000 kernel threads each sleeping 1 ms (64 KiB stacks), wall time"),
    ("chan_w1", "corun: unbuffered channel ping-pong round trip (corun_chan_send/recv), 1 worker"),
    ("chan_wall", f"corun: the same, {NCPU} workers (default: the two coroutines on different workers)"),
    ("go_chan", "baseline: Go unbuffered channel ping-pong round trip, GOMAXPROCS default (c-tests/go/chan_pingpong.go)"),
    ("go_chan_p1", "baseline: the same, GOMAXPROCS=1"),
    ("spawn_w2", "corun: spawn + join of an empty coroutine, 2 workers"),
    ("sleepers_w1", "corun: 100,000 coroutines each sleeping 1 ms, wall time, 1 worker"),
    ("sleepers_w2", "corun: the same, 2 workers"),
    ("go_pingpong_p1", "peer: Go, two goroutines alternating with runtime.Gosched, GOMAXPROCS=1 (c-tests/go/micro.go)"),
    ("go_pingpong_p2", "peer: the same, GOMAXPROCS=2"),
    ("go_spawn_p1", "peer: Go, go f() + wait on a channel, GOMAXPROCS=1"),
    ("go_spawn_p2", "peer: the same, GOMAXPROCS=2"),
    ("go_sleepers_p1", "peer: Go, 100,000 goroutines each sleeping 1 ms, GOMAXPROCS=1"),
    ("go_sleepers_p2", "peer: the same, GOMAXPROCS=2"),
    ("may_pingpong_w1", "peer: may, two coroutines alternating with yield_now, 1 worker (bench/may_http)"),
    ("may_pingpong_w2", "peer: the same, 2 workers"),
    ("may_spawn_w1", "peer: may, go! + join of an empty coroutine, 1 worker"),
    ("may_spawn_w2", "peer: the same, 2 workers"),
    ("may_sleepers_w1", "peer: may, 100,000 coroutines each sleeping 1 ms, 1 worker"),
    ("may_sleepers_w2", "peer: the same, 2 workers"),
    ("mutex_corun", "corun: corun_mutex_lock + unlock, uncontended, in a coroutine"),
    ("mutex_pthread", "corun: pthread_mutex_lock + unlock (interposed), uncontended, in a coroutine"),
    ("eventfd_threads_w1", "corun: two pthreads ping-ponging over eventfds (every read parks), 1 worker"),
    ("pshared_cond", "baseline: a turn handed between two processes (process-shared mutex + condition variable), round trip"),
    ("pshared_cond_w1", "corun: the same, the parent under corun with 1 worker (its waits on a blocking-pool helper)"),
]
for key, label in rows:
    if key in micro:
        x = micro[key]
        a(f"| {label} | {fmt_t(x['median'], x['unit'])} | {fmt_t(x['min'], x['unit'])} | {fmt_t(x['max'], x['unit'])} |")
    elif key in micro_failed:
        a(f"| {label} | **failed**: {micro_failed[key]} | | |")
a("")
a("Ratios (baseline median / corun median; above 1 means corun is faster):")
a("")
a(f"- yield round trip vs swapcontext: {fr(ratio(sw, pp))}")
a(f"- yield round trip vs eventfd ping-pong, pinned: {fr(ratio(ev, pp))}; unpinned: {fr(ratio(m('eventfd_unpinned'), pp))}")
a(f"- spawn+join vs pthread_create+join: {fr(ratio(pt, spN))} ({NCPU} workers), {fr(ratio(pt, sp1))} (1 worker)")
ts, tss, ty, tys = m("thread_spawn_w1"), m("thread_spawn_w1_shared"), m("thread_yield_w1"), m("thread_yield_w1_shared")
if None not in (ts, tss, ty, tys):
    a(f"- own TLS per thread costs: create+join {ts - tss:+.0f} ns ({fr(ratio(ts, tss), 2)}), "
      f"yield round trip {ty - tys:+.1f} ns ({fr(ratio(ty, tys), 2)}); pthread_create+join natively / corun: {fr(ratio(pt, ts))}")
if sl is not None:
    a(f"- 100,000 sleepers vs 100,000 kernel threads: {fr(ratio(m('sleepers_threads'), sl))}")
a(f"- eventfd ping-pong, native threads vs two pthreads parking under corun (1 worker): "
  f"{fr(ratio(m('eventfd_unpinned'), m('eventfd_threads_w1')), 2)}")
a(f"- process-shared condition variable turn, natively vs under corun (1 worker): "
  f"{fr(ratio(m('pshared_cond'), m('pshared_cond_w1')), 2)}")
a("")

a("## 2. Memory per idle connection")
a("")
a(f"{N_IDLE:,} keep-alive connections, each having made one request (reply checked byte by byte), then left idle "
  "in the server (`http_client idle`). Per connection: the server's RSS growth, and the drop of the machine's "
  "MemAvailable, which also counts kernel memory (thread stacks and task structs, socket buffers, page tables) and "
  "the client's own sockets (the same for every variant). Median of 3 runs; a fresh server each run.")
a("")
a("The last three columns are the growth of machine-wide counters of /proc/meminfo (kernel thread stacks, page "
  "tables, slab: socket and task structures), less noisy than MemAvailable, which other processes also move.")
a("")
a("| server | RSS per connection | MemAvailable drop per connection | KernelStack growth | PageTables growth | Slab growth | kernel threads with the connections open |")
a("|---|---|---|---|---|---|---|")
for v, label in (("native", "threaded_http, native threads"), ("corun", f"threaded_http under corun ({NCPU} workers)"),
                 ("epoll", "epoll_http (floor: no thread, no stack)"),
                 ("go", "Go raw net.Conn server (goroutine per connection)"),
                 ("may", "may (Rust coroutine per connection)"),
                 ("echo_native", "threaded_echo, native threads"),
                 ("echo_corun", f"threaded_echo under corun ({NCPU} workers)")):
    if v.startswith("echo") and v not in idle:
        continue
    if v in idle:
        thr = int(statistics.median(x[2] for x in idle[v]))
        a(f"| {label} | {idle_med(v, 0):,.1f} KiB | {idle_med(v, 1):,.1f} KiB | {idle_med(v, 3):,.1f} KiB | "
          f"{idle_med(v, 4):,.1f} KiB | {idle_med(v, 5):,.1f} KiB | {thr:,} |")
    else:
        a(f"| {label} | failed | failed | | | | |")
a("")
if "echo_corun" in idle and "echo_native" in idle:
    a(f"threaded_echo (main's thread-per-connection echo server, connections held by `scripts/hold_conns.py`, one "
      f"byte echoed on each): corun / native RSS {fr(ratio(idle_med('echo_corun', 0), idle_med('echo_native', 0)), 2)}, "
      f"MemAvailable {fr(ratio(idle_med('echo_corun', 1), idle_med('echo_native', 1)), 2)}.")
    a("")
a(f"threaded_http: corun / native: RSS {fr(ratio(idle_med('corun', 0), idle_med('native', 0)), 2)}, "
  f"MemAvailable {fr(ratio(ia_c, ia_n), 2)}. "
  f"Above the epoll_http floor: corun {((ia_c or 0) - (idle_med('epoll', 1) or 0)):,.1f} KiB, "
  f"native {((ia_n or 0) - (idle_med('epoll', 1) or 0)):,.1f} KiB per connection.")
a("")

a("## 3. HTTP load (wrk)")
a("")
a(f"`wrk -t {NCPU} -c CONNS -d {meta.get('duration', '10')}s --timeout 10s --latency` against "
  f"`GET /` on 127.0.0.1, keep-alive, {meta.get('body', '128')}-byte body, a fresh server per point. "
  "*errors* are wrk's socket errors (connect + read + write + timeout); *peak RSS* is the server's VmHWM; "
  "*threads* is the most kernel threads the server had (sampled every 0.5 s); *CPU* is the server's user+system "
  "CPU time during the run. Points of 1,000 connections or more ran several times (the repetitions go round the "
  "whole sweep): req/s, p50, p99 and CPU are medians, errors are summed, peak RSS and threads are the largest seen.")
a("")
a("![requests per second](throughput.svg)")
a("")
a("![p99 latency](latency.svg)")
a("")
for g, title in (("pinned", "Pinned: server on CPU 1, wrk on CPU 0 (every server gets one CPU)"),
                 ("shared", f"Shared: nothing pinned, corun with {NCPU} workers, wrk on the same CPUs")):
    a(f"### {title}")
    a("")
    a("| connections | server | req/s | (min-max, runs) | p50 | p99 | errors | non-2xx | peak RSS | threads | CPU s | req per CPU-s |")
    a("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for c in CONNS:
        for v in GROUP_VARIANTS[g]:
            x = wrk.get((g, v, c))
            if not x:
                continue
            eff = x["req"] / x["cpu"] if x["cpu"] > 0 else 0
            errs = "/".join(str(e) for e in x["errs"])
            a(f"| {c:,} | {VNAMES[v]} | {x['rps']:,.0f} | {x['rps_min']:,.0f}-{x['rps_max']:,.0f}, {x['n']} | {x['p50']:,.2f} ms | {x['p99']:,.2f} ms | "
              f"{x['err']:,}{'' if x['err'] == 0 else ' (' + errs + ')'} | {x['status']:,} | {x['hwm']:,.1f} MiB | "
              f"{x['thr']:,} | {x['cpu']:.1f} | {eff:,.0f} |")
    a("")
    cv = "corun1" if g == "pinned" else "corunN"
    a("Ratios from this table:")
    a("")
    for c in CONNS:
        parts = [f"corun/native req/s {fr(ratio(w(g, cv, c, 'rps'), w(g, 'native', c, 'rps')), 2)}",
                 f"corun/epoll_http req/s {fr(ratio(w(g, cv, c, 'rps'), w(g, 'epoll', c, 'rps')), 2)}",
                 f"p99 corun/native {fr(ratio(w(g, cv, c, 'p99'), w(g, 'native', c, 'p99')), 2)}",
                 f"peak RSS corun/native {fr(ratio(w(g, cv, c, 'hwm'), w(g, 'native', c, 'hwm')), 2)}"]
        a(f"- {c:,} connections: " + "; ".join(parts))
    a("")
died = os.path.join(RAW, "died.txt")
if os.path.exists(died):
    a("**Servers that died during a run:**")
    a("")
    a("```")
    a(open(died).read().rstrip())
    a("```")
    a("")
idle_fail = [v for v in idle_failed]
if idle_fail:
    a(f"Idle-connection runs that failed: {', '.join(idle_fail)}")
    a("")

a("## 4. MariaDB under sysbench")
a("")
MT = meta.get("mariadb_time", "30")
a(f"Debian's MariaDB {meta.get('mariadb', '')} (`mariadbd`, its default configuration: InnoDB on io_uring, "
  f"one thread per connection), a fresh datadir per run, then `sysbench {meta.get('sysbench', '')} oltp_read_write "
  f"--tables=4 --table-size=10000 --threads=64 --time={MT}` over 127.0.0.1; natively, then under corun ({NCPU} "
  "workers), in this bench run (`scripts/mariadb_sysbench.sh`). sysbench runs on the same machine. *ignored "
  "errors* are sysbench's deadlocks and lock wait timeouts (retried); *threads* the most kernel threads mariadbd "
  "had; *start* until it answers a ping; *shutdown* `mariadb-admin shutdown` until the process exited.")
a("")
a("| server | transactions/s | ignored errors | avg latency | p95 latency | threads | peak RSS | start | shutdown |")
a("|---|---|---|---|---|---|---|---|---|")
for v, label in (("native", "mariadbd, native threads"), ("corun", f"mariadbd under corun ({NCPU} workers)")):
    x = mdb.get(v)
    if x:
        a(f"| {label} | {float(x['tps']):,.1f} | {int(x['ignored']):,} | {float(x['lat_avg_ms']):,.1f} ms | "
          f"{float(x['lat_p95_ms']):,.1f} ms | {int(x['threads']):,} | {int(x['hwm_kib']) / 1024:,.0f} MiB | "
          f"{int(x['start_ms']) / 1000:.1f} s | {int(x['shutdown_ms']) / 1000:.1f} s |")
    elif v in mdb_failed:
        a(f"| {label} | **failed**: {mdb_failed[v]} | | | | | | | |")
    else:
        a(f"| {label} | (not run) | | | | | | | |")
a("")
if "native" in mdb and "corun" in mdb:
    a(f"corun / native: transactions/s {fr(ratio(float(mdb['corun']['tps']), float(mdb['native']['tps'])), 2)}, "
      f"p95 latency {fr(ratio(float(mdb['corun']['lat_p95_ms']), float(mdb['native']['lat_p95_ms'])), 2)}, "
      f"peak RSS {fr(ratio(int(mdb['corun']['hwm_kib']), int(mdb['native']['hwm_kib'])), 2)}. "
      f"corun wrote {mdb['corun'].get('corun_msgs', '0')} lines to the server's error log (watchdog: a coroutine "
      "held its worker over 100 ms; on a loaded machine also when the kernel did not run the worker).")
a("")

if SRV:
    L.extend(bench_servers_report.markdown(SRV, meta))
else:
    a("## 5. Real servers")
    a("")
    a("(not run: `BENCH_PARTS` without `servers`)")
    a("")

a("## 6. Where the time goes (perf)")
a("")
a("`perf record -e cpu-clock` (software clock sampling: this VM has no hardware counters when that column above "
  "says no), `perf report --no-children --sort dso,symbol`, entries above 1.5 %.")
a("")
perf = os.path.join(RAW, "perf.txt")
a(open(perf).read().rstrip() if os.path.exists(perf) else "(not run)")
a("")

a("## Commands")
a("")
a("```sh")
a("make bench                      # all of the below, about 17 minutes")
a("# micro (median of 5 trials per process):")
a("CORUN_WORKERS=1 LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro pingpong 2000000 5")
a("LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro yield 2000000 5")
a("c-tests/bin/bench_baselines swapcontext 2000000 5")
a("c-tests/bin/bench_baselines eventfd 100000 5 0      # pinned to CPU 0;  -1: unpinned")
a("CORUN_WORKERS=1 LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro spawn 100000 5")
a("LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro spawn 100000 5")
a("c-tests/bin/bench_baselines pthread 20000 5")
a("LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro sleepers 100000 1 5")
a("c-tests/bin/bench_baselines sleepers 100000 1 3")
a("CORUN_WORKERS=1 LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro chan 200000 5")
a("go build -o chan_pingpong c-tests/go/chan_pingpong.go && ./chan_pingpong 200000 5")
a("LD_PRELOAD=target/release/libcorun.so c-tests/bin/co_bench_micro mutex 2000000 5   # or pthread_mutex")
a("# idle memory:")
a(f"c-tests/bin/threaded_http PORT {meta.get('body', '128')} &   # or under LD_PRELOAD, or epoll_http")
a(f"c-tests/bin/http_client idle PORT {N_IDLE} {meta.get('body', '128')}")
a(f"MARIADB_TIME={MT} scripts/mariadb_sysbench.sh native LOGDIR   # or corun: a fresh mariadbd, sysbench, shutdown")
a("# wrk, pinned (shared: the same without taskset, CORUN_WORKERS=" + str(NCPU) + "):")
a(f"taskset -c 1 env CORUN_WORKERS=1 LD_PRELOAD=target/release/libcorun.so c-tests/bin/threaded_http PORT {meta.get('body', '128')} &")
a(f"taskset -c 0 wrk -t {NCPU} -c 1000 -d {meta.get('duration', '10')}s --timeout 10s --latency http://127.0.0.1:PORT/")
a("# real servers (installs the Debian packages it needs; SERVERS=\"apache redis\" for some):")
a("scripts/bench_servers.sh bench/raw    # appends bench/raw/servers.tsv")
a("```")
a("")
with open(os.path.join(OUT, "RESULTS.md"), "w") as f:
    f.write("\n".join(L) + "\n")
