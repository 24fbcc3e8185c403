//! What a `scanf` format asks of its input first (for `stdio_scanf.rs`).

use std::ffi::{c_char, CStr};

/// Whether a scan of `fmt` starts by skipping white space: a blank in the
/// format, or a conversion other than `%c`, `%[` and `%n`.
pub fn skips_blanks_first(fmt: *const c_char) -> bool {
    if fmt.is_null() {
        return false;
    }
    // SAFETY: the caller's format, a NUL-terminated string (scanf's
    // contract); read up to its NUL.
    let fmt = unsafe { CStr::from_ptr(fmt) }.to_bytes();
    match fmt.first() {
        Some(b) if b.is_ascii_whitespace() => true,
        Some(b'%') => {
            let conv = fmt[1..]
                .iter()
                .find(|b| !(b.is_ascii_digit() || b"*'hlLqjztm".contains(b)));
            !matches!(conv, Some(b'c' | b'[' | b'n' | b'%') | None)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::skips_blanks_first;

    fn skips(fmt: &str) -> bool {
        let c = std::ffi::CString::new(fmt).unwrap();
        skips_blanks_first(c.as_ptr())
    }

    #[test]
    fn formats_that_skip_blanks_first() {
        for f in ["%d", " %c", "%5s", "%lf", "%*d %d", "%hhu", "%ms", "\n"] {
            assert!(skips(f), "{f}");
        }
        for f in ["%c", "%3c", "%[a-z]", "%n", "%%", "x%d", "", "%"] {
            assert!(!skips(f), "{f}");
        }
    }
}
