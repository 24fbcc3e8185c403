//! Which bytes of a pthread object glibc's initialisers set differently
//! for an attribute (process-shared, the monotonic clock): `Mask::diff` of
//! two objects initialised apart, and `Mask::hit`, whether an object of
//! the program's has any of those bits (then corun leaves it to glibc).
//! Apart from `mod.rs` so that the unit tests, which do not build the
//! hooks, test it.

// is_empty, clear_of: used by the hooks, which the unit tests do not build.
#![cfg_attr(test, allow(dead_code))]

/// Bytes that differ between two initialisations of an object.
#[derive(Clone, Copy)]
pub(crate) struct Mask {
    bytes: [u8; 64],
    len: usize,
    /// The bytes that differ lie in `first..end` (empty when none): `hit`
    /// reads those only. The whole object byte by byte was ~450
    /// instructions per `pthread_rwlock_*` call (OpenSSL's start-up in
    /// haproxy: 836,000 calls, 0.37 billion instructions).
    first: usize,
    end: usize,
}

impl Mask {
    pub(crate) fn diff(a: &[u8], b: &[u8]) -> Mask {
        let mut m = Mask {
            bytes: [0; 64],
            len: a.len().min(64),
            first: 0,
            end: 0,
        };
        for i in 0..m.len {
            m.bytes[i] = a[i] ^ b[i];
        }
        if let Some(f) = m.bytes[..m.len].iter().position(|&b| b != 0) {
            m.first = f;
            m.end = m.len
                - m.bytes[..m.len]
                    .iter()
                    .rev()
                    .position(|&b| b != 0)
                    .unwrap_or(0);
        }
        m
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes[..self.len].iter().all(|&b| b == 0)
    }

    /// No difference in bytes `lo..hi` (the words corun uses).
    pub(crate) fn clear_of(&self, lo: usize, hi: usize) -> bool {
        self.bytes[lo..hi.min(self.len)].iter().all(|&b| b == 0)
    }

    /// Whether `obj` has any bit of the mask set.
    ///
    /// # Safety
    /// `obj` points at `len` readable bytes.
    pub(crate) unsafe fn hit(&self, obj: *const u8) -> bool {
        (self.first..self.end).any(|i| {
            // SAFETY: i < len, within the object by the contract.
            self.bytes[i] != 0
                && unsafe { std::ptr::read_volatile(obj.add(i)) } & self.bytes[i] != 0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Mask;

    #[test]
    fn mask_hits_only_its_bytes() {
        let a = [0u8, 0, 4, 0, 1, 0, 0, 0];
        let m = Mask::diff(&a, &[0; 8]);
        assert_eq!((m.first, m.end), (2, 5));
        let probe = |o: [u8; 8]| {
            // SAFETY: `o` is 8 readable bytes, the mask's length.
            unsafe { m.hit(o.as_ptr()) }
        };
        assert!(probe([0, 0, 4, 0, 0, 0, 0, 0]));
        assert!(probe([0, 0, 0, 0, 0xff, 0, 0, 0]));
        assert!(!probe([0xff, 0xff, 0xfb, 0xff, 0xfe, 0xff, 0xff, 0xff]));
        let none = Mask::diff(&[7; 8], &[7; 8]);
        assert_eq!(none.first, none.end);
        // SAFETY: as above.
        assert!(!unsafe { none.hit([0xffu8; 8].as_ptr()) });
    }
}
