//! Running a compiled [`KernelProgram`] on runtime values.

use std::borrow::Cow;

use strata_runtime::storage::{LevelBuffers, Storage};
use strata_runtime::{Argument, Column, ColumnMut, ColumnRef, Data, ElemType, Stored, Tensor, Value, ValueType};

use crate::compile::Loaded;
use crate::kernel::{Buffer, KernelProgram, Role, StoragePart};
use crate::sparse::SparseTensor;

/// What a run needs of a kernel program: its buffers, sparse parameters and input tables.
/// A [`KernelProgram`] has them; a [`Layout`] keeps only them (plain data a prepared program
/// can share between threads).
pub trait RunLayout {
    /// Every buffer: parameters' fields first, then results.
    fn buffers(&self) -> &[Buffer];
    /// Sparse and ragged parameters, as storage buffers.
    fn sparse(&self) -> &[SparseTensor];
    /// Every input neighbor table with the source interval its entries must lie in.
    fn input_tables(&self) -> Cow<'_, [(usize, strata_ir::Interval)]>;
    /// The extents its generated code takes after the buffers ([`crate::emit_c::extents`]).
    fn extents(&self) -> Cow<'_, [i64]>;
}

impl RunLayout for KernelProgram {
    fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }
    fn sparse(&self) -> &[SparseTensor] {
        &self.sparse
    }
    fn input_tables(&self) -> Cow<'_, [(usize, strata_ir::Interval)]> {
        Cow::Owned(KernelProgram::input_tables(self))
    }
    fn extents(&self) -> Cow<'_, [i64]> {
        Cow::Owned(crate::emit_c::extents(self))
    }
}

/// The [`RunLayout`] of a kernel program, without its kernels.
#[derive(Clone, Debug)]
pub struct Layout {
    buffers: Vec<Buffer>,
    sparse: Vec<SparseTensor>,
    tables: Vec<(usize, strata_ir::Interval)>,
    /// What each kernel reads and writes, in order.
    access: Vec<crate::phases::Access>,
    /// The extents its generated code takes after the buffers.
    extents: Vec<i64>,
}

impl Layout {
    /// The layout of `program`, whose generated code takes `extents`
    /// ([`crate::emit_c::emit_with_extents`]).
    pub fn of(program: &KernelProgram, extents: Vec<i64>) -> Layout {
        Layout {
            buffers: program.buffers.clone(),
            sparse: program.sparse.clone(),
            tables: program.input_tables(),
            access: crate::phases::Access::all(program),
            extents,
        }
    }

    /// For each kernel, whether it runs before the parameters `late` hold their values
    /// ([`crate::phases::early`]); `None` when none can.
    pub fn early(&self, late: &[usize]) -> Option<Vec<bool>> {
        let buffers: Vec<usize> =
            (0..self.buffers.len()).filter(|&b| self.buffers[b].param.is_some_and(|p| late.contains(&p))).collect();
        crate::phases::early(&self.access, &buffers)
    }
}

impl RunLayout for Layout {
    fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }
    fn sparse(&self) -> &[SparseTensor] {
        &self.sparse
    }
    fn input_tables(&self) -> Cow<'_, [(usize, strata_ir::Interval)]> {
        Cow::Borrowed(&self.tables)
    }
    fn extents(&self) -> Cow<'_, [i64]> {
        Cow::Borrowed(&self.extents)
    }
}

/// Why a native run failed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// Integer division or modulo by zero.
    #[error("integer division by zero")]
    DivisionByZero,
    /// A neighbor-table entry outside its source interval (with the entry, the interval and
    /// the table, where the run recorded them).
    #[error("a neighbor table entry is outside its source interval{}", describe(.0))]
    TableOutOfInterval(Option<Bad>),
    /// A negative integer exponent.
    #[error("negative integer exponent in `power`")]
    NegativeExponent,
    /// A computed index (`get`, `set`, `gather`, `scatter`) outside its interval.
    #[error("an index is outside its dimension's interval{}", describe(.0))]
    IndexOutOfInterval(Option<Bad>),
    /// A ragged argument with absent elements inside a row: its storage would hold them as
    /// stored zeros, which the native code would read as present.
    #[error("`%{0}` has absent elements inside a ragged row (native code reads ragged rows as dense runs)")]
    RaggedGap(String),
    /// A sparse or ragged argument whose storage is malformed (see
    /// `strata_runtime::storage::validate`).
    #[error("`%{0}` is not well-formed storage: {1}")]
    BadStorage(String, String),
    /// A sparse result's buffers could not be allocated.
    #[error("out of memory allocating a sparse result")]
    OutOfMemory,
    /// `assemble` met a coordinate without a value or a value without a coordinate.
    #[error("`assemble`: the coordinates and the values differ in length somewhere (a coordinate without a value, or the reverse)")]
    AssembleMismatch,
    /// Any other code.
    #[error("native kernel failed with code {0}")]
    Other(i32),
}

