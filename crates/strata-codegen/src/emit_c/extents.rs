//! Extents as run-time arguments: how one compiled kernel serves every size.
//!
//! While a program is printed, every interval bound, extent or stride the C needs is printed
//! through [`ext`]: not as a literal but as a variable `xN` read from an array of the program's
//! extents, which the run passes after the buffers (`buf[buffers.len()]`). Slots are given by
//! value, in the order they are first printed, so equal values share one slot: the text records
//! which printed extents were equal, never what they were. Zero stays a literal (an interval
//! starting at 0 needs no offset arithmetic).
//!
//! Why this is exact: printing with literals and printing with slots visit the same sites, so
//! the slot text with [`Slots::values`] substituted *is* the text a specialized emission would
//! print. A kernel program at another size therefore either prints the same text — and runs the
//! already compiled kernel with its own extents, with no compile — or its lowering, schedule or
//! equalities differ, and the text (the compile cache's key) differs with it. Whatever still
//! prints a size as a literal costs reuse, never correctness.
//!
//! The slots of the program being printed live in a per-thread scope ([`Slots::scope`]) so
//! that each of the emitter's many printing sites needs no extra argument.

use std::cell::RefCell;

thread_local! {
    static CURRENT: RefCell<Option<Vec<i64>>> = const { RefCell::new(None) };
}

/// The extent slots of one program's printing.
pub(super) struct Slots;

impl Slots {
    /// Runs `print` with a fresh slot table; returns what it printed and the slots' values.
    /// With `$STRATA_EXTENTS=literal` the sizes are printed as literals (one compiled kernel
    /// per size, as before extents were arguments): the switch that measures what the
    /// arguments cost and runs the test corpus both ways.
    pub(super) fn scope<T>(print: impl FnOnce() -> T) -> (T, Vec<i64>) {
        static LITERAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *LITERAL.get_or_init(|| std::env::var("STRATA_EXTENTS").is_ok_and(|v| v == "literal")) {
            return Slots::baked(print);
        }
        let outer = CURRENT.with(|c| c.replace(Some(Vec::new())));
        let printed = print();
        let values = CURRENT.with(|c| c.replace(outer)).unwrap_or_default();
        (printed, values)
    }

    /// Runs `print` with every size printed as a literal: the text of one size only, which
    /// the C compiler specializes (`emit_c::emit_baked`).
    pub(super) fn baked<T>(print: impl FnOnce() -> T) -> (T, Vec<i64>) {
        let outer = CURRENT.with(|c| c.replace(None));
        let printed = print();
        CURRENT.with(|c| c.replace(outer));
        (printed, Vec::new())
    }

    /// How many slots the current scope has given so far.
    pub(super) fn count() -> usize {
        CURRENT.with(|c| c.borrow().as_ref().map_or(0, Vec::len))
    }
}

/// The C of extent `v`: `0`, or the slot holding `v` (a literal outside a [`Slots::scope`]).
pub(super) fn ext(v: i64) -> String {
    if v == 0 {
        return "0".into();
    }
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(slots) => {
            let k = slots.iter().position(|&s| s == v).unwrap_or_else(|| {
                slots.push(v);
                slots.len() - 1
            });
            format!("x{k}")
        }
        None => v.to_string(),
    })
}

/// A constant of a scalar expression as an extent slot, where it may be a size in disguise (a
/// mean's divisor, a concatenation's seam): 64-bit integers beyond ±2 as themselves, `f64` and
/// `f32` values other than 0, ±1 and 2 by their bits; `None` for what stays a literal (small
/// constants keep the C compiler's strength reduction).
pub(super) fn constant(v: strata_runtime::Sv) -> Option<String> {
    use strata_runtime::Sv;
    let plain = |x: f64| x.is_finite() && ![0.0, 1.0, -1.0, 2.0].contains(&x);
    let slot = |bits: i64| CURRENT.with(|c| c.borrow().is_some()).then(|| ext(bits));
    match v {
        Sv::I64(x) | Sv::Index(x) if x.unsigned_abs() > 2 && x != i64::MIN => slot(x),
        Sv::F64(x) if plain(x) => slot(x.to_bits() as i64).map(|k| format!("strata_f64({k})")),
        Sv::F32(x) if plain(f64::from(x)) => slot(i64::from(x.to_bits())).map(|k| format!("strata_f32({k})")),
        _ => None,
    }
}

/// A coordinate's offset: a stencil's small shift stays a literal, a larger one (where a
/// concatenation's piece starts) is an extent.
pub(super) fn offset(o: i64) -> String {
    match o.unsigned_abs() <= 2 {
        true => o.to_string(),
        false => ext(o),
    }
}

/// An interval as the generated comments show it: `[start:stop]` in extents.
pub(super) fn interval(iv: strata_ir::Interval) -> String {
    format!("[{}:{}]", ext(iv.start), ext(iv.stop))
}

/// The declarations opening a kernel function: the first `count` slots read from the extents
/// array after the program's `buffers` buffers.
pub(super) fn declarations(count: usize, buffers: usize) -> String {
    if count == 0 {
        return String::new();
    }
    let names: Vec<String> = (0..count).map(|k| format!("x{k} = xs_[{k}]")).collect();
    let unused: Vec<String> = (0..count).map(|k| format!("(void)x{k};")).collect();
    format!(
        "  const int64_t *xs_ = (const int64_t *)buf[{buffers}];  /* extents */\n  const int64_t {};\n  {}\n",
        names.join(", "),
        unused.join(" ")
    )
}
