//! Extents as run-time arguments: how one compiled kernel serves every size.
//!
//! While a program is printed, every interval bound, extent or stride the C needs is printed
//! through [`ext`]: not as a literal but as a variable `xN` read from an array of the program's
//! extents, which the run passes after the buffers (`buf[buffers.len()]`). Slots are given by
//! value, in the order they are first printed, so equal values share one slot: the text records
//! which printed extents were equal, never what they were. Zero stays a literal (an interval
//! starting at 0 needs no offset arithmetic).
//!
//! A program lowered with [`crate::LowerOptions::extents_per_site`] gives every printed extent
//! a slot of its own instead, zero included: its text records no equality and no zero, only
//! the program's structure. The ranks of a distributed run need that: their local programs
//! differ only in their blocks' sizes and places, and which of those happen to be equal (a
//! block of 12 rows of a 48-column grid at 4 ranks) or zero (the first rank's start) must not
//! give a rank a kernel of its own.
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
    static CURRENT: RefCell<Option<Table>> = const { RefCell::new(None) };
}

/// The slots given so far in one program's printing.
struct Table {
    /// Each slot's value.
    values: Vec<i64>,
    /// Every printed extent takes a new slot (none shared, zero too).
    per_site: bool,
}

/// The extent slots of one program's printing.
pub(super) struct Slots;

impl Slots {
    /// Runs `print` with a fresh slot table (`per_site`: a slot for every printed extent,
    /// see the module documentation); returns what it printed and the slots' values. With
    /// `$STRATA_EXTENTS=literal` the sizes are printed as literals (one compiled kernel per
    /// size, as before extents were arguments): the switch that measures what the arguments
    /// cost and runs the test corpus both ways.
    pub(super) fn scope<T>(per_site: bool, print: impl FnOnce() -> T) -> (T, Vec<i64>) {
        static LITERAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if *LITERAL.get_or_init(|| std::env::var("STRATA_EXTENTS").is_ok_and(|v| v == "literal")) {
            return Slots::baked(print);
        }
        let outer = CURRENT.with(|c| c.replace(Some(Table { values: Vec::new(), per_site })));
        let printed = print();
        let values = CURRENT.with(|c| c.replace(outer)).map(|t| t.values).unwrap_or_default();
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

    /// Whether the current scope gives every printed extent a slot of its own.
    pub(super) fn per_site() -> bool {
        CURRENT.with(|c| c.borrow().as_ref().is_some_and(|t| t.per_site))
    }

    /// How many slots the current scope has given so far.
    pub(super) fn count() -> usize {
        CURRENT.with(|c| c.borrow().as_ref().map_or(0, |t| t.values.len()))
    }
}

/// The C of extent `v`: `0`, or the slot holding `v` (a literal outside a [`Slots::scope`]).
pub(super) fn ext(v: i64) -> String {
    CURRENT.with(|c| match c.borrow_mut().as_mut() {
        Some(t) if t.per_site => {
            t.values.push(v);
            format!("x{}", t.values.len() - 1)
        }
        _ if v == 0 => "0".into(),
        Some(t) => {
            let k = t.values.iter().position(|&s| s == v).unwrap_or_else(|| {
                t.values.push(v);
                t.values.len() - 1
            });
            format!("x{k}")
        }
        None => v.to_string(),
    })
}

/// Coordinate `c` (C text) made relative to an interval starting at `start`: `c` itself where
/// the start prints as the literal 0, else `(c - (start))`. Decided by the text, not the
/// value, so a per-site start of 0 still prints the subtraction.
pub(super) fn relative(c: String, start: i64) -> String {
    match ext(start) {
        s if s == "0" => c,
        s => format!("({c} - ({s}))"),
    }
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

/// The largest shift [`shifted`] prints as a literal: a stencil's (±2), or a point of a
/// jammed group ([`crate::schedule::JAM`] − 1), whichever is larger.
const SMALL_SHIFT: u64 = if crate::schedule::JAM - 1 > 2 { crate::schedule::JAM as u64 - 1 } else { 2 };

/// Coordinate `c` (C text) moved by `o`: `c` itself for 0, a small shift (up to
/// [`SMALL_SHIFT`]) as a literal, a larger one (where a concatenation's piece starts) as an
/// extent. With a slot per site every offset is one, 0 too: where a rank's block starts is an
/// offset of its reads.
pub(super) fn shifted(c: String, o: i64) -> String {
    match o {
        _ if Slots::per_site() => format!("({c} + {})", ext(o)),
        0 => c,
        _ if o.unsigned_abs() <= SMALL_SHIFT => format!("({c} + {o})"),
        _ => format!("({c} + {})", ext(o)),
    }
}

/// An interval as the generated comments show it: `[start:stop]` in extents; nothing where
/// every extent has a slot of its own (a comment would only add slots).
pub(super) fn interval(iv: strata_ir::Interval) -> String {
    match Slots::per_site() {
        true => String::new(),
        false => format!("[{}:{}]", ext(iv.start), ext(iv.stop)),
    }
}

/// The declarations opening a kernel function whose body was printed after the first `first`
/// slots were given: the slots it may read, from the extents array after the program's
/// `buffers` buffers. With a slot per site a body reads only its own; otherwise any given so
/// far.
pub(super) fn declarations(first: usize, buffers: usize) -> String {
    let (count, first) = (Slots::count(), if Slots::per_site() { first } else { 0 });
    if count == first {
        return String::new();
    }
    let names: Vec<String> = (first..count).map(|k| format!("x{k} = xs_[{k}]")).collect();
    let unused: Vec<String> = (first..count).map(|k| format!("(void)x{k};")).collect();
    format!(
        "  const int64_t *xs_ = (const int64_t *)buf[{buffers}];  /* extents */\n  const int64_t {};\n  {}\n",
        names.join(", "),
        unused.join(" ")
    )
}
