# open and the stat family answered from the kernel's caches inline, only
# true misses on the blocking pool (src/hooks/cached.rs):
#  1. c-tests/file_cached.c (open, openat, stat, lstat, fstatat, statx on
#     files, directories, symlinks, missing names, paths through a file,
#     from 4 threads) prints the same transcript natively and under corun,
#     pool-bound calls included;
#  2. once the paths were looked up, the same calls under corun make no
#     blocking-pool hand-off (CORUN_STATS) and start no helper thread, and
#     strace sees a plain openat/stat of those paths only where the thread
#     had found that path with openat2(RESOLVE_CACHED) just before;
#  3. the process's only coroutine (no thread made) never hands off either:
#     a call there may block its worker, as natively.
source "$(dirname "$0")/../lib.sh"
d="$TMPD/tree"
mkdir -p "$d/sub"
head -c 600 /dev/zero >"$d/file"
: >"$d/sub/inner"
ln -s file "$d/link"
ln -s sub "$d/dirlink"
ln -s nowhere "$d/dangling"
ln -s loop2 "$d/loop1"
ln -s loop1 "$d/loop2"
mkfifo "$d/fifo"

same_transcript file_cached "$d" all
grep -q "4 threads: same results" "$TMPD/file_cached.native" || fail "threads disagree natively"
echo "transcript: $(wc -l <"$TMPD/file_cached.native") lines, same natively and under corun"

# The native run looked every path up: the dentry cache has them now,
# negative entries included. A cache can still drop an entry between runs
# (memory pressure): three tries.
stats_run() { # extra-args... -> $TMPD/stats
    env CORUN_STATS=1 LD_PRELOAD="$LIB" "$BIN/file_cached" "$d" "$@" >/dev/null 2>"$TMPD/stats" \
        || fail "file_cached failed under corun: $(cat "$TMPD/stats")"
}
jobs_of() { sed -n 's/.*blocking-pool jobs: \([0-9]*\);.*/\1/p' "$TMPD/stats"; }
for try in 1 2 3; do
    stats_run cached
    [ "$(jobs_of)" = 0 ] && break
    [ "$try" = 3 ] && fail "cached answers went to the blocking pool: $(cat "$TMPD/stats")"
done
grep -q "blocking-pool threads: 0" "$TMPD/stats" || fail "a helper thread started: $(cat "$TMPD/stats")"
inline=$(sed -n "s/.*answered from the kernel's caches: \([0-9]*\)/\1/p" "$TMPD/stats")
[ "${inline:-0}" -gt 1000 ] || fail "expected >1000 inline answers, got ${inline:-none}"
echo "cached run: 0 hand-offs, $inline answers inline"

strace -f -qq -e trace=openat,openat2,newfstatat,statx -o "$TMPD/strace" \
    env LD_PRELOAD="$LIB" "$BIN/file_cached" "$d" cached >/dev/null 2>&1 || fail "file_cached failed under strace"
# Plain calls on the test paths (absolute ones, or relative to an fd: the
# program's dirfd; the inline stats use an empty path with AT_EMPTY_PATH)
# are allowed only where the same thread found that path in the caches
# just before (src/hooks/path_memo.rs): a successful openat2 of the same
# dirfd and path earlier in the trace, by the same thread.
plain=$(python3 - "$TMPD/strace" "$d" <<'PY'
import re, sys
trace, d = sys.argv[1], sys.argv[2]
call = re.compile(r'^(\d+) (openat2|openat|newfstatat|statx)\(([^,]+), "([^"]*)"(.*)$')
resumed = re.compile(r'^(\d+) <\.\.\. openat2 resumed>.*= (-?\d+)')
seen, pending, plain, bad = set(), {}, 0, []
for line in open(trace):
    m = resumed.match(line)
    if m:
        if m.group(1) in pending and int(m.group(2)) >= 0:
            seen.add(pending.pop(m.group(1)))
        continue
    m = call.match(line)
    if not m:
        continue
    pid, name, dirfd, path, rest = m.groups()
    key = (pid, dirfd, path)
    if name == "openat2":
        if "<unfinished" in rest:
            pending[pid] = key
        elif re.search(r"= \d+", rest):
            seen.add(key)
        continue
    if not (path.startswith(d) or (dirfd.isdigit() and path)):
        continue
    plain += 1
    if key not in seen:
        bad.append(line.strip())
if bad:
    print("BAD", len(bad), bad[0])
else:
    print(plain)
PY
)
n2=$(grep -c 'openat2(' "$TMPD/strace" || true)
case "$plain" in BAD*) fail "plain openat/stat of a test path the thread had not found cached: $plain";; esac
[ "$n2" -gt 200 ] || fail "expected the inline openat2 attempts, saw $n2"
echo "strace: $n2 openat2(RESOLVE_CACHED); $plain plain calls, each of a path its thread had just found cached"

# Pool-bound calls (a FIFO's open, O_CREAT, a name too long...) from the
# process's only coroutine: made inline, no helper thread.
env CORUN_STATS=1 LD_PRELOAD="$LIB" "$BIN/file_cached" "$d" all main >"$TMPD/main.corun" 2>"$TMPD/stats" \
    || fail "file_cached (main) failed under corun: $(cat "$TMPD/stats")"
"$BIN/file_cached" "$d" all main >"$TMPD/main.native" || fail "file_cached (main) failed natively"
diff -u "$TMPD/main.native" "$TMPD/main.corun" || fail "main-only transcript differs"
[ "$(jobs_of)" = 0 ] || fail "the only coroutine handed calls off: $(cat "$TMPD/stats")"
grep -q "blocking-pool threads: 0" "$TMPD/stats" || fail "a helper thread started for the only coroutine"
ok "open/stat: cached answers inline and identical to native; only misses on the pool"
