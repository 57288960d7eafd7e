//! Facts about the machine the code is generated for.

/// `$STRATA_CACHE_BYTES` if set (0 streams every eligible result: the tests use it), else the
/// size of the largest data or unified cache of CPU 0 as Linux lists it in sysfs (the cache one
/// core shares: on CPUs built from several core complexes, `sysconf`'s `_SC_LEVEL3_CACHE_SIZE`
/// reports the whole socket's, eight or more times larger), else 32 MiB. Read once.
pub fn cache_bytes() -> i64 {
    static BYTES: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        std::env::var("STRATA_CACHE_BYTES")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .or_else(|| largest_cache("/sys/devices/system/cpu/cpu0/cache"))
            .unwrap_or(32 << 20)
    })
}

/// The largest-level data or unified cache under `dir` (sysfs `index*/{level,type,size}`).
fn largest_cache(dir: &str) -> Option<i64> {
    let read = |p: std::path::PathBuf| std::fs::read_to_string(p).ok().map(|s| s.trim().to_string());
    let mut best: Option<(u32, i64)> = None;
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        let (Some(level), Some(kind), Some(size)) =
            (read(path.join("level")), read(path.join("type")), read(path.join("size")))
        else {
            continue;
        };
        let (Ok(level), Some(digits)) = (level.parse::<u32>(), size.strip_suffix('K')) else { continue };
        let Ok(kib) = digits.parse::<i64>() else { continue };
        if kind != "Instruction" && best.is_none_or(|(l, _)| level > l) {
            best = Some((level, kib * 1024));
        }
    }
    best.map(|(_, bytes)| bytes)
}

#[cfg(test)]
mod tests {
    use super::largest_cache;

    #[test]
    fn the_largest_cache_is_the_highest_level_data_or_unified_one() {
        let dir = std::env::temp_dir().join(format!("strata-cache-{}", std::process::id()));
        for (i, (level, kind, size)) in
            [("1", "Data", "48K"), ("1", "Instruction", "32K"), ("2", "Unified", "1024K"), ("3", "Unified", "32768K")]
                .iter()
                .enumerate()
        {
            let index = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&index).unwrap();
            std::fs::write(index.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(index.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(index.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(largest_cache(dir.to_str().unwrap()), Some(32 << 20));
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(largest_cache("/nonexistent/strata"), None);
    }
}
