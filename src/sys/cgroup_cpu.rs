//! The CPU bandwidth limit of the process's cgroup, as a number of CPUs:
//! the default worker count is the smaller of it and the CPUs the
//! affinity mask allows (`config.rs`), as Go 1.25 sets GOMAXPROCS.
//!
//! A container given 2 CPUs' worth of time on a 64-CPU host sees all 64 in
//! its affinity mask; with a worker per CPU, 62 workers had nothing to add
//! but their idle spins (`run_loop.rs`), which the quota counts, so the
//! container was throttled sooner.
//!
//! cgroup v2: `cpu.max` ("QUOTA PERIOD" or "max PERIOD"); v1: the cpu
//! controller's `cpu.cfs_quota_us` (-1: none) and `cpu.cfs_period_us`.
//! The process's cgroup comes from /proc/self/cgroup, the hierarchy's
//! mount point and root from /proc/self/mountinfo; every ancestor up to
//! the mount point limits too, so the smallest limit counts. A limit is
//! rounded up to whole CPUs. Anything unreadable means no limit.

use std::path::{Path, PathBuf};

/// The cgroup CPU limit in whole CPUs (rounded up, at least 1), or None.
pub fn cpu_limit() -> Option<usize> {
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let mut best: Option<f64> = None;
    // v2 first, then a v1 cpu controller: a hybrid host has both.
    for v2 in [true, false] {
        let Some(rel) = cgroup_path(&cgroups, v2) else {
            continue;
        };
        let Some((mount, root)) = mount_of(&mountinfo, v2) else {
            continue;
        };
        let Some(dir) = cgroup_dir(&mount, &root, &rel) else {
            continue;
        };
        let mut d = dir.as_path();
        loop {
            if let Some(cpus) = read_limit(d, v2) {
                best = Some(best.map_or(cpus, |b| b.min(cpus)));
            }
            if d == mount.as_path() {
                break;
            }
            match d.parent() {
                Some(p) if p.starts_with(&mount) => d = p,
                _ => break,
            }
        }
    }
    best.map(|c| (c.ceil() as usize).max(1))
}

/// The process's cgroup path in the v2 hierarchy ("0::PATH") or in the
/// v1 hierarchy that has the cpu controller ("N:cpu,cpuacct:PATH").
fn cgroup_path(cgroups: &str, v2: bool) -> Option<String> {
    cgroups.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        let found = if v2 {
            id == "0" && ctrls.is_empty()
        } else {
            ctrls.split(',').any(|c| c == "cpu")
        };
        found.then(|| path.to_string())
    })
}

/// The mount point and mount root of the v2 hierarchy, or of the v1
/// hierarchy with the cpu controller (mountinfo(5): field 4 is the root,
/// field 5 the mount point; after " - ", the type and super options).
fn mount_of(mountinfo: &str, v2: bool) -> Option<(PathBuf, String)> {
    mountinfo.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        let f: Vec<&str> = pre.split(' ').collect();
        let p: Vec<&str> = post.split(' ').collect();
        let (root, point) = (f.get(3)?, f.get(4)?);
        let (fstype, opts) = (p.first()?, p.get(2).copied().unwrap_or(""));
        let found = if v2 {
            *fstype == "cgroup2"
        } else {
            *fstype == "cgroup" && opts.split(',').any(|o| o == "cpu")
        };
        found.then(|| (PathBuf::from(unescape(point)), unescape(root)))
    })
}

/// mountinfo escapes space, tab, newline and backslash as octal (\040).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) if b[i] == b'\\' => {
                let v = d.iter().fold(0u32, |v, c| v * 8 + u32::from(c - b'0'));
                out.push(v as u8);
                i += 4;
            }
            _ => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The directory of cgroup `rel` under a hierarchy mounted at `mount`
/// whose mount root is `root` (a container sees its own cgroup as "/").
fn cgroup_dir(mount: &Path, root: &str, rel: &str) -> Option<PathBuf> {
    let inside = if root == "/" {
        rel
    } else {
        match rel.strip_prefix(root) {
            Some(r) if r.is_empty() || r.starts_with('/') => r,
            // Not below the mount's root (a cgroup namespace's path is
            // already relative to it).
            _ => rel,
        }
    };
    let mut dir = mount.to_path_buf();
    for part in inside.split('/').filter(|p| !p.is_empty()) {
        if part == ".." {
            return None;
        }
        dir.push(part);
    }
    Some(dir)
}

/// The limit set in directory `d`, in CPUs, if any.
fn read_limit(d: &Path, v2: bool) -> Option<f64> {
    let (quota, period) = if v2 {
        let s = std::fs::read_to_string(d.join("cpu.max")).ok()?;
        let mut f = s.split_whitespace();
        let q = f.next()?;
        if q == "max" {
            return None;
        }
        (q.parse::<f64>().ok()?, f.next()?.parse::<f64>().ok()?)
    } else {
        let q = std::fs::read_to_string(d.join("cpu.cfs_quota_us")).ok()?;
        let q = q.trim().parse::<f64>().ok()?;
        if q < 0.0 {
            return None;
        }
        let p = std::fs::read_to_string(d.join("cpu.cfs_period_us")).ok()?;
        (q, p.trim().parse::<f64>().ok()?)
    };
    (quota > 0.0 && period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_from_proc_files() {
        let cg = "12:cpu,cpuacct:/docker/abc\n0::/user.slice/u.scope\n";
        assert_eq!(
            cgroup_path(cg, true).as_deref(),
            Some("/user.slice/u.scope")
        );
        assert_eq!(cgroup_path(cg, false).as_deref(), Some("/docker/abc"));
        let mi = "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n\
                  31 25 0:27 /docker/abc /sys/fs/cgroup/cpu\\040x rw - cgroup cgroup rw,cpu,cpuacct\n";
        let (m, r) = mount_of(mi, true).unwrap();
        assert_eq!((m, r.as_str()), (PathBuf::from("/sys/fs/cgroup"), "/"));
        let (m, r) = mount_of(mi, false).unwrap();
        assert_eq!(
            (m, r.as_str()),
            (PathBuf::from("/sys/fs/cgroup/cpu x"), "/docker/abc")
        );
        // The container's own cgroup is the mount's root.
        let d = cgroup_dir(Path::new("/c"), "/docker/abc", "/docker/abc").unwrap();
        assert_eq!(d, PathBuf::from("/c"));
        let d = cgroup_dir(Path::new("/c"), "/", "/a/b").unwrap();
        assert_eq!(d, PathBuf::from("/c/a/b"));
        assert!(cgroup_dir(Path::new("/c"), "/", "/a/../b").is_none());
    }

    #[test]
    fn limits_from_files() {
        let d = std::env::temp_dir().join(format!("corun-cg-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("cpu.max"), "150000 100000\n").unwrap();
        assert_eq!(read_limit(&d, true), Some(1.5));
        std::fs::write(d.join("cpu.max"), "max 100000\n").unwrap();
        assert_eq!(read_limit(&d, true), None);
        std::fs::write(d.join("cpu.cfs_quota_us"), "-1\n").unwrap();
        std::fs::write(d.join("cpu.cfs_period_us"), "100000\n").unwrap();
        assert_eq!(read_limit(&d, false), None);
        std::fs::write(d.join("cpu.cfs_quota_us"), "50000\n").unwrap();
        assert_eq!(read_limit(&d, false), Some(0.5));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
