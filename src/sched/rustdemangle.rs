//! Rust symbol names made readable, for the watchdog and `corun dump`
//! (docs/ARCHITECTURE.md §11): the legacy scheme (`_ZN...17h<hash>E`) and
//! the v0 scheme (`_R...`, what current std is built with), as described
//! in the Rust reference's "v0 symbol format" (RFC 2603).
//!
//! The v0 printer is for reading, not for round trips: generic arguments
//! are printed, constants as `_`, function-pointer and `dyn` types in a
//! short form; anything it does not understand makes it give up (the
//! caller then shows the mangled name).

/// The readable form of a Rust symbol, or None if `name` is not one.
pub fn demangle(name: &str) -> Option<String> {
    if let Some(r) = name.strip_prefix("_R") {
        let mut p = V0 {
            s: r.as_bytes(),
            i: 0,
            depth: 0,
        };
        // An optional encoding version (decimal), then the path.
        while p.peek().is_some_and(|c| c.is_ascii_digit()) {
            p.i += 1;
        }
        return p.path().ok();
    }
    legacy(name)
}

/// `_ZN` (length, identifier)* `17h<16 hex>` `E`.
fn legacy(name: &str) -> Option<String> {
    let mut rest = name.strip_prefix("_ZN")?.strip_suffix('E')?;
    let mut parts: Vec<String> = Vec::new();
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let len: usize = rest[..digits].parse().ok()?;
        let id = rest.get(digits..digits + len)?;
        rest = &rest[digits + len..];
        parts.push(id.to_string());
    }
    let hash = parts.pop()?;
    if !(hash.len() == 17 && hash.starts_with('h')) {
        return None;
    }
    let unescape = |p: &str| {
        let mut s = p
            .strip_prefix('_')
            .filter(|r| r.starts_with('$'))
            .unwrap_or(p)
            .to_string();
        for (from, to) in [
            ("$LT$", "<"),
            ("$GT$", ">"),
            ("$RF$", "&"),
            ("$BP$", "*"),
            ("$C$", ","),
            ("$SP$", "@"),
            ("$u20$", " "),
            ("$u27$", "'"),
            ("$u5b$", "["),
            ("$u5d$", "]"),
            ("$u7b$", "{"),
            ("$u7d$", "}"),
            ("$u7e$", "~"),
            ("..", "::"),
        ] {
            s = s.replace(from, to);
        }
        s
    };
    Some(
        parts
            .iter()
            .map(|p| unescape(p))
            .collect::<Vec<_>>()
            .join("::"),
    )
}

struct V0<'a> {
    s: &'a [u8],
    i: usize,
    depth: u32,
}

type R<T> = Result<T, ()>;

