# errno of coroutines that share their worker's thread pointer
# (c-tests/co_errno_switch.c: corun_spawn tasks, and pthreads with
# CORUN_TLS=worker) stays each one's own across yields, sched_yield and
# parks on a timer: corun saves and restores it around every switch
# (sched/park.rs, `suspend`: its slot found from the TLS words), on one
# worker and on two, and with a TLS block per pthread (the default).
source "$(dirname "$0")/../lib.sh"
for mode in "CORUN_WORKERS=1" "CORUN_WORKERS=2" "CORUN_WORKERS=1 CORUN_TLS=worker" "CORUN_WORKERS=2 CORUN_TLS=worker"; do
    out=$(timeout -k 5 60 env $mode LD_PRELOAD="$LIB" "$BIN/co_errno_switch" 2>&1) || fail "$mode: $out"
    [ "$out" = "co_errno_switch: ok" ] || fail "$mode printed: $out"
done
ok "errno kept across switches: shared and own TLS, 1 and 2 workers"
