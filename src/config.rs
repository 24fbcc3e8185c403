//! Configuration from the environment (`CORUN_*`), read once at start.
//!
//! Every variable has a launcher option of the same meaning. A value that
//! does not parse stops the program before `main` with a message naming the
//! variable and what it accepts: a silent default would hide a typo in a
//! production setting. One rule for every value: surrounding blanks are
//! ignored and an empty value is the same as none; a switch is `1` or `0`;
//! each message reads `NAME="value" is not a <what>; use <what is accepted>`.
//! A `CORUN_*` name that is none of `KNOWN` is reported once, with the
//! closest known name (`unknown_names`): the program still runs.

use std::ffi::OsString;

/// Default coroutine stack size for `corun_spawn` (and threads without a
/// stack size attribute, see `hooks::pthread`).
pub const DEFAULT_STACK_SIZE: usize = 256 * 1024;
pub const MIN_STACK_SIZE: usize = 16 * 1024;
pub const MAX_STACK_SIZE: usize = 1 << 30;
pub const MAX_WORKERS: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadMode {
    /// `pthread_create` makes a coroutine (the point of corun).
    Coroutine,
    /// `pthread_create` makes a kernel thread, as without corun.
    Native,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    pub workers: usize,
    pub stack_size: usize,
    pub threads: ThreadMode,
    pub stats: bool,
    pub blocking_threads: usize,
    pub stall_ms: u64,
    /// CORUN_STALL_MS was given: the watchdog prints its reports on
    /// stderr (a worker blocked where corun cannot see, a coroutine that
    /// computes). By default it only counts them (CORUN_STATS) and moves
    /// never-run coroutines away: stderr stays as natively.
    pub stall_report: bool,
    /// Threads made by pthread_create get TLS of their own (CORUN_TLS).
    pub own_tls: bool,
    /// The signal that makes the process write a dump (0: none).
    pub dump_signal: i32,
    /// Time slice after which a coroutine that computes is preempted
    /// (CORUN_PREEMPT_MS; 0: never, the cooperative behaviour).
    pub preempt_ms: u64,
}

