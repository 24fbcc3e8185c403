# Debian's vsftpd, unchanged, with the package's default configuration
# except what a test needs (listen on 127.0.0.1 and a high port, IPv4,
# anonymous login, its root and logs in a temporary directory) and
# seccomp_sandbox=NO (this VM needs it natively too), natively and under
# corun (one worker, then the default). python3's ftplib logs in
# anonymously, lists the directory and downloads a 300 KB file and a small
# one (passive mode); three sessions run at once; every byte is compared.
# vsftpd's default isolate=YES makes each session's processes with
# syscall(SYS_clone, CLONE_NEWPID|CLONE_NEWIPC|CLONE_NEWNET...), which
# corun must treat as forks (each process has one thread here, which corun
# lets make its calls as natively; proc_clone tests clones whose children
# park).
source "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: vsftpd needs root"; exit 0; }
[ -x /usr/sbin/vsftpd ] || fail "no /usr/sbin/vsftpd (scripts/deps.sh installs vsftpd)"
[ -f /etc/vsftpd.conf ] || fail "no /etc/vsftpd.conf (the package's default configuration)"
mkdir -p /var/run/vsftpd/empty
D="$TMPD/ftp"
mkdir -p "$D/root"
chmod 755 "$TMPD" "$D" "$D/root"
head -c 300000 /dev/urandom >"$D/root/data.bin"
echo "hello from vsftpd" >"$D/root/small.txt"
chmod 644 "$D/root/"*
cat >"$D/client.py" <<'PY'
import ftplib, hashlib, sys
f = ftplib.FTP()
f.connect("127.0.0.1", int(sys.argv[1]), timeout=20)
f.login()
names = sorted(f.nlst())
print("list:", " ".join(names))
for n in names:
    chunks = []
    f.retrbinary("RETR " + n, chunks.append)
    data = b"".join(chunks)
    print(n, len(data), hashlib.sha256(data).hexdigest())
f.quit()
PY
{
    echo "list: data.bin small.txt"
    for f in data.bin small.txt; do
        echo "$f $(wc -c <"$D/root/$f") $(sha256sum <"$D/root/$f" | cut -d' ' -f1)"
    done
} >"$D/want"

for mode in native w1 wdef; do
    port=$(free_port)
    sed -e 's/^listen=NO/listen=YES/' -e 's/^listen_ipv6=YES/listen_ipv6=NO/' \
        -e 's/^anonymous_enable=NO/anonymous_enable=YES/' /etc/vsftpd.conf >"$D/vsftpd.conf"
    cat >>"$D/vsftpd.conf" <<CFG
listen_address=127.0.0.1
listen_port=$port
anon_root=$D/root
seccomp_sandbox=NO
xferlog_file=$D/xfer.log
vsftpd_log_file=$D/vsftpd.log
CFG
    case $mode in
        native) env -u LD_PRELOAD /usr/sbin/vsftpd "$D/vsftpd.conf" 2>"$D/log.$mode" & ;;
        w1) CORUN_WORKERS=1 LD_PRELOAD="$LIB" /usr/sbin/vsftpd "$D/vsftpd.conf" 2>"$D/log.$mode" & ;;
        wdef) env -u CORUN_WORKERS LD_PRELOAD="$LIB" /usr/sbin/vsftpd "$D/vsftpd.conf" 2>"$D/log.$mode" & ;;
    esac
    server=$!
    wait_port "$port"
    clients=()
    for i in 1 2 3; do
        timeout -k 5 30 env -u LD_PRELOAD python3 "$D/client.py" "$port" >"$D/out$i.$mode" 2>&1 &
        clients+=($!)
    done
    for c in "${clients[@]}"; do
        wait "$c" || fail "$mode: an FTP session failed: $(cat "$D"/out*."$mode" "$D/log.$mode" | tail -8)"
    done
    for i in 1 2 3; do
        diff -u "$D/want" "$D/out$i.$mode" || fail "$mode: session $i listed or downloaded other bytes"
    done
    kill "$server"
    wait "$server" 2>/dev/null || true
    ok "$mode: 3 sessions at once, each listed and downloaded 300,018 bytes as they are on disk"
done
