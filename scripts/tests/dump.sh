# corun dump PID: a program whose threads wait on a pipe read, a mutex, a
# sleep and a join (c-tests/parked_threads.c dump) shows each with the
# right cause and object (the fd, the mutex's address, the joined
# coroutine), main parked on its read of stdin, and the statistics; each
# parked coroutine's backtrace goes from the hook (read) to the program's
# function that called it (reader, main, locker); the
# dump file is 0600 and removed after; the program goes on and ends as
# natively; started by its bare name from $PATH, its functions are still
# named. Without CORUN_DUMP_SIGNAL, corun dump says so.
source "$(dirname "$0")/../lib.sh"
CORUN="$ROOT/scripts/corun"
printf 'ready\nevery thread finished\n' >"$TMPD/want"
"$BIN/parked_threads" dump <<<"x" >"$TMPD/native" 2>/dev/null || fail "natively"
diff -u "$TMPD/want" "$TMPD/native" || fail "natively: not the expected output"

# start_program W: parked_threads dump under corun with W workers, stdin a
# fifo held open by this shell (fd 7); sets PID once it printed "ready".
start_program() {
    rm -f "$TMPD/fifo"; mkfifo "$TMPD/fifo"
    local envs=(-u CORUN_WORKERS); [ "$1" = default ] || envs=(CORUN_WORKERS="$1")
    env "${envs[@]}" CORUN_DUMP_SIGNAL=USR2 LD_PRELOAD="$LIB" "$BIN/parked_threads" dump \
        <"$TMPD/fifo" >"$TMPD/out" 2>"$TMPD/err" &
    PID=$!
    exec 7>"$TMPD/fifo"
    for _ in $(seq 1 200); do grep -q ready "$TMPD/out" && return 0; sleep 0.05; done
    fail "workers=$1: the program never got ready: $(cat "$TMPD/err")"
}
finish_program() {
    echo x >&7; exec 7>&-
    wait "$PID" || fail "workers=$1: the program failed after the dump: $(cat "$TMPD/err")"
    diff -u "$TMPD/want" "$TMPD/out" || fail "workers=$1: not the native output"
}
for w in 1 default; do
    start_program $w
    fd=$(sed -n 's/^pipe fd \([0-9]*\)$/\1/p' "$TMPD/err")
    mutex=$(sed -n 's/^mutex \(0x[0-9a-f]*\)$/\1/p' "$TMPD/err")
    # "ready" comes just before main's read of stdin: on a loaded machine
    # the first dump may catch main (or a thread) a moment before its wait.
    # Asked again, bounded, until all five coroutines are parked.
    for try in 1 2 3 4 5 6 7 8 9 10; do
        "$CORUN" dump "$PID" >"$TMPD/dump" || fail "workers=$w: corun dump failed"
        [ "$(grep -c '^coroutine [0-9]* .*: parked on ' "$TMPD/dump")" = 5 ] && break
        echo "workers=$w, dump $try: not every coroutine parked yet:"; grep '^coroutine' "$TMPD/dump"
        sleep 0.2
    done
    cat "$TMPD/dump"
    has() { grep -q -- "$1" "$TMPD/dump" || fail "workers=$w: the dump has no line matching '$1'"; }
    has "^corun dump of pid $PID: 5 coroutines, "
    has "^worker 0: started, tid $PID, "
    has "^coroutine 1 (started at main), worker 0: parked on fd 0 (read) for [0-9.]* s$"
    has "^coroutine [0-9]* \"reader\" (started at reader), worker [0-9]*: parked on fd $fd (read) for [0-9.]* s$"
    has "^coroutine [0-9]* \"locker\" (started at locker), worker [0-9]*: parked on mutex $mutex for [0-9.]* s$"
    has "^coroutine [0-9]* \"sleeper\" (started at sleeper), worker [0-9]*: parked on timer, due in [0-9]* ms for [0-9.]* s$"
    reader=$(sed -n 's/^coroutine \([0-9]*\) "reader".*/\1/p' "$TMPD/dump")
    has "^coroutine [0-9]* \"joiner\" (started at joiner), worker [0-9]*: parked on join of coroutine $reader for [0-9.]* s$"
    has "^  parks on mutex: 1$"
    # frame TASK_LINE_PATTERN N TEXT: frame N of that coroutine's backtrace.
    frame() {
        awk -v pat="$1" '$0 ~ pat {on=1; next} /^[^ ]/ {on=0} on' "$TMPD/dump" | grep -qx "    #$2 $3" ||
            fail "workers=$w: the backtrace of the coroutine matching '$1' has no frame '#$2 $3'"
    }
    frame '^coroutine [0-9]* "reader"' 0 'read (libcorun.so)'
    frame '^coroutine [0-9]* "reader"' 1 'reader (parked_threads)'
    frame '^coroutine 1 ' 0 'read (libcorun.so)'
    frame '^coroutine 1 ' 1 'main (parked_threads)'
    frame '^coroutine [0-9]* "locker"' 1 'locker (parked_threads)'
    frame '^coroutine [0-9]* "joiner"' 1 'joiner (parked_threads)'
    has "^  coroutines spawned: 4$"
    [ ! -e "/tmp/corun-$PID.dump" ] || fail "workers=$w: corun dump left its file"
    # The file itself, asked for with the signal: the owner's only.
    kill -USR2 "$PID"
    for _ in $(seq 1 200); do [ -f "/tmp/corun-$PID.dump" ] && break; sleep 0.05; done
    [ "$(stat -c '%a %u' "/tmp/corun-$PID.dump")" = "600 $(id -u)" ] || fail "workers=$w: dump file mode/owner: $(stat -c '%a %u' "/tmp/corun-$PID.dump")"
    rm -f "/tmp/corun-$PID.dump"
    finish_program $w
    ok "workers=$w: the dump names each wait; the program then ended as natively"
