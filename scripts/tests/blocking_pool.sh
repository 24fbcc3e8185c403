# Calls with no readiness to wait for go to the blocking pool: a coroutine
# reading a large uncached regular file does not stall an echo on its
# worker; 1,000 concurrent getaddrinfo calls complete; waiting for a file
# lock another process holds (flock, F_SETLKW) lets the worker run on.
source "$(dirname "$0")/../lib.sh"
export CORUN_WORKERS=1   # the reader and the echo share the one worker
f="$TMPD/big.bin"
dd if=/dev/urandom of="$f" bs=1M count=256 status=none
sync "$f" 2>/dev/null || sync
# Up to three runs: a read made on the worker stalls the echo every time,
# while a machine busy writing back the 256 MiB just written can stall
# the whole process once (it failed once in CI at 520 ms, then passed 5 of
# 5 on the same machine).
for try in 1 2 3; do
    out=$(corun "$BIN/co_multicore" file "$f" 2>/dev/null) || fail "file: $out"
    echo "$out"
    echo "$out" | grep -q "268435456 bytes" || fail "the reader did not read the whole file: $out"
    probe=$(echo "$out" | sed -n 's/.*longest \([0-9.]*\) ms$/\1/p')
    readmax=$(echo "$out" | sed -n 's/.*longest single read \([0-9.]*\) ms.*/\1/p')
    awk -v p="$probe" 'BEGIN { exit !(p < 100) }' && break
    [ "$try" = 3 ] && fail "echo stalled ${probe} ms while the file was read (reads took up to ${readmax} ms), three runs out of three"
    echo "run $try: echo stalled ${probe} ms; again"
done
awk -v r="$readmax" 'BEGIN { exit !(r >= 5) }' || echo "note: reads were fast (${readmax} ms): the file stayed cached, the check proves little on this run"
out=$(corun "$BIN/co_multicore" dns 1000 2>/dev/null) || fail "dns: $out"
echo "$out"
out=$(corun "$BIN/co_filelock" "$TMPD/lock") || fail "file locks held the worker: $out"
echo "$out"
ok "file reads and name resolution off the worker"
