# dup2/dup3 over an fd other threads are parked on (c-tests/dup2_parked.c):
# readers (one, then two) parked in read keep reading the old pipe after
# its number is replaced, and get exactly the bytes written to it; the
# number then reads the new pipe; once they are done the old pipe has no
# reader left (EPIPE: the file corun kept for them is closed); a writer
# parked on a full pipe finishes its write on the old pipe; the same through
# syscall(SYS_dup2) and syscall(SYS_dup3); a number replaced by an inline
# system call (no hook sees it) between two parked reads: the second waits
# on the new file and wakes when it has data. Natively,
# with the interposition off, with one worker and the default: identical
# transcripts (a lost reader would kill the process with SIGPIPE).
source "$(dirname "$0")/../lib.sh"
RUN_TIMEOUT=30 same_everywhere dup2_parked "$BIN/dup2_parked"
grep -c ": ok$" "$TMPD/dup2_parked.native" | grep -qx 56 || fail "not every check passed natively: $(grep -v ': ok$' "$TMPD/dup2_parked.native")"
tail -1 "$TMPD/dup2_parked.native" | grep -qx done || fail "the program did not finish"
ok "dup2_parked: $(grep -c ': ok$' "$TMPD/dup2_parked.native") checks, the same natively and under corun (1 and default workers)"
