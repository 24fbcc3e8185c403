# close/close_range/closefrom/fclose/dup*/fcntl*/ioctl/pipe*/open*/eventfd/
# sendfile*/splice, and children (fork, sh -c cat) seeing blocking fds: the
# transcript of c-tests/hooks_fd.c under corun (one worker, every wait
# parked) is the native one.
source "$(dirname "$0")/../lib.sh"
same_transcript hooks_fd "$TMPD"
syms=$(nm "$BIN/hooks_fd")
for f in fcntl64 open64 sendfile64 close_range closefrom fclose splice creat creat64 __open_2 \
    __open64_2 __openat_2 openat openat64 inotify_init inotify_init1 memfd_create signalfd \
    epoll_create pclose pread64; do
    grep -q "U $f" <<<"$syms" || fail "hooks_fd does not call $f"
done
ok "hooks_fd: $(wc -l <"$TMPD/hooks_fd.native") lines, same transcript natively and under corun"
