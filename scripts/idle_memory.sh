#!/usr/bin/env bash
# idle_memory.sh [N]: memory of c-tests/threaded_echo with N (default
# 10,000) idle connections, natively and under corun with several thread
# stack sizes. Prints, per run: kernel threads, server RSS, the machine's
# MemAvailable drop (which includes kernel memory: thread stacks, sockets,
# page tables; the client's sockets are in every run alike), and mappings.
source "$(dirname "$0")/lib.sh"
N=${1:-10000}
ulimit -n 20000
# MemAvailable after the kernel settled (freed sockets, caches dropped when
# allowed): the median of three readings a quarter second apart.
avail() {
    sync; { echo 3 >/proc/sys/vm/drop_caches; } 2>/dev/null || true
    for _ in 1 2 3; do awk '/^MemAvailable/{print $2}' /proc/meminfo; sleep 0.25; done | sort -n | sed -n 2p
}
measure() { # LABEL ENV...
    local label=$1; shift
    local port; port=$(free_port)
    # Wait until the previous run's memory is back (within 4 MiB for 1 s).
    local before prev; prev=$(avail)
    for _ in $(seq 1 30); do
        sleep 1; before=$(avail)
        [ $(( before > prev ? before - prev : prev - before )) -lt 4096 ] && break
        prev=$before
    done
    env "$@" "$BIN/threaded_echo" "$port" 2>/dev/null &
    local srv=$!
    wait_port "$port"
    rm -f "$TMPD/ready"
    python3 "$ROOT/scripts/hold_conns.py" 127.0.0.1 "$port" "$N" "$TMPD/ready" &
    local holder=$!
    for _ in $(seq 1 1200); do [ -s "$TMPD/ready" ] && break; sleep 0.1; done
    sleep 1
    local after; after=$(avail)
    printf '%-30s threads %5d  RSS %4d MiB  page tables %4d MiB  MemAvailable drop %4d MiB  maps %5d  VSZ %6d MiB\n' \
        "$label" "$(nthreads "$srv")" $(( $(rss_kib "$srv") / 1024 )) \
        $(( $(awk '/^VmPTE/{print $2}' "/proc/$srv/status") / 1024 )) $(( (before - after) / 1024 )) \
        "$(wc -l <"/proc/$srv/maps")" $(( $(awk '/^VmSize/{print $2}' "/proc/$srv/status") / 1024 ))
    kill "$holder" "$srv"; wait "$holder" "$srv" 2>/dev/null || true
}
echo "threaded_echo, $N idle connections (one 16 KiB read buffer on each thread's stack)"
for round in 1 2; do
    measure "corun, default (8 MiB)" LD_PRELOAD="$LIB"
    measure "corun, CORUN_STACK_SIZE=1m" LD_PRELOAD="$LIB" CORUN_STACK_SIZE=1m
    measure "corun, CORUN_STACK_SIZE=256k" LD_PRELOAD="$LIB" CORUN_STACK_SIZE=256k
    measure "native (8 MiB stacks)" X=1
done