/// The value a run found out of its interval, with the table's name (a parameter of the
/// program) where it came from one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bad {
    /// The entry or index.
    pub value: i64,
    /// The interval it had to lie in.
    pub interval: strata_ir::Interval,
    /// The table's name and the dimension its entries index.
    pub table: Option<(String, String)>,
}

fn describe(b: &Option<Bad>) -> String {
    match b {
        // `strata_u64_entry` maps unsigned entries beyond i64::MAX there.
        Some(Bad { value: i64::MIN, interval, table: Some((t, dim)) }) => {
            format!(": an entry of `%{t}` at or above 2^63 is outside `{dim}{interval}`")
        }
        Some(Bad { value, interval, table: Some((t, dim)) }) => {
            format!(": entry {value} of `%{t}` is outside `{dim}{interval}`")
        }
        Some(Bad { value, interval, table: None }) => format!(": {value} is outside {interval}"),
        None => String::new(),
    }
}

/// The first entry of table column `c` that is neither the skip value (−1, signed tables
/// only) nor a coordinate of `source`.
fn first_bad_entry(c: ColumnRef<'_>, source: strata_ir::Interval) -> Option<i128> {
    let (lo, hi) = (source.start, source.stop);
    // Every call checks every entry: chunks are tested without branches (the loop vectorizes),
    // and only a chunk holding a bad entry is searched for it.
    fn scan<T: strata_runtime::ColumnElement + Into<i64>>(
        c: &ColumnRef<'_>,
        skip: bool,
        lo: i64,
        hi: i64,
    ) -> Option<i128> {
        let v = c.as_slice::<T>()?;
        // One unsigned comparison for the interval, one for the skip value (none if unsigned).
        let (skip, width) = (if skip { -1 } else { i64::MIN }, hi.wrapping_sub(lo) as u64);
        let good = |t: i64| (t == skip) | ((t.wrapping_sub(lo) as u64) < width);
        v.chunks(1024)
            .find(|chunk| chunk.iter().fold(false, |bad, &t| bad | !good(t.into())))
            .and_then(|chunk| chunk.iter().map(|&t| t.into()).find(|&t| !good(t)))
            .map(i128::from)
    }
    use strata_ir::Scalar as S;
    match c.scalar() {
        S::I8 => scan::<i8>(&c, true, lo, hi),
        S::I16 => scan::<i16>(&c, true, lo, hi),
        S::I32 => match c.as_slice::<i32>() {
            Some(v) if i32::try_from(lo).is_ok() && u32::try_from(hi - lo).is_ok() => {
                first_bad_i32(v, lo as i32, (hi - lo) as u32).map(i128::from)
            }
            _ => scan::<i32>(&c, true, lo, hi),
        },
        S::I64 | S::Index => scan::<i64>(&c, true, lo, hi),
        S::U8 => scan::<u8>(&c, false, lo, hi),
        S::U16 => scan::<u16>(&c, false, lo, hi),
        S::U32 => scan::<u32>(&c, false, lo, hi),
        _ => {
            let (lo, hi) = (i128::from(lo), i128::from(hi));
            (0..c.len()).map(|i| c.get(i).as_i128()).find(|&t| !(lo <= t && t < hi))
        }
    }
}

/// The first entry of an `i32` table (the index type GT4Py and SciPy use) neither −1 nor in
/// `[lo, lo + width)`: compared in 32 bits, with AVX2 where the CPU has it — a run checks
/// every entry of its tables, so this is on every call's path. (Threads measured slower: the
/// kernel's OpenMP workers still spin on the cores after the previous call.)
fn first_bad_i32(v: &[i32], lo: i32, width: u32) -> Option<i32> {
    let good = |t: i32| t == -1 || (t.wrapping_sub(lo) as u32) < width;
    if any_bad_i32(v, lo, width) {
        v.iter().copied().find(|&t| !good(t))
    } else {
        None
    }
}