impl Config {
    pub fn from_env() -> Result<Config, String> {
        Config::from_lookup(|k| std::env::var_os(k))
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<OsString>) -> Result<Config, String> {
        let s = |k: &str| -> Result<Option<String>, String> {
            match get(k) {
                None => Ok(None),
                Some(v) => v
                    .into_string()
                    .map(|v| Some(v.trim().to_string()).filter(|v| !v.is_empty()))
                    .map_err(|_| format!("{k} is not valid UTF-8; use ASCII")),
            }
        };
        let workers = match s("CORUN_WORKERS")? {
            // The CPUs the affinity mask allows, fewer if the cgroup's
            // CPU bandwidth limit is lower (`sys/cgroup_cpu.rs`).
            None => crate::sys::available_cpus()
                .min(crate::sys::cgroup_cpu::cpu_limit().unwrap_or(usize::MAX))
                .clamp(1, MAX_WORKERS),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=MAX_WORKERS).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "CORUN_WORKERS={v:?} is not a worker count; use a whole number from 1 to {MAX_WORKERS}"
                    ))
                }
            },
        };
        let stack_size = match s("CORUN_STACK_SIZE")? {
            None => DEFAULT_STACK_SIZE,
            Some(v) => match parse_size(&v) {
                Some(n) if (MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "CORUN_STACK_SIZE={v:?} is not a stack size; use bytes or a number with k, m or g \
                         (e.g. 256k, 1m), from 16k to 1g"
                    ))
                }
            },
        };
        let threads = match s("CORUN_THREADS")?.as_deref() {
            None | Some("coroutine") => ThreadMode::Coroutine,
            Some("native") => ThreadMode::Native,
            Some(v) => {
                return Err(format!(
                    "CORUN_THREADS={v:?} is not a thread mode; use coroutine or native"
                ))
            }
        };
        let stats = parse_bool("CORUN_STATS", s("CORUN_STATS")?)?;
        let blocking_threads = match s("CORUN_BLOCKING_THREADS")? {
            None => 16,
            Some(v) => match v.parse::<usize>() {
                Ok(n) if (1..=1024).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "CORUN_BLOCKING_THREADS={v:?} is not a thread count; use a whole number from 1 to 1024"
                    ))
                }
            },
        };
        let stall_var = s("CORUN_STALL_MS")?;
        let stall_report = stall_var.is_some();
        let stall_ms = match stall_var {
            None => 100,
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n <= 3_600_000 => n,
                _ => {
                    return Err(format!(
                        "CORUN_STALL_MS={v:?} is not a duration; use milliseconds from 0 (off) to 3600000"
                    ))
                }
            },
        };
        let own_tls = match s("CORUN_TLS")?.as_deref() {
            None | Some("thread") => true,
            Some("worker") => false,
            Some(v) => {
                return Err(format!(
                    "CORUN_TLS={v:?} is not a TLS mode; use thread (each thread its own) or worker (shared per worker)"
                ))
            }
        };
        let dump_signal = match s("CORUN_DUMP_SIGNAL")? {
            None => 0,
            Some(v) => parse_signal(&v).ok_or_else(|| {
                format!(
                    "CORUN_DUMP_SIGNAL={v:?} is not a signal for dumps; use 0 (none), a number or a name \
                     such as USR2, SIGURG or RTMIN+3 (not KILL, STOP, SEGV, BUS, ILL, FPE, ABRT or TRAP)"
                )
            })?,
        };
        let preempt_ms = match s("CORUN_PREEMPT_MS")? {
            None => 10,
            Some(v) => match v.parse::<u64>() {
                Ok(n) if n <= 1000 => n,
                _ => {
                    return Err(format!(
                        "CORUN_PREEMPT_MS={v:?} is not a time slice; use milliseconds from 0 (off) to 1000"
                    ))
                }
            },
        };
        Ok(Config {
            dump_signal,
            preempt_ms,
            own_tls,
            workers,
            stack_size,
            threads,
            stats,
            blocking_threads,
            stall_ms,
            stall_report,
        })
    }
}

/// A switch: `1` or `0`, nothing else (one spelling, the one the messages
/// and the manual give).
fn parse_bool(name: &str, v: Option<String>) -> Result<bool, String> {
    match v.as_deref() {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(v) => Err(format!(
            "{name}={v:?} is not a switch; use 1 (on) or 0 (off)"
        )),
    }
}

/// A signal for `CORUN_DUMP_SIGNAL`: `0` (none), a number, or a name with
/// or without `SIG` (`USR2`, `SIGRTMIN+3`). Signals the kernel or corun
/// reserve (KILL, STOP; SEGV and BUS for overflows; ILL, FPE, ABRT, TRAP,
/// which a program raises on a fault) are refused.
pub fn parse_signal(v: &str) -> Option<i32> {
    const NAMES: &[(&str, i32)] = &[
        ("HUP", libc::SIGHUP),
        ("INT", libc::SIGINT),
        ("QUIT", libc::SIGQUIT),
        ("USR1", libc::SIGUSR1),
        ("USR2", libc::SIGUSR2),
        ("PIPE", libc::SIGPIPE),
        ("ALRM", libc::SIGALRM),
        ("TERM", libc::SIGTERM),
        ("CHLD", libc::SIGCHLD),
        ("CONT", libc::SIGCONT),
        ("TSTP", libc::SIGTSTP),
        ("TTIN", libc::SIGTTIN),
        ("TTOU", libc::SIGTTOU),
        ("URG", libc::SIGURG),
        ("XCPU", libc::SIGXCPU),
        ("XFSZ", libc::SIGXFSZ),
        ("VTALRM", libc::SIGVTALRM),
        ("PROF", libc::SIGPROF),
        ("WINCH", libc::SIGWINCH),
        ("IO", libc::SIGIO),
        ("PWR", libc::SIGPWR),
        ("SYS", libc::SIGSYS),
    ];
    const REFUSED: &[i32] = &[
        libc::SIGKILL,
        libc::SIGSTOP,
        libc::SIGSEGV,
        libc::SIGBUS,
        libc::SIGILL,
        libc::SIGFPE,
        libc::SIGABRT,
        libc::SIGTRAP,
    ];
    // glibc's real-time range as the kernel numbers it (SIGRTMIN is 34:
    // 32 and 33 are glibc's own).
    let (rtmin, rtmax) = (34, 64);
    let up = v.to_ascii_uppercase();
    let name = up.strip_prefix("SIG").unwrap_or(&up);
    let sig = if let Ok(n) = name.parse::<i32>() {
        n
    } else if let Some(r) = name.strip_prefix("RTMIN") {
        rtmin
            + if r.is_empty() {
                0
            } else {
                r.strip_prefix('+')?.parse::<i32>().ok()?
            }
    } else if let Some(r) = name.strip_prefix("RTMAX") {
        rtmax
            - if r.is_empty() {
                0
            } else {
                r.strip_prefix('-')?.parse::<i32>().ok()?
            }
    } else {
        NAMES.iter().find(|(n, _)| *n == name)?.1
    };
    let ok = sig == 0
        || ((1..=64).contains(&sig) && !(32..rtmin).contains(&sig) && !REFUSED.contains(&sig));
    ok.then_some(sig)
}

