# Well-known servers from the distribution, compiled for threads (or
# processes) and never told about corun, run natively and under corun side
# by side: every reply checked against the native one, a short load with
# no errors, and the figures printed. Installs the packages if missing.
source "$(dirname "$0")/../lib.sh"
pkgs=()
command -v nginx >/dev/null || pkgs+=(nginx-light)
command -v apache2 >/dev/null || [ -x /usr/sbin/apache2 ] || pkgs+=(apache2)
command -v memcached >/dev/null || pkgs+=(memcached)
command -v redis-server >/dev/null || pkgs+=(redis-server)
if ((${#pkgs[@]})); then
    echo "installing ${pkgs[*]}"
    apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
    # Do not let the packages start their services on the default ports.
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${pkgs[@]}" >/dev/null 2>&1 || fail "cannot install ${pkgs[*]}"
    rm -f /usr/sbin/policy-rc.d
fi
export PATH="$PATH:/usr/sbin"
status=0
run() { # mode(native|corun) cmd... ; sets $pid
    if [ "$1" = corun ]; then shift; CORUN_THREADS="${corun_threads:-coroutine}" LD_PRELOAD="$LIB" "$@" & else shift; "$@" & fi
    pid=$!
}
rps() { sed -n 's/Requests\/sec: *//p'; }
# Kernel threads of a server and its child processes.
threads_tree() {
    local n=0 p
    for p in $1 $(pgrep -P "$1"); do
        n=$((n + $(awk '/^Threads/{print $2}' "/proc/$p/status" 2>/dev/null || echo 0)))
    done
    echo "$n"
}
wrk_check() { # url [conns] -> prints req/s; fails on socket errors or non-2xx
    local out
    out=$(wrk -t2 -c"${2:-100}" -d3s "$1")
    if echo "$out" | grep -qE "Socket errors|Non-2xx"; then
        echo "$out" >&2
        return 1
    fi
    echo "$out" | rps
}

# nginx: a master and two worker processes, epoll.
d="$TMPD/nginx"; mkdir -p "$d/logs"
cat >"$d/nginx.conf" <<CONF
worker_processes 2;
error_log $d/logs/error.log;
pid $d/nginx.pid;
events { worker_connections 4096; }
http { access_log off; server { listen 127.0.0.1:PORT; location / { return 200 "hello from nginx\n"; } } }
CONF
# apache2, event MPM: one child process, 128 worker threads, a listener thread.
a="$TMPD/apache"; mkdir -p "$a/logs" "$a/htdocs"
head -c 4096 /dev/urandom | base64 >"$a/htdocs/index.html"
chmod 755 "$TMPD"; chmod -R a+rwx "$a"
for server in nginx apache2; do
    corun_threads=coroutine
    declare -A got=()
    for mode in native corun; do
        port=$(free_port)
        if [ $server = nginx ]; then
            sed "s/PORT/$port/" "$d/nginx.conf" >"$d/run.conf"
            run $mode nginx -p "$d" -c "$d/run.conf" -g 'daemon off;'
            url="http://127.0.0.1:$port/"
        else
            cat >"$a/httpd.conf" <<CONF
ServerRoot "/etc/apache2"
LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
LoadModule dir_module /usr/lib/apache2/modules/mod_dir.so
LoadModule mime_module /usr/lib/apache2/modules/mod_mime.so
TypesConfig /etc/mime.types
PidFile $a/httpd-$mode.pid
Listen 127.0.0.1:$port
ServerName localhost
User www-data
Group www-data
ErrorLog $a/logs/error.log
DocumentRoot $a/htdocs
<Directory $a/htdocs>
  Require all granted
</Directory>
StartServers 1
ServerLimit 1
ThreadsPerChild 128
MaxRequestWorkers 128
Mutex file:$a default
CONF
            run $mode apache2 -f "$a/httpd.conf" -DFOREGROUND
            url="http://127.0.0.1:$port/index.html"
        fi
        wait_port "$port"
        body=$(curl -sf "$url") || { echo "$server/$mode: no reply"; status=1; kill $pid; continue; }
        got[$mode]=$(echo "$body" | md5sum)
        r=$(wrk_check "$url" 50) || { echo "$server/$mode: errors under load"; status=1; }
        echo "$server $mode: $r req/s (kernel threads in its processes: $(threads_tree $pid))"
        kill $pid 2>/dev/null; wait $pid 2>/dev/null || true
    done
    [ "${got[native]:-x}" = "${got[corun]:-y}" ] || { echo "$server: replies differ"; status=1; }
    unset got
done

# memcached: 4 worker threads (libevent) and a listener.
corun_threads=coroutine
for mode in native corun; do
    port=$(free_port)
    run $mode memcached -u root -l 127.0.0.1 -p "$port" -t 4 -c 4096 -U 0
    wait_port "$port"
    python3 - "$port" >"$TMPD/mc.$mode" <<'PY' || { echo "memcached/$mode failed"; status=1; }
import socket, sys, hashlib, threading
port = int(sys.argv[1])
def client(k, out):
    s = socket.create_connection(("127.0.0.1", port)); f = s.makefile("rb")
    for i in range(200):
        key = f"k{k}_{i}"; val = hashlib.sha1(key.encode()).hexdigest() * (1 + i % 20)
        s.sendall(f"set {key} 0 0 {len(val)}\r\n{val}\r\n".encode()); assert f.readline() == b"STORED\r\n"
        s.sendall(f"get {key}\r\n".encode()); hdr = f.readline(); data = f.readline().rstrip(b"\r\n"); end = f.readline()
        assert data.decode() == val and end == b"END\r\n", (hdr, data, end)
    out[k] = True
out = {}
ts = [threading.Thread(target=client, args=(k, out)) for k in range(20)]
[t.start() for t in ts]; [t.join() for t in ts]
assert len(out) == 20
print("memcached: 20 clients x 200 set/get checked")
PY
    echo "memcached $mode: $(cat "$TMPD/mc.$mode") (kernel threads: $(threads_tree $pid))"
    kill $pid; wait $pid 2>/dev/null || true
done

# redis: its own event loop, plus background threads.
corun_threads=coroutine
for mode in native corun; do
    port=$(free_port)
    run $mode redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no --loglevel warning
    wait_port "$port"
    redis-cli -p "$port" set corun-key "value-$mode-check" >/dev/null
    v=$(redis-cli -p "$port" get corun-key)
    [ "$v" = "value-$mode-check" ] || { echo "redis/$mode: got $v"; status=1; }
    r=$(redis-benchmark -p "$port" -q -n 20000 -c 50 -t set,get 2>/dev/null | tr '\r' '\n' | grep -E "^(SET|GET):" | tail -2 | tr '\n' ' ')
    echo "redis $mode: $r"
    kill $pid; wait $pid 2>/dev/null || true
done
[ $status = 0 ] || fail "a third-party server misbehaved under corun"
ok "nginx, apache2, memcached, redis: same replies under corun"