/// Whether any entry is bad (see [`first_bad_i32`]).
fn any_bad_i32(v: &[i32], lo: i32, width: u32) -> bool {
    #[inline(always)]
    fn fold(v: &[i32], lo: i32, width: u32) -> bool {
        v.iter().fold(false, |bad, &t| bad | !((t == -1) | ((t.wrapping_sub(lo) as u32) < width)))
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn fold_avx2(v: &[i32], lo: i32, width: u32) -> bool {
        fold(v, lo, width)
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        return unsafe { fold_avx2(v, lo, width) };
    }
    fold(v, lo, width)
}

/// The flat column of the leaf at `path`: tensor elements are laid out one after another
/// (outer levels, then the element's levels, row-major), as the lowering's flat buffers expect.
fn column(d: &Data, path: &[usize]) -> Column {
    match (d, path.split_first()) {
        (Data::Scalars(c), None) => c.clone(),
        (Data::Tuple(fs), Some((i, rest))) => column(&fs[*i], rest),
        (Data::Tensors(tiles), _) => {
            let parts: Vec<Column> = tiles.iter().map(|t| column(&t.data, path)).collect();
            let scalar = parts.first().map(Column::scalar).unwrap_or(strata_ir::Scalar::F64);
            let mut out = Column::zeros(scalar, parts.iter().map(Column::len).sum());
            let mut at = 0;
            for p in &parts {
                out.copy_from(at, p);
                at += p.len();
            }
            out
        }
        _ => panic!("buffer path matches the value's type"),
    }
}

/// The scalars one value of type `vt` holds per leaf: its points times its elements' (tensor
/// elements at every depth are laid out flat).
fn flat_len(vt: &ValueType) -> usize {
    match &vt.element {
        ElemType::Tensor(inner) => vt.len() * flat_len(inner),
        _ => vt.len(),
    }
}

/// Rebuilds a value of type `ty` from its leaf columns (in field order).
fn data_of(t: &ElemType, count: usize, cols: &mut dyn Iterator<Item = Column>) -> Data {
    match t {
        ElemType::Tuple(fs) => Data::Tuple(fs.iter().map(|f| data_of(f, count, cols)).collect()),
        ElemType::Tensor(vt) => {
            // One flat column per leaf of the element: cut it into elements.
            let flat: Vec<Column> = std::iter::from_fn(|| cols.next()).collect();
            let n = flat_len(vt);
            let tiles = (0..count)
                .map(|i| {
                    let mut parts = flat.iter().map(|c| c.slice(i * n..(i + 1) * n));
                    Tensor { ty: (**vt).clone(), data: data_of(&vt.element, vt.len(), &mut parts), present: None }
                })
                .collect();
            Data::Tensors(tiles)
        }
        _ => Data::Scalars(cols.next().expect("one column per leaf")),
    }
}

/// Runs `program` with `args` (one per entry parameter); returns the written values: the
/// function result as `result`, or each `out` parameter by name, with `result_ty` / the
/// parameter types giving their shapes.
pub fn run<T: Argument>(
    program: &impl RunLayout,
    lib: &Loaded,
    args: &[T],
    names: &[String],
    result_ty: Option<&ValueType>,
) -> Result<Vec<(String, Tensor)>, ExecError> {
    run_threads(program, lib, args, names, result_ty, threads_from_env())
}

/// The thread count from `$STRATA_NUM_THREADS` (0, the OpenMP default, when unset).
pub fn threads_from_env() -> usize {
    std::env::var("STRATA_NUM_THREADS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// [`run`] with an explicit thread count (0: the OpenMP default).
pub fn run_threads<T: Argument>(
    program: &impl RunLayout,
    lib: &Loaded,
    args: &[T],
    names: &[String],
    result_ty: Option<&ValueType>,
    threads: usize,
) -> Result<Vec<(String, Tensor)>, ExecError> {
    let mut buffers = Buffers::new(program, args)?;
    buffers.call(lib, threads)?;
    Ok(buffers.into_results(program, args, names, result_ty))
}

/// The error a run's code stands for (0: none); `bad` gives the value a checked access
/// met, where the run recorded it.
///
/// # Errors
/// The [`ExecError`] of a non-zero code.
pub fn code_error(code: i32, bad: impl Fn() -> Option<Bad>) -> Result<(), ExecError> {
    match code {
        0 => Ok(()),
        1 => Err(ExecError::DivisionByZero),
        2 => Err(ExecError::TableOutOfInterval(bad())),
        3 => Err(ExecError::NegativeExponent),
        4 => Err(ExecError::IndexOutOfInterval(bad())),
        5 => Err(ExecError::OutOfMemory),
        6 => Err(ExecError::AssembleMismatch),
        c => Err(ExecError::Other(c)),
    }
}

/// The buffers of one native run: one column per program buffer — the caller's own data for
/// an input no kernel writes (read in place, never copied), a copy for an input the program
/// writes (so nothing the caller holds is written), zeros for results and temporaries. A
/// `Buffers` can be run many times (benchmarks time [`Buffers::call`] on preallocated
/// buffers).
pub struct Buffers<'a> {
    cols: Vec<Slot<'a>>,
    /// Each buffer's element type.
    scalars: Vec<strata_ir::Scalar>,
    /// For each neighbor-table buffer, its parameter's name and the dimension its entries
    /// index (what a run-time error names); `None` for other buffers.
    tables: Vec<Option<(String, String)>>,
    /// The program's extents, passed after the buffers.
    extents: Vec<i64>,
    /// The buffers the last whole run ([`Self::call`]) allocated itself (`rt->alloc`: a sparse
    /// result's coordinates and values, sized at run time). The next whole run allocates them
    /// again before it touches them, so they go back to the pool first, where its allocations
    /// find them. Phases of a split run ([`Self::call_some`]) give nothing back.
    run_allocated: Vec<usize>,
}

/// One buffer: owned, or an input column borrowed from the caller (read-only: a column the
/// caller holds, or memory it keeps alive, such as a numpy array's).
enum Slot<'a> {
    Owned(Column),
    Borrowed(ColumnRef<'a>),
    /// An `out` parameter's values in memory the caller lent for writing in place.
    InPlace(ColumnMut<'a>),
}

impl Slot<'_> {
    fn ptr(&mut self) -> *mut std::ffi::c_void {
        match self {
            Slot::Owned(c) => c.as_mut_ptr(),
            // The kernels declare buffers nobody writes `const` and never store to them.
            Slot::Borrowed(c) => c.as_ptr().cast_mut(),
            Slot::InPlace(c) => c.as_mut_ptr(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Slot::Owned(c) => c.len(),
            Slot::Borrowed(c) => c.len(),
            Slot::InPlace(c) => c.as_ref().len(),
        }
    }

    fn give_back(self) {
        if let Slot::Owned(c) = self {
            pool::give_back(c);
        }
    }
}

/// The column of a read-only parameter buffer, borrowed when the argument stores it as is.
fn borrowed<'a, T: Argument>(b: &crate::kernel::Buffer, args: &'a [T]) -> Option<ColumnRef<'a>> {
    let p = b.param.filter(|_| !b.written && b.field.is_empty())?;
    args[p].column().filter(|c| c.scalar() == b.scalar)
}

/// The caller's memory for an `out` parameter's values, when it lends it (dense elements of the
/// buffer's type and length).
fn in_place<'a, T: Argument>(b: &crate::kernel::Buffer, args: &'a [T]) -> Option<ColumnMut<'a>> {
    let c = args[b.param?].column_mut()?;
    let len = b.len();
    let fits = b.written && !b.temp && b.field.is_empty() && b.role == Role::Elements;
    (fits && c.as_ref().scalar() == b.scalar && c.as_ref().len() == len).then_some(c)
}

