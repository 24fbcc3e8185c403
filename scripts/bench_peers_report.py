"""The side-by-side table of bench/RESULTS.md (scripts/bench_report.py):
corun next to the field's coroutine runtimes, every figure from the same
bench run: Go (goroutines), may (Rust) and libco (Tencent's C++ library).

Each row is (label, unit, corun, {peer: figure}, higher is better); a peer
without a figure (not built, failed, or a row it cannot have: libco runs
its coroutines on one thread only) shows n/a and is left out of "ahead".
"""

PEERS = ("Go", "may", "libco")


def rows(m, w, cpu_us, idle_med, ncpu):
    """The rows, from the report's accessors of the micro, wrk and idle figures."""
    def srv(group, key, conns, corun, go, may, libco):
        return (w(group, corun, conns, key), {"Go": w(group, go, conns, key),
                                                "may": w(group, may, conns, key),
                                                "libco": w(group, libco, conns, key)})

    def cpu(corun, go, may, libco):
        return cpu_us("pinned", corun, 1000), {"Go": cpu_us("pinned", go, 1000), "may": cpu_us("pinned", may, 1000),
                                                "libco": cpu_us("pinned", libco, 1000)}

    def micro(corun, go, may, libco):
        return m(corun), {"Go": m(go), "may": m(may), "libco": m(libco) if libco else None}

    out = [
        ("req/s at 1,000 connections (server on 1 CPU)", "req/s",
         *srv("pinned", "rps", 1000, "corun1", "go1", "may1", "libco1"), True),
        (f"req/s at 1,000 connections ({ncpu} threads, CPUs shared)", "req/s",
         *srv("shared", "rps", 1000, "corunN", "goN", "mayN", "libcoN"), True),
        ("server CPU per request at 1,000 connections (1 CPU)", "us", *cpu("corun1", "go1", "may1", "libco1"), False),
        ("p50 at 10,000 connections (1 CPU)", "ms", *srv("pinned", "p50", 10000, "corun1", "go1", "may1", "libco1"),
         False),
        ("p99 at 10,000 connections (1 CPU)", "ms", *srv("pinned", "p99", 10000, "corun1", "go1", "may1", "libco1"),
         False),
        ("memory per idle keep-alive connection (server RSS)", "KiB", idle_med("corun", 0),
         {"Go": idle_med("go", 0), "may": idle_med("may", 0), "libco": idle_med("libco", 0)}, False),
        ("yield round trip, 1 worker", "ns", *micro("pingpong_w1", "go_pingpong_p1", "may_pingpong_w1",
                                                     "libco_pingpong_w1"), False),
        ("spawn+join, 1 worker", "ns", *micro("spawn_w1", "go_spawn_p1", "may_spawn_w1", "libco_spawn_w1"), False),
        ("spawn+join, 2 workers", "ns", *micro("spawn_w2", "go_spawn_p2", "may_spawn_w2", None), False),
        ("100,000 x sleep 1 ms, 2 workers", "ms", *micro("sleepers_w2", "go_sleepers_p2", "may_sleepers_w2", None),
         False),
        ("100,000 x sleep 1 ms, 1 worker", "ms", *micro("sleepers_w1", "go_sleepers_p1", "may_sleepers_w1",
                                                         "libco_sleepers_w1"), False),
    ]
    return out


def ahead(row):
    """Whether corun beats every peer that has a figure (None: no corun figure)."""
    _, _, c, peers, hi = row
    if c is None:
        return None
    return all(p is None or (c > p if hi else c < p) for p in peers.values())


def markdown(rws, meta, fmt_t):
    """The section's lines."""
    def fig(v, unit):
        if v is None:
            return "n/a"
        if unit in ("ns", "ms"):
            return fmt_t(v, unit)
        if unit == "req/s":
            return f"{v:,.0f}"
        return f"{v:,.1f} {unit}"

    L = ["## Side by side: corun, Go, may and libco", "",
         f"Go {meta.get('go', '?')}: a raw `net.Conn` server with a goroutine per connection "
         "(`c-tests/go/http_server.go`) and `c-tests/go/micro.go`; may " + meta.get("may", "?") + ": the Rust "
         "stackful-coroutine runtime under may_minihttp, a coroutine per connection (`bench/may_http`); libco "
         + meta.get("libco", "?") + ": Tencent's C++ stackful-coroutine library, its event loop per thread with a "
         "coroutine per connection whose blocking `read`/`write` its system-call hooks turn into waits "
         "(`bench/libco`, as its example server is written). All three servers send threaded_http's exact bytes; "
         "every figure is from this run (the tables below have the details). Workers: CORUN_WORKERS, GOMAXPROCS, "
         "MAY_WORKERS, LIBCO_THREADS. *n/a*: not measured in this run, or the program failed (the tables below "
         "say which; may maps a stack per coroutine and fails at 100,000 sleepers; libco cannot run a coroutine "
         "on another thread, so it has no 2-worker micro rows, and its source comes from a clone of its "
         "repository: without network it is not built).", "",
         "| measure | corun | " + " | ".join(PEERS) + " | corun ahead |",
         "|---|---|" + "---|" * len(PEERS) + "---|"]
    for row in rws:
        label, unit, c, peers, _ = row
        ok = ahead(row)
        L.append(f"| {label} | {fig(c, unit)} | " + " | ".join(fig(peers[p], unit) for p in PEERS) +
                 f" | {'n/a' if ok is None else ('yes' if ok else '**no**')} |")
    L.append("")
    return L
