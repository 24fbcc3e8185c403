# close/close_range/closefrom/fclose/dup*/fcntl*/ioctl/pipe*/open*/eventfd/
# sendfile*/splice, and children (fork, sh -c cat) seeing blocking fds: the
# transcript of c-tests/hooks_fd.c under corun (one worker, every wait
# parked) is the native one.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_fd "$TMPD"
for f in fcntl64 open64 sendfile64 close_range closefrom fclose splice; do
    nm "$BIN/hooks_fd" | grep -q "U $f" || fail "hooks_fd does not call $f"
done
ok "hooks_fd: $(wc -l <"$TMPD/hooks_fd.native") lines, same transcript natively and under corun"