fn slot<'a, T: Argument>(b: &crate::kernel::Buffer, args: &'a [T]) -> Slot<'a> {
    if let Some(c) = in_place(b, args) {
        return Slot::InPlace(c);
    }
    match borrowed(b, args) {
        Some(c) => Slot::Borrowed(c),
        None => Slot::Owned(fresh_column(b, args)),
    }
}

impl<'a> Buffers<'a> {
    /// Allocates the buffers of `program` for `args` (one per entry parameter); sparse and
    /// ragged arguments are assembled into their storage buffers.
    pub fn new<T: Argument>(program: &impl RunLayout, args: &'a [T]) -> Result<Buffers<'a>, ExecError> {
        // Each sparse argument's storage in the backend's formats: borrowed from a stored
        // argument already in them, else built.
        let mut storage: Vec<Option<Cow<'a, Storage>>> = vec![None; args.len()];
        let mut cols = Vec::with_capacity(program.buffers().len());
        // A stored argument of a written parameter is held logically: its dense view must fit.
        for b in program.buffers().iter().filter(|b| b.written) {
            if let Some(s) = b.param.and_then(|p| args[p].stored()) {
                if s.ty.len() > strata_runtime::value::DENSE_VIEW_LIMIT {
                    return Err(ExecError::BadStorage(
                        b.name.clone(),
                        format!("an `out` parameter is held densely, and its {} elements are too many", s.ty.len()),
                    ));
                }
            }
        }
        for b in program.buffers() {
            let (Role::Storage(part), Some(_)) = (b.role, b.param) else {
                cols.push(slot(b, args));
                continue;
            };
            let p = b.param.expect("storage buffers belong to parameters");
            if storage[p].is_none() {
                let t = program.sparse().iter().find(|t| program.buffers()[t.values].param == Some(p));
                let t = t.expect("a bound sparse parameter");
                let formats = crate::sparse::formats_of(t);
                storage[p] = Some(match (args[p].stored(), args[p].tensor()) {
                    (Some(s), _) => {
                        // The kernels index these arrays unchecked: the same validation the
                        // interpreter applies, before anything runs.
                        strata_runtime::storage::validate(&s.ty.shape(), &s.storage)
                            .map_err(|e| ExecError::BadStorage(t.name.clone(), e.0))?;
                        strata_runtime::storage::restore(Cow::Borrowed(&s.storage), &s.ty.shape(), &formats)
                    }
                    (None, Some(x)) => Cow::Owned(assemble(x, &formats, &t.name)?),
                    (None, None) => unreachable!("an argument is a tensor or stored"),
                });
            }
            let st = storage[p].as_mut().expect("assembled");
            // The values are read in place where the argument holds them in these formats.
            if let (StoragePart::Values, Cow::Borrowed(held)) = (part, &*st) {
                if held.values.scalar() == b.scalar {
                    cols.push(Slot::Borrowed(ColumnRef::of(&held.values)));
                    continue;
                }
            }
            let ints = |v: &[usize]| Column::I64(v.iter().map(|&x| x as i64).collect());
            cols.push(Slot::Owned(match (part, &st.levels) {
                (StoragePart::Values, _) => std::mem::replace(&mut st.to_mut().values, Column::zeros(b.scalar, 0)),
                (StoragePart::Positions(k), ls) => match &ls[k] {
                    LevelBuffers::Compressed { positions, .. } => ints(positions),
                    _ => unreachable!("a compressed level"),
                },
                (StoragePart::Coordinates(k), ls) => match &ls[k] {
                    // Narrow where the program reads them so (offsets within the level's
                    // interval, which `coordinate_scalar` checked fits).
                    LevelBuffers::Compressed { coordinates, .. } if b.scalar == strata_ir::Scalar::I32 => {
                        Column::I32(coordinates.iter().map(|&x| x as i32).collect())
                    }
                    LevelBuffers::Compressed { coordinates, .. } => ints(coordinates),
                    _ => unreachable!("a compressed level"),
                },
                (StoragePart::Offsets(k), ls) => match &ls[k] {
                    LevelBuffers::Ragged { offsets } => ints(offsets),
                    _ => unreachable!("a ragged level"),
                },
            }));
        }
        let tables: Vec<Option<(String, String)>> = program
            .buffers()
            .iter()
            .map(|b| {
                let src = b.levels.iter().find_map(|l| l.name.table_source())?;
                Some((b.name.split('.').next().unwrap_or(&b.name).to_string(), src.to_string()))
            })
            .collect();
        let buffers = Buffers {
            cols,
            scalars: program.buffers().iter().map(|b| b.scalar).collect(),
            tables,
            extents: program.extents().into_owned(),
            run_allocated: Vec::new(),
        };
        buffers.check_tables(program, |_| true)?;
        Ok(buffers)
    }

    /// Checks every entry of the input tables whose buffers `which` selects, as the interpreter
    /// checks a whole shift's table: -1 (in a signed table) or a coordinate of the source
    /// interval. [`Self::new`] checks them all before anything runs; a run whose late
    /// parameters arrive between its phases checks their tables again once they have. The
    /// kernels read these entries unchecked (`emit_c::tables`): this check is what keeps their
    /// loads in bounds.
    ///
    /// # Errors
    /// [`ExecError::TableOutOfInterval`] naming the first bad entry.
    pub fn check_tables(&self, program: &impl RunLayout, which: impl Fn(usize) -> bool) -> Result<(), ExecError> {
        for &(b, source) in program.input_tables().iter().filter(|(b, _)| which(*b)) {
            let c = match &self.cols[b] {
                Slot::Owned(c) => ColumnRef::of(c),
                Slot::Borrowed(c) => *c,
                Slot::InPlace(c) => c.as_ref(),
            };
            if let Some(t) = first_bad_entry(c, source) {
                return Err(ExecError::TableOutOfInterval(Some(Bad {
                    value: i64::try_from(t).unwrap_or(i64::MIN),
                    interval: source,
                    table: self.tables[b].clone(),
                })));
            }
        }
        Ok(())
    }

    /// Allocates the written buffers (results, temporaries, `out` parameters) afresh, as a run
    /// that does not keep its output memory would (freed buffers go back to the pool first, as
    /// dropping a previous result does); the inputs stay as they are.
    pub fn renew_written<T: Argument>(&mut self, program: &impl RunLayout, args: &'a [T]) {
        for (b, c) in program.buffers().iter().zip(&mut self.cols) {
            if (b.written || b.temp) && !matches!(c, Slot::InPlace(_)) {
                std::mem::replace(c, Slot::Owned(Column::zeros(b.scalar, 0))).give_back();
                *c = Slot::Owned(fresh_column(b, args));
            }
        }
    }

    /// Runs the kernels once on these buffers with `threads` threads (0: the OpenMP default).
    pub fn call(&mut self, lib: &Loaded, threads: usize) -> Result<(), ExecError> {
        // SAFETY: the pointers are the buffers' (see `call_with`).
        self.call_with(lib, true, |ptrs| Some(unsafe { lib.call(ptrs, threads) }))
    }

    /// Runs the kernels `run` marks (one flag per kernel), in order: one phase of a run split
    /// around late inputs ([`Layout::early`]; the other phase is a second call).
    ///
    /// # Errors
    /// As [`Self::call`]; [`ExecError::Other`] `-1` when the library has no such entry (built
    /// by an older version).
    pub fn call_some(&mut self, lib: &Loaded, threads: usize, run: &[bool]) -> Result<(), ExecError> {
        // SAFETY: the pointers are the buffers' (see `call_with`); `run` is the caller's.
        // A phase keeps what the run allocated so far: the other phase's kernels may read it.
        self.call_with(lib, false, |ptrs| unsafe { lib.call_some(ptrs, threads, run) })
    }

    /// Runs `call` on the buffers' pointers. `whole`: the call runs every kernel, so the
    /// buffers the last whole run allocated are allocated again before anything reads them.
    fn call_with(
        &mut self,
        lib: &Loaded,
        whole: bool,
        call: impl FnOnce(&mut [*mut std::ffi::c_void]) -> Option<i32>,
    ) -> Result<(), ExecError> {
        // An empty buffer points at spare zeros: a checked access that fails (a table entry
        // outside an empty source interval) still addresses the interval's first element
        // before the run reports the error, so every pointer must address one element.
        let mut spare = [0u64; 8];
        // Without this a repeated run would hold its previous result's memory while it
        // allocates the next: fresh pages, a fault on each (a 10 M-entry sparse sum's second
        // run cost 3-15x its first).
        let given_back = if whole { std::mem::take(&mut self.run_allocated) } else { Vec::new() };
        for &b in &given_back {
            std::mem::replace(&mut self.cols[b], Slot::Owned(Column::zeros(self.scalars[b], 0))).give_back();
        }
        let mut ptrs: Vec<*mut std::ffi::c_void> =
            self.cols.iter_mut().map(|c| if c.len() == 0 { spare.as_mut_ptr().cast() } else { c.ptr() }).collect();
        // The extents follow the buffers (read, never written, by the generated code).
        ptrs.push(self.extents.as_mut_ptr().cast());
        // Each pointer addresses a column of the buffer's type and length (built by
        // `fresh_column` from values of the verified types), alive and exclusively ours for
        // the call; buffers the code allocates come from `runtime::alloc` and are kept below.
        let (code, made) = crate::runtime::allocations(self.scalars.clone(), || call(&mut ptrs));
        let code = code.unwrap_or(-1);
        // Only a whole run's allocations are known to be made again by the next whole run.
        self.run_allocated = if whole { made.iter().map(|(b, _)| *b).collect() } else { Vec::new() };
        for (b, c) in made {
            std::mem::replace(&mut self.cols[b], Slot::Owned(c)).give_back();
        }
        code_error(code, || lib.bad_value().map(|b| self.describe(b)))
    }

    /// A bad value a run recorded, with the neighbor table it came from named as the program
    /// names it.
    pub fn describe(&self, b: crate::compile::BadValue) -> Bad {
        Bad { value: b.value, interval: b.interval, table: b.table.and_then(|k| self.tables.get(k).cloned().flatten()) }
    }

    /// Each buffer's memory (its first byte and length in bytes, in program order) and the
    /// extents: what a run on another device copies in and back (the GPU back end, whose
    /// kernels raise [`code_error`]'s codes). The memory is the buffers', valid while they are.
    pub fn memory(&mut self) -> (Vec<(*mut u8, usize)>, &[i64]) {
        let mem = self
            .cols
            .iter_mut()
            .zip(&self.scalars)
            .map(|(c, s)| (c.ptr().cast::<u8>(), c.len() * s.size_bytes()))
            .collect();
        (mem, &self.extents)
    }
}

impl<'a> Buffers<'a> {
    /// The written values: the function result as `result`, or each `out` parameter by name
    /// (but those written in place, in memory the caller lent: [`Argument::column_mut`]),
    /// with `result_ty` / the parameter types giving their shapes. A sparse result written as
    /// storage ([`crate::kernel::CompressedOut`]) is returned as storage, in its type's formats.
    pub fn into_values<T: Argument>(
        mut self,
        program: &impl RunLayout,
        args: &[T],
        names: &[String],
        result_ty: Option<&ValueType>,
    ) -> Vec<(String, Value)> {
        let mut by_param: Vec<(Option<usize>, Vec<Column>, Option<Column>)> = Vec::new();
        // A result written as storage: positions, coordinates, values.
        let mut stored: [Option<Column>; 3] = [None, None, None];
        for (b, c) in program.buffers().iter().zip(std::mem::take(&mut self.cols)) {
            let c = match c {
                Slot::Owned(c) if b.written && !b.temp => c,
                other => {
                    other.give_back();
                    continue;
                }
            };
            if let (Role::Storage(part), None) = (b.role, b.param) {
                let at = match part {
                    StoragePart::Positions(_) => 0,
                    StoragePart::Coordinates(_) => 1,
                    _ => 2,
                };
                stored[at] = Some(c);
                continue;
            }
            let at = match by_param.iter().position(|(p, _, _)| *p == b.param) {
                Some(at) => at,
                None => {
                    by_param.push((b.param, Vec::new(), None));
                    by_param.len() - 1
                }
            };
            match b.role {
                Role::Presence => by_param[at].2 = Some(c),
                _ => by_param[at].1.push(c),
            }
        }
        let mut out: Vec<(String, Value)> = by_param
            .into_iter()
            .map(|(p, leaf_cols, presence)| {
                let (name, ty) = match p {
                    Some(i) => (names[i].clone(), args[i].value_type().clone()),
                    None => ("result".to_string(), result_ty.expect("a function's result type").clone()),
                };
                let data = data_of(&ty.element, ty.len(), &mut leaf_cols.into_iter());
                let present = presence.map(|c| (0..c.len()).map(|i| c.get(i).as_i128() != 0).collect());
                let mut t = Tensor { ty, data, present };
                t.normalize_presence();
                strata_runtime::storage::canonical_fill(&mut t);
                (name, Value::Tensor(t))
            })
            .collect();
        if let [Some(pos), Some(crd), Some(values)] = stored {
            let ty = result_ty.expect("a function's result type").clone();
            out.push(("result".into(), Value::Stored(stored_result(ty, pos, crd, values))));
        }
        out
    }

