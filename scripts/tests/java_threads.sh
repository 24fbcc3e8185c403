# A threaded Java program (c-tests/java/Threads.java: thread pool, latch,
# ConcurrentHashMap, ThreadLocal, synchronized wait/notify) and
# `java -version` give the same output natively and under corun, with one
# worker and the default number. The JVM keeps per-thread state in C++
# thread_locals and waits on futexes and condition variables: before
# threads had their own TLS it aborted at start.
source "$(dirname "$0")/../lib.sh"
command -v javac >/dev/null || "$ROOT/scripts/deps.sh"
command -v javac >/dev/null || fail "javac not found"
javac -d "$TMPD" "$ROOT/c-tests/java/Threads.java" || fail "javac"
RUN_TIMEOUT=90 same_everywhere threads java -Xshare:auto -cp "$TMPD" Threads
ok "Threads.java: $(tr '\n' ';' <"$TMPD/threads.native")"
# java -version prints on stderr.
java -version 2>"$TMPD/v.native" || fail "java -version natively"
for w in 1 2; do
    CORUN_WORKERS=$w timeout -k 5 60 env LD_PRELOAD="$LIB" java -version 2>"$TMPD/v.$w" \
        || fail "java -version, workers=$w: exit $?: $(tail -3 "$TMPD/v.$w")"
    diff -u "$TMPD/v.native" <(grep -v '^corun: worker .* stalled' "$TMPD/v.$w") \
        || fail "java -version, workers=$w: differs"
done
ok "java -version: same natively and under corun"
