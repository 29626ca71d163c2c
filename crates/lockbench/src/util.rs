//! Small helpers every layer uses: cache padding, the pause unit of work, and the kops/s
//! format. Depends on nothing else in the crate.

/// 128-byte alignment: the adjacent-line prefetcher on x86_64 pulls lines in
/// pairs, so a 64-byte pad is not enough to keep a lock away from counters.
/// The wrapper starts on a 128-byte boundary and its size is a multiple of
/// 128, so nothing else shares its lines.
#[repr(C, align(128))]
#[derive(Default)]
pub struct CachePadded<T>(pub T);

impl<T> std::ops::Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// `n` pause instructions (the seeds' load unit, ≈27 ns each on the dev box).
#[inline(always)]
pub fn pause(n: u32) {
    for _ in 0..n {
        std::hint::spin_loop();
    }
}

/// kops/s for humans: 1234.5 → "1235", 12.34 → "12.3".
pub fn fmt_kops(k: f64) -> String {
    if k >= 100.0 {
        format!("{k:.0}")
    } else if k >= 10.0 {
        format!("{k:.1}")
    } else {
        format!("{k:.2}")
    }
}
