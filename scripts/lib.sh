# Shared helpers for scripts/tests/*.sh, scripts/demo.sh and scripts/bench.sh.
# shellcheck shell=bash
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIB="$ROOT/target/release/libcorun.so"
BIN="$ROOT/c-tests/bin"
TMPD="$(mktemp -d /tmp/corun-test.XXXXXX)"
_cleanup() {
    local pids
    pids=$(jobs -p 2>/dev/null || true)
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$TMPD"
}
trap _cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# Runs a command under corun. For a background server whose pid you need,
# write LD_PRELOAD="$LIB" cmd & instead ($! is then the program itself).
corun() ( export LD_PRELOAD="$LIB"; exec "$@" )

# A free TCP port on 127.0.0.1.
# PORT_RANGE=LO-HI (e.g. 25000-25999) keeps to those ports, on a machine
# shared by several runs; otherwise the kernel picks an ephemeral one.
free_port() {
    PORT_RANGE=${PORT_RANGE:-} python3 - <<'PY'
import os, random, socket
lo, _, hi = os.environ["PORT_RANGE"].partition("-")
for _ in range(200):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randint(int(lo), int(hi)) if lo else 0))
    except OSError:
        continue
    finally:
        port = s.getsockname()[1]
        s.close()
    print(port)
    break
PY
}

# Waits until 127.0.0.1:$1 accepts connections (up to ~10 s).
wait_port() {
    for _ in $(seq 1 200); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
        sleep 0.05
    done
    fail "nothing listens on port $1"
}

# Number of kernel threads of a pid.
# A web root DIR/htdocs holding a 600-byte static page (index.html) that
# any server user can read; sets FILE_MD5 to the page's md5sum line (the
# real servers of make bench and servers_paired.sh serve it).
make_web_root() {
    mkdir -p "$1/htdocs"
    chmod 755 "$TMPD" "$1" "$1/htdocs"
    head -c 450 /dev/urandom | base64 -w 76 | head -c 600 >"$1/htdocs/index.html"
    chmod 644 "$1/htdocs/index.html"
    FILE_MD5=$(md5sum <"$1/htdocs/index.html")
}

nthreads() { ls "/proc/$1/task" | wc -l; }
# RSS of a pid in KiB.
rss_kib() { awk '/^VmRSS/{print $2}' "/proc/$1/status"; }

# Runs "$BIN/$1" natively and under corun (one worker, so a call that
# blocked instead of parking would show: see c-tests/transcript.h) and
# fails unless both transcripts are identical and both runs exit 0. Extra
# arguments go to the program.
same_transcript() {
    local prog="$1"; shift
    "$BIN/$prog" "$@" >"$TMPD/$prog.native" 2>"$TMPD/$prog.native.err" \
        || fail "$prog failed natively: $(cat "$TMPD/$prog.native.err")"
    # A wait reported "NOT PARKED" may be a loaded machine that did not run
    # the worker at all during the wait: a call that really blocks its
    # worker does so every time, so up to three runs are allowed.
    local try
    for try in 1 2 3; do
        if CORUN_WORKERS=1 corun "$BIN/$prog" "$@" >"$TMPD/$prog.corun" 2>"$TMPD/$prog.corun.err"; then
            break
        fi
        grep -q "NOT PARKED" "$TMPD/$prog.corun.err" && [ "$try" -lt 3 ] && continue
        fail "$prog failed under corun: $(cat "$TMPD/$prog.corun.err")"
    done
    diff -u "$TMPD/$prog.native" "$TMPD/$prog.corun" \
        || fail "$prog: the transcript under corun differs from the native one"
    [ -s "$TMPD/$prog.native" ] || fail "$prog printed nothing"
}

# same_everywhere NAME CMD...: runs CMD natively, then under corun with
# CORUN_THREADS=native (interposition off), with one worker and with the
# default number of workers, each bounded by $RUN_TIMEOUT seconds
# (60 unless set); fails unless every run exits $WANT_RC (0 unless set) and
# prints on stdout exactly what the native run printed, which must not be
# empty. Outputs: $TMPD/NAME.{native,off,w1,wdef}[.err].
same_everywhere() {
    local name=$1; shift
    local mode rc out
    for mode in native off w1 wdef; do
        out="$TMPD/$name.$mode"
        rc=0
        case $mode in
            native) timeout -k 5 "${RUN_TIMEOUT:-60}" "$@" >"$out" 2>"$out.err" || rc=$? ;;
            off) timeout -k 5 "${RUN_TIMEOUT:-60}" env CORUN_THREADS=native LD_PRELOAD="$LIB" "$@" >"$out" 2>"$out.err" || rc=$? ;;
            w1) timeout -k 5 "${RUN_TIMEOUT:-60}" env -u CORUN_THREADS CORUN_WORKERS=1 LD_PRELOAD="$LIB" "$@" >"$out" 2>"$out.err" || rc=$? ;;
            wdef) timeout -k 5 "${RUN_TIMEOUT:-60}" env -u CORUN_THREADS -u CORUN_WORKERS LD_PRELOAD="$LIB" "$@" >"$out" 2>"$out.err" || rc=$? ;;
        esac
        # The first lines that differ, to see how a run failed.
        [ "$mode" = native ] || diff -u "$TMPD/$name.native" "$out" | head -40 >&2 || true
        [ "$rc" = 124 ] && fail "$name ($mode): still running after ${RUN_TIMEOUT:-60} s; stdout: $(tail -3 "$out"); stderr: $(tail -3 "$out.err")"
        [ "$rc" = "${WANT_RC:-0}" ] || fail "$name ($mode): exit $rc, expected ${WANT_RC:-0}; stdout: $(tail -5 "$out"); stderr: $(tail -5 "$out.err")"
        [ -s "$TMPD/$name.native" ] || fail "$name printed nothing natively"
        cmp -s "$TMPD/$name.native" "$out" || fail "$name ($mode): output under corun differs from the native one; stderr: $(tail -3 "$out.err")"
    done
}

