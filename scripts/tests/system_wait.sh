# system(3), pclose(3) and lockf(F_LOCK) wait parked
# (src/hooks/process/system.rs, popen.rs; lockf on the blocking pool):
# glibc waits with internal calls no hook sees, which held the worker (a
# ticker thread there stopped). Exit statuses, a shell killed by SIGTERM,
# the environment, the shell's signal mask and ignored set, SIGINT ignored
# during the call and back at its action after, two threads in system at
# once, pclose of "w" and "r" streams: the same output natively, with
# interposition off, and under corun (1 worker, default).
source "$(dirname "$0")/../lib.sh"
SYSTEM_WAIT=here RUN_TIMEOUT=30 same_everywhere sw "$BIN/system_wait"
grep -q ": NO$" "$TMPD/sw.native" && fail "natively (machine too loaded?): $(cat "$TMPD/sw.native")"
grep -qx "the command sees SYSTEM_WAIT=here" "$TMPD/sw.native" || fail "natively, no environment: $(cat "$TMPD/sw.native")"
ok "system and pclose wait parked, as natively"
