# sigaction reports the program's own SIGSEGV/SIGBUS actions, never corun's
# overflow handler (SIG_DFL at start; through sigaction and signal), and
# sigaltstack is per thread (none at first, its own, SS_ONSTACK and EPERM
# inside a SA_ONSTACK handler, ENOMEM/EINVAL, none after SS_DISABLE), for
# 8 threads one after the other and at once, each freeing its stack
# (c-tests/sig_altstack.c). Then a forked child's thread overflows its
# stack: killed by a fault everywhere, and under corun only after corun's
# overflow message: before, a thread's freed alternate stack had become
# its worker's and the message was lost.
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=60 same_everywhere altstack "$BIN/sig_altstack"
grep -q "sig 11 at start: SIG_DFL" "$TMPD/altstack.native" || fail "unexpected native transcript"
for mode in w1 wdef; do
    grep -q "overflowed its .*-byte stack" "$TMPD/altstack.$mode.err" \
        || fail "$mode: no overflow message after threads freed their alternate stacks: $(cat "$TMPD/altstack.$mode.err")"
done
ok "actions and alternate stacks as natively; overflow message still printed"