done

# Started by its bare name, found on $PATH, from another directory (as
# one starts an installed server): glibc's dladdr names the main program
# by argv[0], "parked_threads", which is no path; the program's own
# functions were "parked_threads+0x16d0" in the dump. Now named.
rm -f "$TMPD/fifo"; mkfifo "$TMPD/fifo"
(cd / && PATH="$BIN:$PATH" CORUN_WORKERS=1 CORUN_DUMP_SIGNAL=USR2 LD_PRELOAD="$LIB" \
    exec parked_threads dump <"$TMPD/fifo" >"$TMPD/out" 2>"$TMPD/err") &
PID=$!
exec 7>"$TMPD/fifo"
for _ in $(seq 1 200); do grep -q ready "$TMPD/out" && break; sleep 0.05; done
"$CORUN" dump "$PID" >"$TMPD/dump" || fail "by bare name: corun dump failed"
w="by bare name"
has() { grep -q -- "$1" "$TMPD/dump" || fail "$w: the dump has no line matching '$1': $(grep '^coroutine' "$TMPD/dump")"; }
has '^coroutine [0-9]* "reader" (started at reader), '
has '^coroutine [0-9]* "locker" (started at locker), '
finish_program "by bare name"
ok "a program started by its bare name from \$PATH: its functions are named in the dump"

# No CORUN_DUMP_SIGNAL: corun dump refuses, and the program is untouched.
rm -f "$TMPD/fifo"; mkfifo "$TMPD/fifo"
LD_PRELOAD="$LIB" "$BIN/parked_threads" dump <"$TMPD/fifo" >"$TMPD/out" 2>"$TMPD/err" &
PID=$!
exec 7>"$TMPD/fifo"
for _ in $(seq 1 200); do grep -q ready "$TMPD/out" && break; sleep 0.05; done
set +e
"$CORUN" dump "$PID" >"$TMPD/dump" 2>"$TMPD/dump.err"
rc=$?
set -e
[ $rc = 2 ] && grep -q "was not started with CORUN_DUMP_SIGNAL set" "$TMPD/dump.err" || fail "without CORUN_DUMP_SIGNAL: exit $rc: $(cat "$TMPD/dump.err")"
finish_program off
ok "without CORUN_DUMP_SIGNAL, corun dump says so and the program is untouched"
