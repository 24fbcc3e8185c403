# Real programs run unchanged under corun with output and exit status
# identical to running them natively: sh pipelines, python3 with threads,
# sockets and a ThreadPoolExecutor, git, tar, make, strace, perl with a
# socket.
source "$(dirname "$0")/../lib.sh"
cd "$TMPD"
run_both() {
    local name=$1; shift
    set +e
    (cd "$TMPD" && timeout 60 "$@") >"$TMPD/$name.native" 2>&1
    local rn=$?
    (cd "$TMPD" && LD_PRELOAD="$LIB" timeout 60 "$@") >"$TMPD/$name.corun" 2>&1
    local rc=$?
    set -e
    [ "$rn" = "$rc" ] || fail "$name: exit $rn natively, $rc under corun: $(tail -5 "$TMPD/$name.corun")"
    diff "$TMPD/$name.native" "$TMPD/$name.corun" >"$TMPD/$name.diff" || fail "$name: output differs: $(head -20 "$TMPD/$name.diff")"
    ok "$name (exit $rc, $(wc -l <"$TMPD/$name.corun") lines identical)"
}
run_both sh_pipeline sh -c 'seq 1 20000 | grep 7 | sort -r | uniq -c | awk "{s+=\$1} END {print s}"; echo piped | tr a-z A-Z; (sleep 0.1; echo sub) & wait; exit 3'
run_both python_threads python3 "$ROOT/scripts/tests/data/threads_sockets.py"
# git: commit ids depend on time; pin them.
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@e GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@e
git_script='rm -rf repo && git init -q repo && cd repo && for i in 1 2 3; do echo "line $i" >f$i.txt; done && git add . && git commit -qm first && echo more >>f1.txt && git commit -qam second && git log --format="%H %s" && git status --short && git diff HEAD~1 --stat'
run_both git sh -c "$git_script"
mkdir -p tree/sub && for i in $(seq 1 50); do head -c $((i * 997)) /dev/urandom >"tree/sub/f$i"; done
run_both tar sh -c 'rm -rf out && tar cf t.tar tree && mkdir out && tar xf t.tar -C out && diff -r tree out/tree && tar tf t.tar | sort | md5sum'
cat >Makefile <<'MK'
all: c
a: ; echo A >a
b: a ; cat a a >b
c: b ; wc -c <b >c; cat c
MK
run_both make sh -c 'rm -f a b c && make -s -j2 all && make -s all'
# strace waits for its tracee's stops (not exits): waitpid must see them.
command -v strace >/dev/null && run_both strace strace -f -o /dev/null sh -c 'echo traced | cat; exit 4'
run_both perl_socket perl -MIO::Socket::INET -e '
my $l = IO::Socket::INET->new(Listen => 5, LocalAddr => "127.0.0.1", LocalPort => 0, Proto => "tcp") or die;
my $port = $l->sockport;
if (my $pid = fork) {
  my $c = $l->accept; my $line = <$c>; print "server got: $line"; print $c "pong\n"; close $c; waitpid($pid, 0); print "child exit: ", $? >> 8, "\n";
} else {
  my $s = IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $port) or die; print $s "ping\n"; my $r = <$s>; exit($r eq "pong\n" ? 5 : 1);
}'