impl V0<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn next(&mut self) -> R<u8> {
        let c = self.peek().ok_or(())?;
        self.i += 1;
        Ok(c)
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.i += 1;
        }
        hit
    }

    /// `{0-9a-zA-Z} _`: "_" is 0, otherwise the number plus one.
    fn base62(&mut self) -> R<u64> {
        if self.eat(b'_') {
            return Ok(0);
        }
        let mut v: u64 = 0;
        loop {
            let c = self.next()?;
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'z' => c - b'a' + 10,
                b'A'..=b'Z' => c - b'A' + 36,
                b'_' => return v.checked_add(1).ok_or(()),
                _ => return Err(()),
            };
            v = v
                .checked_mul(62)
                .and_then(|v| v.checked_add(d as u64))
                .ok_or(())?;
        }
    }

    fn disambiguator(&mut self) -> R<u64> {
        if self.eat(b's') {
            self.base62().map(|v| v + 1)
        } else {
            Ok(0)
        }
    }

    fn ident(&mut self) -> R<String> {
        self.disambiguator()?;
        let puny = self.eat(b'u');
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let len: usize = std::str::from_utf8(&self.s[start..self.i])
            .map_err(|_| ())?
            .parse()
            .map_err(|_| ())?;
        self.eat(b'_');
        let bytes = self.s.get(self.i..self.i + len).ok_or(())?;
        self.i += len;
        let id = String::from_utf8_lossy(bytes).into_owned();
        Ok(if puny { format!("{id}(punycode)") } else { id })
    }

    /// Runs `f` at the position a backref names, then comes back.
    fn backref<T>(&mut self, f: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let at = self.base62()? as usize;
        if at >= self.i || self.depth > 64 {
            return Err(());
        }
        let back = std::mem::replace(&mut self.i, at);
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        self.i = back;
        r
    }

    fn path(&mut self) -> R<String> {
        match self.next()? {
            b'C' => self.ident(),
            b'M' => {
                self.disambiguator()?;
                self.path()?;
                Ok(format!("<{}>", self.ty()?))
            }
            b'X' => {
                self.disambiguator()?;
                self.path()?;
                let t = self.ty()?;
                Ok(format!("<{t} as {}>", self.path()?))
            }
            b'Y' => {
                let t = self.ty()?;
                Ok(format!("<{t} as {}>", self.path()?))
            }
            b'N' => {
                let ns = self.next()?;
                let outer = self.path()?;
                let dis = if self.peek() == Some(b's') {
                    let save = self.i;
                    let d = self.disambiguator()?;
                    self.i = save;
                    d
                } else {
                    0
                };
                let id = self.ident()?;
                Ok(match ns {
                    b'C' => format!("{outer}::{{closure#{dis}}}"),
                    b'S' => format!("{outer}::{{shim:{id}#{dis}}}"),
                    c if c.is_ascii_uppercase() => format!("{outer}::{{{}:{id}}}", c as char),
                    _ => format!("{outer}::{id}"),
                })
            }
            b'I' => {
                let p = self.path()?;
                let mut args = Vec::new();
                while !self.eat(b'E') {
                    args.push(self.generic_arg()?);
                }
                Ok(format!("{p}::<{}>", args.join(", ")))
            }
            b'B' => self.backref(|p| p.path()),
            _ => Err(()),
        }
    }

    fn generic_arg(&mut self) -> R<String> {
        if self.eat(b'L') {
            self.base62()?;
            return Ok("'_".to_string());
        }
        if self.eat(b'K') {
            self.konst()?;
            return Ok("_".to_string());
        }
        self.ty()
    }

    fn konst(&mut self) -> R<()> {
        if self.eat(b'p') {
            return Ok(());
        }
        if self.eat(b'B') {
            return self.backref(|p| p.konst());
        }
        self.ty()?;
        self.eat(b'n');
        while self.next()? != b'_' {}
        Ok(())
    }

    fn ty(&mut self) -> R<String> {
        let basic = |c: u8| -> Option<&'static str> {
            Some(match c {
                b'a' => "i8",
                b'b' => "bool",
                b'c' => "char",
                b'd' => "f64",
                b'e' => "str",
                b'f' => "f32",
                b'h' => "u8",
                b'i' => "isize",
                b'j' => "usize",
                b'l' => "i32",
                b'm' => "u32",
                b'n' => "i128",
                b'o' => "u128",
                b's' => "i16",
                b't' => "u16",
                b'u' => "()",
                b'v' => "...",
                b'x' => "i64",
                b'y' => "u64",
                b'z' => "!",
                b'p' => "_",
                _ => return None,
            })
        };
        let c = self.peek().ok_or(())?;
        if let Some(b) = basic(c) {
            self.i += 1;
            return Ok(b.to_string());
        }
        match c {
            b'C' | b'M' | b'X' | b'Y' | b'N' | b'I' => self.path(),
            b'B' => {
                self.i += 1;
                self.backref(|p| p.ty())
            }
            _ => {
                self.i += 1;
                match c {
                    b'A' => {
                        let t = self.ty()?;
                        self.konst()?;
                        Ok(format!("[{t}; _]"))
                    }
                    b'S' => Ok(format!("[{}]", self.ty()?)),
                    b'T' => {
                        let mut v = Vec::new();
                        while !self.eat(b'E') {
                            v.push(self.ty()?);
                        }
                        Ok(format!("({})", v.join(", ")))
                    }
                    b'R' | b'Q' => {
                        if self.eat(b'L') {
                            self.base62()?;
                        }
                        let m = if c == b'Q' { "&mut " } else { "&" };
                        Ok(format!("{m}{}", self.ty()?))
                    }
                    b'P' => Ok(format!("*const {}", self.ty()?)),
                    b'O' => Ok(format!("*mut {}", self.ty()?)),
                    b'F' => {
                        if self.eat(b'G') {
                            self.base62()?;
                        }
                        self.eat(b'U');
                        if self.eat(b'K') && !self.eat(b'C') {
                            self.ident()?;
                        }
                        while !self.eat(b'E') {
                            self.ty()?;
                        }
                        self.ty()?;
                        Ok("fn(..)".to_string())
                    }
                    b'D' => {
                        if self.eat(b'G') {
                            self.base62()?;
                        }
                        let mut v = Vec::new();
                        while !self.eat(b'E') {
                            v.push(self.path()?);
                            while self.eat(b'p') {
                                self.ident()?;
                                self.ty()?;
                            }
                        }
                        if self.eat(b'L') {
                            self.base62()?;
                        }
                        Ok(format!("dyn {}", v.join(" + ")))
                    }
                    _ => Err(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::demangle;

    #[test]
    fn legacy_names() {
        assert_eq!(
            demangle("_ZN12rust_threads8spin_for17h0123456789abcdefE").as_deref(),
            Some("rust_threads::spin_for")
        );
        assert_eq!(demangle("plain_c"), None);
    }

    #[test]
    fn v0_names() {
        assert_eq!(
            demangle("_RNvCs1234_12rust_threads8spin_for").as_deref(),
            Some("rust_threads::spin_for")
        );
        // std's thread trampoline, as nm -C prints it.
        assert_eq!(
            demangle(
                "_RNvNvMs0_NtNtNtCsjrHSEGnQ3l9_3std3sys6thread4unixNtB7_6Thread3new12thread_start"
            )
            .as_deref(),
            Some("<std::sys::thread::unix::Thread>::new::thread_start")
        );
        assert_eq!(
            demangle("_RNCNvCs1234_12rust_threads4main0B3_").as_deref(),
            Some("rust_threads::main::{closure#0}")
        );
    }
}
