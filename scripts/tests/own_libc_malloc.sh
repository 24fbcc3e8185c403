# A program whose malloc is its own and that also defines glibc's
# __libc_malloc family (mimalloc in mold, tcmalloc, jemalloc built to
# replace malloc), whose allocator opens and reads a file at its set-up and
# cannot be re-entered then (c-tests/own_libc_malloc.c). corun's heap must
# stay glibc's: it called __libc_malloc by name, which bound to the
# program's, so the set-up's open went into corun's hook, which allocated,
# re-entering the allocator (mold aborted at start under corun). The run
# must print the same natively and under corun, including that the
# program's __libc_* names were never called. Then the same allocator as a
# library loaded after libcorun.so (LD_PRELOAD="libcorun.so lib.so", the
# order of a program linked with tcmalloc), whose __libc_* names exit 4
# if called, under c-tests/exit_joins: it must print and exit (3) as
# natively with that library alone (a dlsym(RTLD_NEXT) lookup found the
# library's names). Then mold itself, if installed, must link a program
# that runs.
source "$(dirname "$0")/../lib.sh"
same_everywhere own_libc_malloc "$BIN/own_libc_malloc"
grep -qx "calls to the program's __libc_\* names: 0" "$TMPD/own_libc_malloc.wdef" \
    || fail "own_libc_malloc: corun called the program's __libc_* names"
ok "own_libc_malloc: same output natively and under corun; the program's __libc_* names never called"

cc -O2 -Wall -Wextra -Werror -D_GNU_SOURCE -DOWN_MALLOC_LIBRARY -shared -fPIC \
    -o "$TMPD/libown_malloc.so" "$ROOT/c-tests/own_libc_malloc.c"
rc=0
timeout 30 env LD_PRELOAD="$TMPD/libown_malloc.so" "$BIN/exit_joins" >"$TMPD/lib.native" 2>&1 || rc=$?
[ $rc = 3 ] || fail "exit_joins with the allocator library, natively: exit $rc: $(tail -3 "$TMPD/lib.native")"
for w in 1 2; do
    rc=0
    timeout 30 env CORUN_WORKERS=$w LD_PRELOAD="$LIB $TMPD/libown_malloc.so" "$BIN/exit_joins" >"$TMPD/lib.w$w" 2>&1 || rc=$?
    [ $rc = 3 ] || fail "exit_joins with the allocator library after corun, $w worker(s): exit $rc: $(tail -3 "$TMPD/lib.w$w")"
    cmp -s "$TMPD/lib.native" "$TMPD/lib.w$w" || fail "exit_joins with the allocator library, $w worker(s): output differs"
done
ok "own_libc_malloc as a library loaded after libcorun.so: same output, exit 3, its __libc_* names never called"

command -v mold >/dev/null || { echo "SKIP: mold is not installed (the C part passed)"; exit 0; }
printf '#include <stdio.h>\nint main(void){ puts("linked by mold"); return 4; }\n' >"$TMPD/m.c"
gcc -c -o "$TMPD/m.o" "$TMPD/m.c"
timeout 60 env LD_PRELOAD="$LIB" gcc -fuse-ld=mold -o "$TMPD/m" "$TMPD/m.o" \
    || fail "mold under corun failed to link"
rc=0; out=$("$TMPD/m") || rc=$?
[ "$out" = "linked by mold" ] && [ $rc = 4 ] || fail "mold's output under corun: '$out', exit $rc"
ok "mold: linked under corun, the program runs"