    /// [`Self::into_values`] as logical tensors (a stored result's dense view).
    pub fn into_results<T: Argument>(
        self,
        program: &impl RunLayout,
        args: &[T],
        names: &[String],
        result_ty: Option<&ValueType>,
    ) -> Vec<(String, Tensor)> {
        let values = self.into_values(program, args, names, result_ty);
        values.into_iter().map(|(n, v)| (n, v.into_tensor().expect("a result small enough for a dense view"))).collect()
    }
}

/// A sparse result written as CSR over its level order (every level dense but the innermost),
/// stored in its type's formats. The run allocates coordinates and values for an upper bound
/// of the entries; the positions say how many there are.
fn stored_result(ty: ValueType, pos: Column, crd: Column, values: Column) -> Stored {
    let shape = ty.shape();
    // In place for int64 (the same layout as usize, so collecting reuses the allocation).
    let usizes = |c: Column| match c {
        Column::I64(v) => v.into_iter().map(|x| x as usize).collect::<Vec<usize>>(),
        Column::I32(v) => v.into_iter().map(|x| x as usize).collect::<Vec<usize>>(),
        _ => unreachable!("positions and coordinates are int64 or int32"),
    };
    let positions = usizes(pos);
    let nnz = positions.last().copied().unwrap_or(0);
    let mut crd = crd;
    crd.truncate(nnz);
    let coordinates = usizes(crd);
    let mut values = values;
    values.truncate(nnz);
    let last = shape.len() - 1;
    let mut levels: Vec<LevelBuffers> = shape[..last].iter().map(|&size| LevelBuffers::Dense { size }).collect();
    levels.push(LevelBuffers::Compressed { positions, coordinates });
    let formats: Vec<strata_ir::LevelFormat> = ty.levels.iter().map(|l| l.format).collect();
    let storage = strata_runtime::storage::restore(Cow::Owned(Storage { levels, values }), &shape, &formats);
    Stored { ty, storage: storage.into_owned() }
}

impl Drop for Buffers<'_> {
    fn drop(&mut self) {
        self.cols.drain(..).for_each(Slot::give_back);
    }
}