/// Every `CORUN_*` name corun reads (`CORUN_LIB` is the launcher's).
pub const KNOWN: &[&str] = &[
    "CORUN_WORKERS",
    "CORUN_STACK_SIZE",
    "CORUN_THREADS",
    "CORUN_TLS",
    "CORUN_STATS",
    "CORUN_STALL_MS",
    "CORUN_BLOCKING_THREADS",
    "CORUN_DUMP_SIGNAL",
    "CORUN_PREEMPT_MS",
    "CORUN_LIB",
];

/// One warning per `CORUN_*` name in `names` that corun does not know,
/// naming the closest known one: a misspelled variable would otherwise be
/// ignored without a word.
pub fn unknown_names(names: impl Iterator<Item = OsString>) -> Vec<String> {
    let mut out = Vec::new();
    for n in names {
        let n = n.to_string_lossy();
        if !n.starts_with("CORUN_") || KNOWN.contains(&n.as_ref()) {
            continue;
        }
        let closest = KNOWN
            .iter()
            .min_by_key(|k| edit_distance(&n, k))
            .expect("KNOWN is not empty");
        out.push(format!(
            "{n} is not a corun variable (ignored); did you mean {closest}? see corun(1)"
        ));
    }
    out
}

/// Levenshtein distance (insertions, deletions, substitutions), by bytes.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Parses `262144`, `256k`, `256K`, `1m`, `1M`, `1g` (powers of 1024; an
/// optional trailing `b`/`ib` as in `256KiB` is accepted).
pub fn parse_size(v: &str) -> Option<usize> {
    let v = v.trim().to_ascii_lowercase();
    let v = v
        .strip_suffix("ib")
        .or_else(|| v.strip_suffix('b'))
        .unwrap_or(&v);
    let (num, mult) = match v.chars().last()? {
        'k' => (&v[..v.len() - 1], 1usize << 10),
        'm' => (&v[..v.len() - 1], 1 << 20),
        'g' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    num.parse::<usize>().ok()?.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(pairs: &[(&str, &str)]) -> Result<Config, String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        Config::from_lookup(|k| {
            pairs
                .iter()
                .find(|(a, _)| a == k)
                .map(|(_, b)| OsString::from(b))
        })
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("262144"), Some(262144));
        assert_eq!(parse_size("256k"), Some(262144));
        assert_eq!(parse_size("256K"), Some(262144));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
        assert_eq!(parse_size("2g"), Some(2 << 30));
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("k"), None);
        assert_eq!(parse_size("12x"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("1.5m"), None);
        assert_eq!(parse_size("99999999999999999999g"), None);
    }

    #[test]
    fn defaults() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.stack_size, DEFAULT_STACK_SIZE);
        assert!(c.workers >= 1);
        assert_eq!(c.threads, ThreadMode::Coroutine);
        assert!(!c.stats);
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (k, v) in [
            ("CORUN_STACK_SIZE", "lots"),
            ("CORUN_STACK_SIZE", "1k"),
            ("CORUN_WORKERS", "0"),
            ("CORUN_WORKERS", "two"),
            ("CORUN_THREADS", "green"),
            ("CORUN_STATS", "maybe"),
            ("CORUN_STALL_MS", "-5"),
            ("CORUN_PREEMPT_MS", "1001"),
            ("CORUN_PREEMPT_MS", "10ms"),
            ("CORUN_BLOCKING_THREADS", "0"),
        ] {
            let e = cfg(&[(k, v)]).unwrap_err();
            assert!(e.starts_with(k), "{e}");
            assert!(e.contains(v), "{e}");
        }
    }

    #[test]
    fn preempt_slice() {
        assert_eq!(cfg(&[]).unwrap().preempt_ms, 10);
        assert_eq!(cfg(&[("CORUN_PREEMPT_MS", "0")]).unwrap().preempt_ms, 0);
        assert_eq!(
            cfg(&[("CORUN_PREEMPT_MS", " 1000 ")]).unwrap().preempt_ms,
            1000
        );
        let e = cfg(&[("CORUN_PREEMPT_MS", "-1")]).unwrap_err();
        assert!(e.ends_with("use milliseconds from 0 (off) to 1000"), "{e}");
    }

    #[test]
    fn switches_are_1_or_0_and_empty_is_unset() {
        assert!(cfg(&[("CORUN_STATS", " 1 ")]).unwrap().stats);
        assert!(!cfg(&[("CORUN_STATS", "0")]).unwrap().stats);
        assert!(!cfg(&[("CORUN_STATS", "")]).unwrap().stats);
        for v in ["yes", "on", "true", "no"] {
            let e = cfg(&[("CORUN_STATS", v)]).unwrap_err();
            assert!(e.ends_with("use 1 (on) or 0 (off)"), "{e}");
        }
        assert_eq!(cfg(&[("CORUN_WORKERS", "")]).unwrap(), cfg(&[]).unwrap());
    }

    #[test]
    fn dump_signals() {
        assert_eq!(parse_signal("USR2"), Some(libc::SIGUSR2));
        assert_eq!(parse_signal("sigurg"), Some(libc::SIGURG));
        assert_eq!(parse_signal("12"), Some(12));
        assert_eq!(parse_signal("0"), Some(0));
        assert_eq!(parse_signal("RTMIN+3"), Some(37));
        assert_eq!(parse_signal("SIGRTMAX"), Some(64));
        for bad in ["KILL", "SEGV", "9", "65", "33", "RTMIN+x", "NOPE", "-1"] {
            assert_eq!(parse_signal(bad), None, "{bad}");
        }
        let e = cfg(&[("CORUN_DUMP_SIGNAL", "KILL")]).unwrap_err();
        assert!(
            e.starts_with("CORUN_DUMP_SIGNAL=\"KILL\" is not a signal"),
            "{e}"
        );
    }

    #[test]
    fn unknown_names_get_the_closest() {
        let w = unknown_names(
            ["CORUN_WORKRES", "CORUN_WORKERS", "PATH", "CORUN_STAT"]
                .into_iter()
                .map(OsString::from),
        );
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("CORUN_WORKRES is not") && w[0].contains("mean CORUN_WORKERS?"));
        assert!(w[1].contains("mean CORUN_STATS?"), "{w:?}");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }

    #[test]
    fn good_values() {
        let c = cfg(&[
            ("CORUN_STACK_SIZE", "1m"),
            ("CORUN_WORKERS", "3"),
            ("CORUN_THREADS", "native"),
            ("CORUN_STATS", "1"),
        ])
        .unwrap();
        assert_eq!(c.stack_size, 1 << 20);
        assert_eq!(c.workers, 3);
        assert_eq!(c.threads, ThreadMode::Native);
        assert!(c.stats);
    }
}
