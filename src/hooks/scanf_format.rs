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
    skips_in(unsafe { CStr::from_ptr(fmt) }.to_bytes())
}

/// The same for a wide format (`wscanf`): its first characters, those
/// outside ASCII read as a byte no conversion has.
pub fn skips_blanks_first_wide(fmt: *const libc::wchar_t) -> bool {
    if fmt.is_null() {
        return false;
    }
    let mut head = [0u8; 64];
    let mut n = 0;
    while n < head.len() {
        // SAFETY: the caller's wide format, NUL-terminated (wscanf's
        // contract); read up to its NUL or 64 characters.
        let c = unsafe { *fmt.add(n) };
        if c == 0 {
            break;
        }
        head[n] = if (0..0x80).contains(&c) {
            c as u8
        } else {
            0xff
        };
        n += 1;
    }
    skips_in(&head[..n])
}

fn skips_in(fmt: &[u8]) -> bool {
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
    use super::{skips_blanks_first, skips_blanks_first_wide};

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

    #[test]
    fn wide_formats_as_narrow_ones() {
        for (f, want) in [
            ("%d", true),
            (" %lc", true),
            ("%ls", true),
            ("%lc", false),
            ("é%d", false),
        ] {
            let w: Vec<libc::wchar_t> = f.chars().map(|c| c as libc::wchar_t).chain([0]).collect();
            assert_eq!(skips_blanks_first_wide(w.as_ptr()), want, "{f}");
        }
    }
}