/// The storage of sparse or ragged argument `t` (parameter `name`) in `formats`. A ragged row
/// is stored as a dense run up to its last present element, so with a ragged level every
/// element inside the runs must be present (a gap is an error, not a silent zero).
fn assemble(t: &Tensor, formats: &[strata_ir::LevelFormat], name: &str) -> Result<Storage, ExecError> {
    let st = strata_runtime::storage::assemble_as(t, formats);
    let present = t.present.as_ref().map_or(t.len(), |p| p.iter().filter(|&&x| x).count());
    if strata_runtime::storage::has_ragged(&t.ty.levels) && st.values.len() != present {
        return Err(ExecError::RaggedGap(name.to_string()));
    }
    Ok(st)
}

/// A buffer's initial column: the argument's data for a parameter whose initial content is
/// observed; for a buffer overwritten before it is read, a pooled buffer of its size when one
/// is free (its stale content is never seen); else zeros.
fn fresh_column<T: Argument>(b: &crate::kernel::Buffer, args: &[T]) -> Column {
    let len = b.len();
    // A result written as storage: one position per row plus one; the rest the run allocates.
    match (b.role, b.param) {
        (Role::Storage(StoragePart::Positions(_)), None) => return zeroed_column(b.scalar, len + 1),
        (Role::Storage(_), None) => return Column::zeros(b.scalar, 0),
        // Lives inside the kernel staging it.
        (Role::Window, _) => return Column::zeros(b.scalar, 0),
        _ => {}
    }
    let mut c = match b.param {
        Some(p) if !b.overwritten => {
            // A written sparse or ragged parameter is held in the logical form (its size was
            // checked by `Buffers::new`).
            let view;
            let t = match args[p].tensor() {
                Some(t) => t,
                None => {
                    view = args[p].stored().expect("a tensor or stored").to_tensor().expect("checked");
                    &view
                }
            };
            if b.role == Role::Presence {
                Column::U8((0..t.len()).map(|i| u8::from(t.is_present(i))).collect())
            } else {
                column(&t.data, &b.field)
            }
        }
        // Written whole before it is read: stale content is never seen.
        _ if b.overwritten => return reusable_column(b.scalar, len),
        _ => Column::zeros(b.scalar, len),
    };
    if b.written || b.temp {
        advise_huge_pages(&mut c);
    }
    c
}

