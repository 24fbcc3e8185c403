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
import bench_chart  # noqa: E402
import bench_peers_report  # noqa: E402
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
    "libco1": "libco (C++ coroutines, hooked read/write), 1 thread",
    "libcoN": f"libco (C++ coroutines, hooked read/write), {NCPU} threads",
}
# The wrk variants of each group: threaded_http natively and under corun,
# epoll_http, and the two peers with as many threads as corun has workers.
GROUP_VARIANTS = {"pinned": ("native", "corun1", "epoll", "go1", "may1", "libco1"),
                  "shared": ("native", "corunN", "epoll", "goN", "mayN", "libcoN")}


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

# Side by side with the peers (issue 14): scripts/bench_peers_report.py.
def cpu_us(g, v, c):
    x = wrk.get((g, v, c))
    return None if not x or not x["req"] or x["cpu"] <= 0 else x["cpu"] / x["req"] * 1e6


PEER_ROWS = bench_peers_report.rows(m, w, cpu_us, idle_med, NCPU)
ahead = bench_peers_report.ahead


sp2 = m("spawn_w2")
goal("spawn+join with 2 workers at most 400 ns (issue 14)", cmp(sp2, 400.0, lambda a, b: a <= b),
     f"{fmt_t(sp2, 'ns')}; Go {fmt_t(m('go_spawn_p2'), 'ns')}")
goal(f"100,000 sleepers with the default workers ({NCPU}) within 100 ms (issue 14)",
     cmp(sl, 100.0, lambda a, b: a <= b), sl_fig)
behind = [r[0] for r in PEER_ROWS if ahead(r) is False]
goal("ahead of Go, may and libco on every row of the side-by-side table (issue 14)",
     None if all(ahead(r) is None for r in PEER_ROWS) else not behind,
     "behind on: " + "; ".join(behind) if behind else "ahead on every row with figures")

SRV = bench_servers_report.figures(RAW)
for t_, ok_, fig_ in bench_servers_report.goals(SRV):
    goal(t_, ok_, fig_)

# ---------------------------------------------------------------- SVG
COLORS = {"native": "#d62728", "corun1": "#1f77b4", "corunN": "#17becf", "epoll": "#2ca02c",
          "go1": "#9467bd", "goN": "#9467bd", "may1": "#ff7f0e", "mayN": "#ff7f0e",
          "libco1": "#8c564b", "libcoN": "#8c564b"}
SERIES = [(g, v) for g in ("pinned", "shared") for v in GROUP_VARIANTS[g]]


CHART_NAMES = {"native": "native threads", "corun1": "corun, 1 worker", "corunN": f"corun, {NCPU} workers",
               "epoll": "epoll_http", "go1": "Go, GOMAXPROCS=1", "goN": f"Go, GOMAXPROCS={NCPU}",
               "may1": "may, 1 worker", "mayN": f"may, {NCPU} workers",
               "libco1": "libco, 1 thread", "libcoN": f"libco, {NCPU} threads"}


def svg_chart(path, title, ylabel, key, logy):
    bench_chart.line_chart(path, title, ylabel, SERIES, CONNS, lambda g, v, c: w(g, v, c, key), COLORS,
                           CHART_NAMES, logy)


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

L.extend(bench_peers_report.markdown(PEER_ROWS, meta, fmt_t))

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
    ("libco_pingpong_w1", "peer: libco, co_resume of a coroutine that co_yield_ct()s back (bench/libco)"),
    ("libco_spawn_w1", "peer: libco, co_create + co_resume of an empty coroutine + co_release"),
    ("libco_sleepers_w1", "peer: libco, 100,000 coroutines each waiting 1 ms in co_poll (64 KiB stacks)"),
    ("mutex_corun", "corun: corun_mutex_lock + unlock, uncontended, in a coroutine"),
    ("mutex_pthread", "corun: pthread_mutex_lock + unlock (interposed), uncontended, in a coroutine"),
    ("eventfd_threads_w1", "corun: two pthreads ping-ponging over eventfds (every read parks), 1 worker"),
    ("pshared_cond", "baseline: a turn handed between two processes (process-shared mutex + condition variable), round trip"),
    ("pshared_cond_w1", "corun: the same, the parent under corun with 1 worker (its waits on a blocking-pool helper)"),
    ("exec_native", "baseline: posix_spawn + waitpid of /bin/true, natively (a process's start and end)"),
    ("exec_corun", "corun: the same, the child under corun (LD_PRELOAD; the parent native)"),
    ("fork_native", "baseline: fork, the child echoes 5 bytes over a socketpair and exits, waitpid (a fork-per-connection server's child)"),
    ("fork_corun", "corun: the same program under corun (it forks from a coroutine)"),
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
xn, xc = m("exec_native"), m("exec_corun")
if None not in (xn, xc):
    a(f"- a process's start and end (/bin/true), natively / under corun: {fr(ratio(xn, xc), 2)} "
      f"(corun adds {(xc - xn) / 1000:.0f} us a process)")
fn, fc = m("fork_native"), m("fork_corun")
if None not in (fn, fc):
    a(f"- a forked child that echoes 5 bytes and exits, natively / under corun: {fr(ratio(fn, fc), 2)} "
      f"(corun adds {(fc - fn) / 1000:.0f} us a child)")
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
                 ("libco", "libco (C++ coroutine per connection, 128 KiB stacks)"),
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
a("scripts/build_libco.sh target/bench-peers/libco   # LIBCO_SRC=checkout without network")
a("target/bench-peers/libco/libco_micro pingpong 2000000 5   # spawn 100000 5 | sleepers 100000 1 5")
a("LIBCO_THREADS=1 target/bench-peers/libco/libco_http PORT 128 &   # libco's wrk server")
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