# Runs "$BIN/$1" with the environment settings that follow the run's name
# $2 (VAR=VALUE..., e.g. LD_PRELOAD="$LIB"), for at most 60 s, and fails
# unless it exits 0 having printed exactly "$TMPD/$1.want".
expect_output() {
    local prog=$1 tag=$2; shift 2
    local rc=0 out="$TMPD/$prog.$tag"
    timeout -k 5 60 env "$@" "$BIN/$prog" >"$out" 2>"$out.err" || rc=$?
    [ $rc = 0 ] || fail "$prog ($tag): exit $rc$([ $rc = 124 ] && echo ', hung'): $(tail -3 "$out.err")"
    diff -u "$TMPD/$prog.want" "$out" || fail "$prog ($tag): not the expected output"
}

# Runs "$@" natively, then under corun with one worker and with the
# default, each bounded by $RUN_TIMEOUT seconds (default 60): every run must
# exit 0 and print (stdout) what the native run printed. Leaves the outputs
# in $TMPD/native and $TMPD/corun.1, $TMPD/corun.default; prints one line
# per corun run.
same_output_native_and_corun() {
    local t="${RUN_TIMEOUT:-60}" w t0 ms
    timeout "$t" "$@" >"$TMPD/native" 2>"$TMPD/native.err" \
        || fail "natively: $(cat "$TMPD/native" "$TMPD/native.err")"
    for w in 1 default; do
        t0=$(date +%s%N)
        if [ "$w" = default ]; then
            timeout "$t" env LD_PRELOAD="$LIB" "$@" >"$TMPD/corun.$w" 2>"$TMPD/corun.err" \
                || fail "workers=$w: $(cat "$TMPD/corun.$w" "$TMPD/corun.err")"
        else
            CORUN_WORKERS=$w timeout "$t" env LD_PRELOAD="$LIB" "$@" >"$TMPD/corun.$w" 2>"$TMPD/corun.err" \
                || fail "workers=$w: $(cat "$TMPD/corun.$w" "$TMPD/corun.err")"
        fi
        ms=$(( ($(date +%s%N) - t0) / 1000000 ))
        diff -u "$TMPD/native" "$TMPD/corun.$w" || fail "workers=$w: the output differs from the native one"
        ok "workers=$w: $(wc -l <"$TMPD/corun.$w") lines as natively ($ms ms)"
    done
}

# slow_dns_namespace DELAY: makes the calling test script run (again) in a
# network and mount namespace of its own, where 127.0.0.1:53 is the test's
# DNS server (scripts/tests/data/slow_dns.py, answering after DELAY
# seconds) and a private bind mount of /etc/resolv.conf names it; the
# machine's own configuration is never touched. Call it first thing: the
# script is executed anew inside (IN_TEST_NAMESPACE=1), and returns there
# with the server ready. Without unshare or root it says SKIP and exits 0.
slow_dns_namespace() {
    if [ "${IN_TEST_NAMESPACE:-}" != 1 ]; then
        command -v unshare >/dev/null 2>&1 || { echo "SKIP: $(basename "$0" .sh) needs unshare (util-linux)"; exit 0; }
        command -v ip >/dev/null 2>&1 || { echo "SKIP: $(basename "$0" .sh) needs ip (iproute2)"; exit 0; }
        unshare --net --mount true 2>/dev/null \
            || { echo "SKIP: $(basename "$0" .sh) cannot make a network and mount namespace here (needs root): $(unshare --net --mount true 2>&1 | head -1)"; exit 0; }
        rm -rf "$TMPD"
        IN_TEST_NAMESPACE=1 exec unshare --net --mount bash "$0"
    fi
    ip link set lo up
    printf 'nameserver 127.0.0.1\noptions timeout:10 attempts:1\n' >"$TMPD/resolv.conf"
    mount --bind "$TMPD/resolv.conf" /etc/resolv.conf
    printf 'hosts: files dns\n' >"$TMPD/nsswitch.conf"
    mount --bind "$TMPD/nsswitch.conf" /etc/nsswitch.conf
    python3 "$ROOT/scripts/tests/data/slow_dns.py" "$1" >"$TMPD/dns.out" 2>"$TMPD/dns.err" &
    for _ in $(seq 1 100); do grep -q ready "$TMPD/dns.out" && break; sleep 0.05; done
    grep -q ready "$TMPD/dns.out" || fail "the DNS server did not start: $(cat "$TMPD/dns.err")"
}