/// Huge-page size on x86-64 and the smallest buffer worth advising.
const HUGE_PAGE: usize = 2 << 20;

/// Asks the kernel to back a large output with transparent huge pages before its first touch.
/// A fresh zeroed allocation of many MiB is mapped lazily, and with 4 KiB pages every first
/// write faults (about 0.5 ms per MiB here, more than the kernel itself for a stencil); with
/// 2 MiB pages the faults are 512 times fewer. Only the 2 MiB-aligned interior is advised;
/// failure is harmless (the pages stay small).
fn advise_huge_pages(c: &mut Column) {
    let bytes = c.len() * c.scalar().size_bytes();
    if bytes < 4 * HUGE_PAGE {
        return;
    }
    let at = c.as_mut_ptr() as usize;
    let (start, end) = (at.next_multiple_of(HUGE_PAGE), (at + bytes) / HUGE_PAGE * HUGE_PAGE);
    if end > start {
        // SAFETY: the range lies inside the column's allocation; MADV_HUGEPAGE changes only how
        // the pages are backed, never their contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// A column of `len` elements of type `scalar` with arbitrary content: a kept one of that
/// length ([`pool`]) when there is one (no page faults), else fresh zeros on huge pages.
pub(crate) fn reusable_column(scalar: strata_ir::Scalar, len: usize) -> Column {
    pool::take(scalar, len).unwrap_or_else(|| {
        let mut c = Column::zeros(scalar, len);
        advise_huge_pages(&mut c);
        c
    })
}

/// A column of `len` zeros, in a kept buffer where there is one: zeroing memory already mapped
/// costs a pass over it, a fresh zeroed mapping a page fault per page written (a sparse result's
/// 8 MiB of row positions for a million rows: ~5 ms of faults against ~1 ms of zeroing).
fn zeroed_column(scalar: strata_ir::Scalar, len: usize) -> Column {
    match pool::take(scalar, len) {
        Some(mut c) => {
            // SAFETY: the column holds `len` elements of `scalar.size_bytes()` bytes each, and
            // all-zero bytes are the zero of every scalar type (integers, floats, complex, bool).
            unsafe { std::ptr::write_bytes(c.as_mut_ptr().cast::<u8>(), 0, len * scalar.size_bytes()) };
            c
        }
        None => Column::zeros(scalar, len),
    }
}

/// Keeps the values of a tensor its owner no longer needs for the outputs of later runs, when
/// they are a large buffer of scalars (else they are freed). A front end hands back an
/// evaluated array's values when the array is dropped: a time loop's next state is then
/// written into the previous state's memory — no page faults, and no 16 MiB free chunk that
/// small allocations split, so that the next state's `malloc` grows the heap instead.
pub fn recycle(t: strata_runtime::Tensor) {
    if let (strata_runtime::Data::Scalars(c), None) = (t.data, t.present) {
        pool::give_back(c);
    }
}

/// Keeps a column of values its owner no longer needs for the outputs of later runs, as
/// [`recycle`] does a tensor's: a front end that handed a result's buffer to another owner (a
/// numpy array) gives it back when that owner lets go of it.
pub fn recycle_column(c: Column) {
    pool::give_back(c);
}

/// Large buffers freed by finished runs (or [`recycle`]d), kept for the next run's outputs: a
/// fresh mapping of many MiB pays a page fault per page on first touch, a reused one none
/// (numpy's allocator gets the same effect from malloc's free lists below 32 MiB). What is
/// kept is bounded ([`pool::KEPT`] buffers, [`pool::KEPT_BYTES`] in all), so memory a program
/// dropped is not held long after a loop.
mod pool {
    use std::sync::Mutex;

    use strata_runtime::Column;

    /// At most this many buffers are kept (the oldest is freed first).
    pub const KEPT: usize = 8;

    /// At most this many bytes are kept in all (the oldest buffers are freed first; a larger
    /// buffer alone is not kept).
    pub const KEPT_BYTES: usize = 1 << 30;

    /// Smaller buffers are freed (malloc's free lists serve them well).
    const MIN_BYTES: usize = 1 << 20;

    static FREE: Mutex<Vec<Column>> = Mutex::new(Vec::new());

    fn bytes(c: &Column) -> usize {
        c.len() * c.scalar().size_bytes()
    }

    /// Keeps `c` for reuse if it is large (else frees it).
    pub fn give_back(c: Column) {
        if bytes(&c) < MIN_BYTES || bytes(&c) > KEPT_BYTES {
            return;
        }
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        free.push(c);
        while free.len() > KEPT || free.iter().map(bytes).sum::<usize>() > KEPT_BYTES {
            free.remove(0);
        }
    }

    /// A kept buffer of `len` elements of type `scalar`, with arbitrary content.
    pub fn take(scalar: strata_ir::Scalar, len: usize) -> Option<Column> {
        let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
        let at = free.iter().rposition(|c| c.scalar() == scalar && c.len() == len)?;
        Some(free.remove(at))
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn the_pool_keeps_a_bounded_number_of_buffers() {
            // A length no other test uses (tests share the pool).
            let len = (1 << 20) + 12_345;
            for _ in 0..2 * KEPT {
                give_back(Column::U8(vec![0; len]));
            }
            let kept = std::iter::from_fn(|| take(strata_ir::Scalar::U8, len)).count();
            assert!((1..=KEPT).contains(&kept), "{kept}");
            // Larger than the whole budget: freed at once. Smaller than worth keeping: too.
            give_back(Column::U8(vec![0; KEPT_BYTES + 1]));
            assert!(take(strata_ir::Scalar::U8, KEPT_BYTES + 1).is_none());
            give_back(Column::U8(vec![0; 1000]));
            assert!(take(strata_ir::Scalar::U8, 1000).is_none());
        }
    }
}
