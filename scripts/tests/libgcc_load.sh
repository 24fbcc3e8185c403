# libgcc_s.so.1 is loaded under corun where glibc loads it natively, and
# not before: a C program does not map it at its start, nor after a thread
# that returned, and does after a thread that called pthread_exit (the
# unwinder that ends it). corun links its own copy of the unwinder
# (build.rs) and opens libgcc_s for a thread's exit (hooks/unwind_link.rs);
# before, every process under corun loaded libgcc_s at its start, whose
# constructor runs cpuid instructions that trap to the hypervisor on a VM
# (about 0.15 ms a process here).
source "$(dirname "$0")/../lib.sh"
"$BIN/libgcc_load" >"$TMPD/native" || fail "natively: $(cat "$TMPD/native")"
grep -qx "at start: libgcc_s not mapped" "$TMPD/native" ||
    fail "natively the program maps libgcc_s at its start: $(head -1 "$TMPD/native")"
for w in 1 2; do
    CORUN_WORKERS=$w corun "$BIN/libgcc_load" >"$TMPD/corun.$w" 2>&1 || fail "$w workers: $(cat "$TMPD/corun.$w")"
    diff "$TMPD/native" "$TMPD/corun.$w" >"$TMPD/diff" ||
        fail "$w workers: not as natively: $(tr '\n' ' ' <"$TMPD/diff")"
done
ok "libgcc_s mapped at the same points as natively (1 and 2 workers): $(tr '\n' ';' <"$TMPD/native")"
