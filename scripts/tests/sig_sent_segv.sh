# A SIGSEGV or SIGBUS that is sent (raise, kill), not a fault, acts as
# its disposition says, as natively (c-tests/sig_sent_segv.c): corun's
# stack-overflow handler, which holds the kernel's action while the
# program's is SIG_DFL, restored the disposition and returned, which only
# a faulting instruction meets again: a raised SIGSEGV was swallowed, and
# CPython's faulthandler, which raises it again to die by it, exited 0.
source "$(dirname "$0")/../lib.sh"
ulimit -c 0
same_output_native_and_corun "$BIN/sig_sent_segv"
grep -q "killed by signal 11" "$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
