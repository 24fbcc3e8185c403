# On a machine of many CPUs (CORUN_WORKERS defaults to their number) a
# program's fds are numbered as natively, and a process that never makes
# a thread holds no fds for workers it does not use. Each worker has an
# epoll instance and an eventfd, kept high (below 1,024) in a window of
# 64 numbers: with 64 workers, 128 such fds did not fit, the rest fell to
# the lowest free numbers, and the program's first dup(0) gave 68 instead
# of 3 (200 workers: 341). Every process also made all of them at start
# (a /bin/true under CORUN_WORKERS=64: 653 system calls instead of 92).
# Now a worker opens its two fds when its thread starts, and the window
# grows with the number of workers. Run with the common soft limit of
# 1,024 fds, 2, 64 and 200 workers.
source "$(dirname "$0")/../lib.sh"
ulimit -n 1024
prog="$BIN/fd_numbers_many_cpus"
native=$(timeout 60 "$prog" | head -1)
[ "$native" = "fds 3 4 5 6 7" ] || fail "natively: $native"
native_open=$(timeout 60 "$prog" 0 | sed -n 's/^open //p')
for w in 2 64 200; do
    out=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 60 "$prog") || fail "$w workers: exit $?: $out"
    [ "$(echo "$out" | head -1)" = "$native" ] \
        || fail "$w workers: the program's fds were $(echo "$out" | head -1), natively $native"
    # Alone (no thread): the native count and at most 4 of corun's own
    # (worker 0's epoll and eventfd, the dump's eventfd, one more).
    lone=$(CORUN_WORKERS=$w LD_PRELOAD="$LIB" timeout 60 "$prog" 0) || fail "$w workers, no thread: exit $?"
    n=$(echo "$lone" | sed -n 's/^open //p')
    [ "$(echo "$lone" | head -1)" = "$native" ] || fail "$w workers, no thread: $(echo "$lone" | head -1)"
    [ "$n" -le $((native_open + 4)) ] \
        || fail "$w workers, no thread: $n fds open, $native_open natively: corun opened fds for workers it does not use"
    echo "$w workers: $(echo "$out" | head -1), $(echo "$out" | tail -1) with 300 threads; $n fds open with none ($native_open natively)"
done
ok "fd numbers as natively with 2, 64 and 200 workers; a process without threads holds no fds of unused workers"
