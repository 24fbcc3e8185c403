# A program's fd numbers stay as natively while its threads compute: main
# closes every fd from 3 and makes a pipe, over and over, and must get
# 3 and 4 each time. corun's helper threads used to open files while the
# program ran (the preemption monitor's and the watchdog's /proc reads,
# the watchdog's read of an object's symbol table), each taking fd 3 for
# a moment: main then got 4 and 5. Also: close_range(3, ~0) walked the
# whole fd table (a million entries, ~3 ms a call): main made 200 pipes
# in 1.5 s instead of ~100,000; at least 1,000 are asked for, so that
# the check above means something.
source "$(dirname "$0")/../lib.sh"
prog="$BIN/fd_numbers_busy"
native=$(timeout 60 "$prog" 0.3) || fail "natively: $native"
for w in 1 2; do
    for ms in 2 10; do
        out=$(CORUN_WORKERS=$w CORUN_PREEMPT_MS=$ms corun timeout 60 "$prog" 1.5) \
            || fail "$w workers, ${ms} ms slices: $out"
        pipes=$(echo "$out" | sed -n 's/^pipes \([0-9]*\),.*/\1/p')
        [ "${pipes:-0}" -ge 1000 ] || fail "$w workers, ${ms} ms slices: only ${pipes:-0} pipes in 1.5 s ($out)"
        echo "$w workers, ${ms} ms slices: $out"
    done
done
# Dumps asked for during the run (CORUN_DUMP_SIGNAL, 60 signals in 2 s):
# the dump thread wrote its file through an fd of the program's table, so
# the file took fd 3 (main got 4 and 5: 9-214 wrong pipes a run) and
# main's close_range closed it under the dump ("cannot write the dump:
# Bad file descriptor", 18 times in one run). It now writes from a fd
# table of its own.
CORUN_DUMP_SIGNAL=USR2 CORUN_WORKERS=2 LD_PRELOAD="$LIB" timeout 60 "$prog" 2 >"$TMPD/dumps" 2>&1 &
pid=$!
sleep 0.2
for _ in $(seq 1 60); do kill -USR2 "$pid" 2>/dev/null || true; sleep 0.02; done
wait "$pid" || fail "with dumps: $(cat "$TMPD/dumps")"
rm -f "/tmp/corun-$pid.dump" "/tmp/corun-$pid.dump.tmp"
grep -q "cannot write the dump" "$TMPD/dumps" && fail "with dumps: $(grep -m1 'cannot write' "$TMPD/dumps")"
grep -q "wrong 0$" "$TMPD/dumps" || fail "with dumps: $(cat "$TMPD/dumps")"
echo "with 60 dumps asked for: $(grep pipes "$TMPD/dumps")"
ok "fds 3 and 4 for every pipe while threads compute beside it, and while dumps are written"
