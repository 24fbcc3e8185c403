# A child confines itself with a strict seccomp filter (read, write, exit,
# exit_group, rt_sigreturn; anything else kills the thread, as in sshd's
# sandbox), by prctl(PR_SET_SECCOMP) and by syscall(SYS_seccomp), then
# exchanges 50 lines over a socket (c-tests/proc_seccomp.c). Every byte, the
# EOF and the child's exit status must be as natively. Before, corun's
# parking write made a sendmsg, the filter killed the thread, and the
# parent waited for ever. A third child makes a call its filter forbids
# after a line: its only thread is killed and the process must end with it
# (SIGSYS, EOF on its socket), as natively: no thread of corun's (the
# watchdog started with the child's first thread) may keep it alive.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=60 same_everywhere seccomp "$BIN/proc_seccomp"
grep -c "51 lines right, 0 wrong, bye received, then EOF; child exited 7" "$TMPD/seccomp.native" \
    | grep -qx 2 || fail "unexpected native transcript: $(cat "$TMPD/seccomp.native")"
grep -q "then EOF; child killed by 31" "$TMPD/seccomp.native" \
    || fail "unexpected native end of the third child: $(tail -2 "$TMPD/seccomp.native")"
ok "both ways of confining: 51 lines, EOF and exit status 7; a forbidden call ends the child by SIGSYS; as natively"
