//! How long preparing and running natively took.

/// How long a native run took, in seconds.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    /// Lowering, emitting and compiling (or finding in the cache) and loading.
    pub compile_s: f64,
    /// Whether the shared object came from the on-disk cache.
    pub cached: bool,
    /// The first run (buffers allocated just before).
    pub first_s: f64,
    /// Each repeated run on the same, preallocated buffers.
    pub preallocated_s: Vec<f64>,
    /// Each repeated run allocating its written buffers afresh (as an allocating API would).
    pub allocating_s: Vec<f64>,
}

impl Timings {
    /// `{"compile_s", "cached", "first_s", "preallocated_s": [..], "allocating_s": [..]}`.
    pub fn to_json(&self) -> String {
        let json = serde_json::json!({
            "compile_s": self.compile_s,
            "cached": self.cached,
            "first_s": self.first_s,
            "preallocated_s": self.preallocated_s,
            "allocating_s": self.allocating_s,
        });
        format!("{json}\n")
    }

    /// Human-readable lines (`strata run --time`): compile and first run, then medians of the
    /// repeated runs.
    pub fn report(&self) -> String {
        let how = if self.cached { "cached" } else { "cold" };
        let mut s = format!("time: compile {:.3} ms ({how}), run {:.3} ms\n", self.compile_s * 1e3, self.first_s * 1e3);
        for (what, v) in [("preallocated outputs", &self.preallocated_s), ("allocating outputs", &self.allocating_s)] {
            if let Some(m) = median(v) {
                let min = v.iter().copied().fold(f64::INFINITY, f64::min);
                let max = v.iter().copied().fold(0.0, f64::max);
                s += &format!(
                    "time: {} runs, {what}: median {:.3} ms (min {:.3}, max {:.3})\n",
                    v.len(),
                    m * 1e3,
                    min * 1e3,
                    max * 1e3
                );
            }
        }
        s
    }
}

/// The median of `v` (`None` when empty).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => None,
        n if n % 2 == 1 => Some(s[n / 2]),
        n => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}
