# Debian's OpenSSH server, unchanged, serving key logins on a high port of
# 127.0.0.1 natively and under corun (one worker, then the default): a
# temporary host key and user key; each run makes two sessions one after
# the other and two at once, running `cat` of a 100 KB file (every byte
# compared) and `sha256sum` of 200 KB sent on stdin (the server's reading
# side), and `exit 3` (the exit status comes back). sshd re-executes
# itself per connection and its pre-authentication child confines itself
# with seccomp (its sandbox): under corun that child must make only its own
# system calls. (Its processes each run one thread, which corun lets make
# its calls as natively; proc_seccomp tests confinement where corun would
# otherwise park.)
source "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: sshd needs root for its privilege separation"; exit 0; }
[ -x /usr/sbin/sshd ] || fail "no /usr/sbin/sshd (scripts/deps.sh installs openssh-server)"
mkdir -p /run/sshd
D="$TMPD/ssh"
mkdir -p "$D"
ssh-keygen -q -t ed25519 -N '' -f "$D/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$D/userkey"
cp "$D/userkey.pub" "$D/authorized_keys"
chmod 600 "$D/authorized_keys"
head -c 75000 /dev/urandom | base64 >"$D/file"
head -c 200000 /dev/urandom >"$D/upload"
want_sum="$(sha256sum <"$D/upload")"

client() { # client PORT COMMAND... (natively, bounded)
    local port=$1; shift
    timeout -k 5 30 env -u LD_PRELOAD ssh -F /dev/null -i "$D/userkey" -p "$port" \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes \
        -o IdentitiesOnly=yes -o LogLevel=ERROR 127.0.0.1 "$@"
}

for mode in native w1 wdef; do
    port=$(free_port)
    sed -e "s|@PORT@|$port|" -e "s|@D@|$D|g" >"$D/sshd_config" <<'CFG'
Port @PORT@
ListenAddress 127.0.0.1
HostKey @D@/hostkey
AuthorizedKeysFile @D@/authorized_keys
PidFile @D@/sshd.pid
UsePAM no
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
CFG
    case $mode in
        native) env -u LD_PRELOAD /usr/sbin/sshd -D -e -f "$D/sshd_config" 2>"$D/log.$mode" & ;;
        w1) CORUN_WORKERS=1 LD_PRELOAD="$LIB" /usr/sbin/sshd -D -e -f "$D/sshd_config" 2>"$D/log.$mode" & ;;
        wdef) env -u CORUN_WORKERS LD_PRELOAD="$LIB" /usr/sbin/sshd -D -e -f "$D/sshd_config" 2>"$D/log.$mode" & ;;
    esac
    server=$!
    wait_port "$port"
    client "$port" "cat $D/file" >"$D/out1.$mode" || fail "$mode: ssh cat failed: $(tail -5 "$D/log.$mode")"
    cmp -s "$D/file" "$D/out1.$mode" || fail "$mode: cat over ssh returned other bytes ($(wc -c <"$D/out1.$mode") bytes)"
    got_sum="$(client "$port" sha256sum <"$D/upload")" || fail "$mode: ssh sha256sum failed"
    [ "$got_sum" = "$want_sum" ] || fail "$mode: the server read other bytes: $got_sum"
    client "$port" "cat $D/file" >"$D/out2.$mode" &
    c2=$!
    client "$port" "cat $D/file" >"$D/out3.$mode" || fail "$mode: concurrent session failed"
    wait "$c2" || fail "$mode: concurrent session failed"
    cmp -s "$D/file" "$D/out2.$mode" && cmp -s "$D/file" "$D/out3.$mode" \
        || fail "$mode: a concurrent session returned other bytes"
    rc=0
    client "$port" "exit 3" || rc=$?
    [ "$rc" = 3 ] || fail "$mode: the remote exit status came back as $rc"
    kill "$server"
    wait "$server" 2>/dev/null || true
    n=$(grep -c "Accepted publickey" "$D/log.$mode" || true)
    [ "$n" = 5 ] || fail "$mode: sshd logged $n key logins, not 5: $(tail -5 "$D/log.$mode")"
    ok "$mode: 5 key logins; cat, sha256sum of stdin, two at once and the exit status as expected"
done
