# When memory runs out (RLIMIT_AS), pthread_create fails with EAGAIN under
# corun as it does natively, and the threads already made still run and
# join: same transcript both ways.
source "$(dirname "$0")/../lib.sh"
native=$("$BIN/thread_limits") || fail "natively: $native"
under=$(corun "$BIN/thread_limits") || fail "under corun: $under"
echo "native: $native"
echo "corun:  $under"
[ "$native" = "$under" ] || fail "transcripts differ"
ok "EAGAIN when no stack can be had"
