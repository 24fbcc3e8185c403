#!/usr/bin/env bash
# Installs what the tests, demo and benchmarks need, where it is missing.
#   scripts/deps.sh           for make test, demo, bench
#   scripts/deps.sh servers   also the real servers of make bench's
#                             "servers" part (scripts/bench_servers.sh)
set -euo pipefail
need=()
command -v wrk >/dev/null 2>&1 || need+=(wrk)
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v perl >/dev/null 2>&1 || need+=(perl)
command -v gcc >/dev/null 2>&1 || need+=(gcc)
command -v script >/dev/null 2>&1 || need+=(bsdutils)
command -v ip >/dev/null 2>&1 || need+=(iproute2)     # scripts/tests/dns_slow.sh: loopback in its own namespace
command -v unshare >/dev/null 2>&1 || need+=(util-linux) # scripts/tests/dns_slow.sh
command -v strace >/dev/null 2>&1 || need+=(strace) # make bench: syscalls per operation
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless) # tests: a threaded Java program
command -v rg >/dev/null 2>&1 || need+=(ripgrep)    # scripts/tests/ripgrep.sh: a threaded Rust program
command -v redis-benchmark >/dev/null 2>&1 || need+=(redis-tools) # scripts/tests/co_kv_redis.sh: redis-cli, redis-benchmark
[ -x /usr/bin/redis-server ] || need+=(redis-server) # scripts/tests/redis_startup.sh (skipped without it: CI on a fresh machine did)
command -v mold >/dev/null 2>&1 || need+=(mold)   # scripts/tests/own_libc_malloc.sh: a linker with its own malloc (mimalloc) that defines __libc_malloc
# scripts/tests/mariadb.sh and make bench: a real thread-per-connection server
[ -x /usr/sbin/mariadbd ] || need+=(mariadb-server)
command -v sysbench >/dev/null 2>&1 || need+=(sysbench)
[ -e /usr/include/liburing.h ] || need+=(liburing-dev) # c-tests/hooks_io_uring.c
command -v pkg-config >/dev/null 2>&1 || need+=(pkg-config) # scripts/tests/install.sh
command -v go >/dev/null 2>&1 || need+=(golang-go) # scripts/tests/go_programs.sh, go_cgo.sh (and make bench: Go's channels)
command -v groff >/dev/null 2>&1 || need+=(groff-base) # scripts/tests/install.sh: the man pages render
command -v gdb >/dev/null 2>&1 || need+=(gdb)       # scripts/tests/gdb_ext.sh: scripts/corun-gdb.py
command -v valgrind >/dev/null 2>&1 || need+=(valgrind) # scripts/tests/yield_instructions.sh: callgrind
[ -x /usr/sbin/vsftpd ] || need+=(vsftpd)           # scripts/tests/vsftpd_session.sh
[ -x /usr/sbin/sshd ] || need+=(openssh-server)     # scripts/tests/sshd_session.sh
command -v ruby >/dev/null 2>&1 || need+=(ruby)   # scripts/tests/ruby_compute.sh: Ruby threads
command -v sbcl >/dev/null 2>&1 || need+=(sbcl)   # scripts/tests/sbcl_threads.sh: its collector, pthread_attr_setstack
if [ "${1:-}" = servers ]; then
    have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "$2" ]; }
    have apache2 /usr/sbin/apache2 || need+=(apache2)
    have nginx /usr/sbin/nginx || need+=(nginx-light)
    have lighttpd /usr/sbin/lighttpd || need+=(lighttpd)
    have haproxy /usr/sbin/haproxy || need+=(haproxy)
    have redis-server /usr/bin/redis-server || need+=(redis-server)
    have redis-benchmark /usr/bin/redis-benchmark || need+=(redis-tools)
    have memcached /usr/bin/memcached || need+=(memcached)
    have memcaslap /usr/bin/memcaslap || need+=(libmemcached-tools)
    have curl /usr/bin/curl || need+=(curl)
    have pgbench /usr/bin/pgbench || need+=(postgresql-contrib postgresql-client)
    [ -x /usr/lib/postgresql/15/bin/postgres ] || need+=(postgresql)
fi
if ((${#need[@]})); then
    echo "deps: installing ${need[*]}"
    SUDO=""
    [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null 2>&1 || true
    # Packages with a service (mariadb-server) must not start it: the
    # tests run their own servers. policy-rc.d is Debian's switch for that.
    norc=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
        $SUDO chmod +x /usr/sbin/policy-rc.d
        norc=1
    fi
    rc=0
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}" >/dev/null || rc=$?
    [ -z "$norc" ] || $SUDO rm -f /usr/sbin/policy-rc.d
    [ "$rc" = 0 ] || exit "$rc"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "deps: cargo (Rust) is required: https://rustup.rs" >&2
    exit 1
fi
