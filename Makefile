# corun - build, test, demo, bench.
#
#   make          the library (target/release/libcorun.so) and every C program
#   make test     unit tests, then every test in scripts/tests/ (see README)
#   make demo     an unchanged blocking server natively and under corun, loaded
#   make bench    the benchmarks, written to bench/RESULTS.md
#   make install  the library, corun.h, the corun launcher, corun.pc, the
#                 man pages and the gdb extension (share/corun/corun-gdb.py)
#                 under $(DESTDIR)$(PREFIX) (default /usr/local);
#                 make uninstall removes exactly those files
#
# C programs: c-tests/co_*.c use include/corun.h and link -lcorun; every other
# c-tests/*.c is a plain program (pthreads, no corun) that runs under corun
# unchanged, and so are c-tests/*.cpp (C++20, std::thread) and the Rust
# program c-tests/rust-threads/ (its own crate, std only).

CARGO   ?= cargo
CC      ?= gcc
CFLAGS  ?= -O2 -g
CFLAGS  += -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude
CXX     ?= g++
CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++20 -Wall -Wextra -Werror -D_GNU_SOURCE -Iinclude
# -rdynamic: function names reach the dynamic symbol table, so corun's
# watchdog can name the function a stalled coroutine was started with.
LDFLAGS += -rdynamic
LIB     := target/release/libcorun.so
BIN     := c-tests/bin
CORUN_SRCS := $(wildcard c-tests/co_*.c)
PLAIN_SRCS := $(filter-out $(CORUN_SRCS),$(wildcard c-tests/*.c))
CORUN_BINS := $(patsubst c-tests/%.c,$(BIN)/%,$(CORUN_SRCS))
PLAIN_BINS := $(patsubst c-tests/%.c,$(BIN)/%,$(PLAIN_SRCS))
CXX_BINS   := $(patsubst c-tests/%.cpp,$(BIN)/%,$(wildcard c-tests/*.cpp))
RUST_THREADS := $(BIN)/rust_threads
RUST_SRCS  := $(shell find src -name '*.rs') Cargo.toml

.PHONY: all lib cbins test unit ctest demo bench soak fmt lint check clean deps install uninstall

PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR     ?= $(PREFIX)/share/man
PCDIR      ?= $(LIBDIR)/pkgconfig
DATADIR    ?= $(PREFIX)/share/corun
VERSION    := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
INSTALLED  := $(LIBDIR)/libcorun.so $(INCLUDEDIR)/corun.h $(BINDIR)/corun \
              $(PCDIR)/corun.pc $(MANDIR)/man1/corun.1 $(MANDIR)/man3/corun.3 \
              $(DATADIR)/corun-gdb.py

all: lib cbins

lib: $(LIB)

$(LIB): $(RUST_SRCS)
	$(CARGO) build --release
	@touch $(LIB)

cbins: $(CORUN_BINS) $(PLAIN_BINS) $(CXX_BINS) $(RUST_THREADS)

$(BIN):
	mkdir -p $(BIN)

$(BIN)/co_%: c-tests/co_%.c c-tests/co_check.h include/corun.h $(LIB) | $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -Ltarget/release -lcorun -Wl,-rpath,'$$ORIGIN/../../target/release' -pthread

$(BIN)/%: c-tests/%.c | $(BIN)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread -lm

# A name with a .c and no .cpp takes the rule above; one with a .cpp, this.
$(BIN)/%: c-tests/%.cpp | $(BIN)
	$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $< -pthread

# Its own workspace and target directory: not part of corun's crate.
$(RUST_THREADS): c-tests/rust-threads/Cargo.toml $(wildcard c-tests/rust-threads/src/*.rs) | $(BIN)
	$(CARGO) build --release --manifest-path c-tests/rust-threads/Cargo.toml --target-dir target/rust-threads
	cp target/rust-threads/release/rust-threads $@

# liburing's header and library (liburing-dev: make deps installs it). The
# header is looked for when the rule runs, after deps, not when make starts.
$(BIN)/hooks_io_uring: c-tests/hooks_io_uring.c c-tests/transcript.h | $(BIN)
	@if [ -e /usr/include/liburing.h ]; then \
		echo "$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread -luring"; \
		$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread -luring; \
	else echo "not building $@: no liburing.h (make deps installs liburing-dev)"; fi
$(BIN)/uring_moves: c-tests/uring_moves.c | $(BIN)
	@if [ -e /usr/include/liburing.h ]; then \
		echo "$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread -luring"; \
		$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< -pthread -luring; \
	else echo "not building $@: no liburing.h (make deps installs liburing-dev)"; fi

# OpenMP (GCC's libgomp, which comes with gcc).
$(BIN)/omp_team: c-tests/omp_team.c | $(BIN)
	$(CC) $(CFLAGS) -fopenmp $(LDFLAGS) -o $@ $< -pthread

# The two HTTP servers share their request handling.
$(BIN)/threaded_http $(BIN)/epoll_http: c-tests/http_common.h

# The tests that show a wait leaves its worker free share the ticker.
$(BIN)/ipc_waits $(BIN)/stdio_pipe $(BIN)/system_wait $(BIN)/wait_family \
	$(BIN)/c11_threads $(BIN)/aio_posix $(BIN)/stdio_write_pipe: c-tests/ticker.h

deps:
	@scripts/deps.sh

unit:
	$(CARGO) test --release

ctest: all
	@scripts/run-tests.sh

test: deps all unit ctest

demo: deps all
	@scripts/demo.sh

bench: deps all
	@scripts/bench.sh

soak: deps all
	@scripts/soak.sh

fmt:
	$(CARGO) fmt --check

lint:
	$(CARGO) clippy --release --all-targets -- -D warnings

check: fmt lint
	@scripts/check.sh

# The launcher is installed with the library's directory written in, so it
# preloads the installed library; corun.pc with the install's directories.
install: $(LIB)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(BINDIR) \
		$(DESTDIR)$(PCDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(DATADIR)
	install -m 0755 $(LIB) $(DESTDIR)$(LIBDIR)/libcorun.so
	install -m 0644 include/corun.h $(DESTDIR)$(INCLUDEDIR)/corun.h
	sed 's|^installed_libdir=""$$|installed_libdir="$(LIBDIR)"|' scripts/corun > $(DESTDIR)$(BINDIR)/corun.tmp
	grep -q '^installed_libdir="$(LIBDIR)"$$' $(DESTDIR)$(BINDIR)/corun.tmp
	chmod 0755 $(DESTDIR)$(BINDIR)/corun.tmp
	mv $(DESTDIR)$(BINDIR)/corun.tmp $(DESTDIR)$(BINDIR)/corun
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
		-e 's|@VERSION@|$(VERSION)|' corun.pc.in > $(DESTDIR)$(PCDIR)/corun.pc
	install -m 0644 man/corun.1 $(DESTDIR)$(MANDIR)/man1/corun.1
	install -m 0644 man/corun.3 $(DESTDIR)$(MANDIR)/man3/corun.3
	install -m 0644 scripts/corun-gdb.py $(DESTDIR)$(DATADIR)/corun-gdb.py

# Removes the files install wrote, then the directories this leaves empty,
# up to the prefix (never one that holds anything else, nor the prefix).
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	@for d in $(DATADIR) $(PCDIR) $(MANDIR)/man1 $(MANDIR)/man3 $(INCLUDEDIR) $(BINDIR) $(LIBDIR); do \
		d="$(DESTDIR)$$d"; \
		while [ "$$d" != "$(DESTDIR)$(PREFIX)" ] && [ "$$d" != / ] && rmdir "$$d" 2>/dev/null; do \
			d=$$(dirname "$$d"); done; \
	done

clean:
	$(CARGO) clean
	rm -rf $(BIN)
$(PLAIN_BINS): $(wildcard c-tests/*.h)
