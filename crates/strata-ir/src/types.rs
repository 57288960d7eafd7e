//! Types: scalars, tuples, functions and tensors as stacks of levels.
//!
//! A tensor type is an ordered stack of [`Level`]s — each a named dimension with a half-open
//! integer [`Interval`] and a storage [`LevelFormat`] — over an element type, which may itself be
//! a tuple or a tensor (nested tensors), plus a [`Placement`] (device and team).
//!
//! The level order is the storage order: `Row, Col compressed` is CSR and `Col, Row compressed`
//! is CSC. Because dimensions are matched by name, a permuted storage order needs no
//! dimension-to-level map.

use std::fmt;

use strata_entity::{Handle, UniqueArena};

/// The type arena of a module: every type is interned, so equal types have equal handles.
pub type TypeArena = UniqueArena<Type>;

/// A scalar element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scalar {
    /// `bool`
    Bool,
    /// `i8`
    I8,
    /// `i16`
    I16,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `u8`
    U8,
    /// `u16`
    U16,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `c64`: a complex number of two `f32` (real part first, as C's `float _Complex`).
    C64,
    /// `c128`: a complex number of two `f64` (real part first, as C's `double _Complex`).
    C128,
    /// `index`: a signed 64-bit position or extent.
    Index,
}

impl Scalar {
    /// Every scalar type, in the order the text format lists them.
    pub const ALL: [Scalar; 14] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::I16,
        Scalar::I32,
        Scalar::I64,
        Scalar::U8,
        Scalar::U16,
        Scalar::U32,
        Scalar::U64,
        Scalar::F32,
        Scalar::F64,
        Scalar::C64,
        Scalar::C128,
        Scalar::Index,
    ];

    /// The keyword of this type in the text format.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::C64 => "c64",
            Scalar::C128 => "c128",
            Scalar::Index => "index",
        }
    }

    /// Parses a scalar keyword.
    pub fn from_name(name: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|s| s.name() == name)
    }

    /// numpy's dtype name for this type (`index` is stored as `int64`).
    pub fn numpy_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "int8",
            Scalar::I16 => "int16",
            Scalar::I32 => "int32",
            Scalar::I64 | Scalar::Index => "int64",
            Scalar::U8 => "uint8",
            Scalar::U16 => "uint16",
            Scalar::U32 => "uint32",
            Scalar::U64 => "uint64",
            Scalar::F32 => "float32",
            Scalar::F64 => "float64",
            Scalar::C64 => "complex64",
            Scalar::C128 => "complex128",
        }
    }

    /// Bytes per element in memory (`bool` is one byte, `index` eight).
    pub fn size_bytes(self) -> usize {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 | Scalar::C64 | Scalar::Index => 8,
            Scalar::C128 => 16,
        }
    }

    /// `f32` or `f64` (the real floating types).
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    /// `c64` or `c128`.
    pub fn is_complex(self) -> bool {
        matches!(self, Scalar::C64 | Scalar::C128)
    }

    /// A real or complex floating type: the types the transcendental builtins take.
    pub fn is_inexact(self) -> bool {
        self.is_float() || self.is_complex()
    }

    /// The type of a complex type's parts (`c64` → `f32`, `c128` → `f64`); other types are
    /// their own real type.
    pub fn real_part(self) -> Scalar {
        match self {
            Scalar::C64 => Scalar::F32,
            Scalar::C128 => Scalar::F64,
            s => s,
        }
    }

    /// The complex type whose parts are this float type (`f32` → `c64`, `f64` → `c128`).
    pub fn complex_of(self) -> Option<Scalar> {
        match self {
            Scalar::F32 | Scalar::C64 => Some(Scalar::C64),
            Scalar::F64 | Scalar::C128 => Some(Scalar::C128),
            _ => None,
        }
    }

    /// Any integer type, `index` included (not `bool`, floats or complex).
    pub fn is_integer(self) -> bool {
        !self.is_inexact() && self != Scalar::Bool
    }

    /// The signed integer types (`index` included).
    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::Index)
    }

    /// Integers and floats: the types arithmetic is defined on.
    pub fn is_numeric(self) -> bool {
        self != Scalar::Bool
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A half-open integer interval `[start:stop)`; `start` may be negative.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    /// First index.
    pub start: i64,
    /// One past the last index.
    pub stop: i64,
}

impl Interval {
    /// `[start:stop)`.
    pub fn new(start: i64, stop: i64) -> Interval {
        Interval { start, stop }
    }

    /// `[0:len)`.
    pub fn from_len(len: u64) -> Interval {
        Interval { start: 0, stop: len as i64 }
    }

    /// Number of indices (0 when empty).
    pub fn len(self) -> u64 {
        (self.stop as i128 - self.start as i128).max(0) as u64
    }

    /// Whether the interval holds no index.
    pub fn is_empty(self) -> bool {
        self.stop <= self.start
    }

    /// The intersection; may be empty.
    pub fn intersect(self, other: Interval) -> Interval {
        Interval { start: self.start.max(other.start), stop: self.stop.min(other.stop) }
    }

    /// Whether `other` lies within `self` (an empty `other` always does).
    pub fn contains(self, other: Interval) -> bool {
        other.is_empty() || (self.start <= other.start && other.stop <= self.stop)
    }

    /// The interval moved by `delta`, or `None` if a bound leaves the 64-bit range.
    pub fn shifted(self, delta: i64) -> Option<Interval> {
        Some(Interval { start: self.start.checked_add(delta)?, stop: self.stop.checked_add(delta)? })
    }

    /// `[start:stop)` from wide bounds, or `None` if a bound leaves the 64-bit range.
    pub fn from_wide(start: i128, stop: i128) -> Option<Interval> {
        Some(Interval { start: i64::try_from(start).ok()?, stop: i64::try_from(stop).ok()? })
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}:{}]", self.start, self.stop)
    }
}

/// The name of a dimension.
///
/// Three families of names have a meaning of their own:
/// - `_0`, `_1`, …: *positional* dimensions, produced by the shorthand `tensor<4x8xf32>`;
/// - `NB_0`, `NB_1`, …: *neighbor counters* created by `shift_init` (seed 000);
/// - `NB_<Src>` with `Src` not a number: the neighbor dimension of a *neighbor table* whose
///   entries index dimension `Src`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimName(pub String);

impl DimName {
    /// Makes a name.
    pub fn new(name: impl Into<String>) -> DimName {
        DimName(name.into())
    }

    /// The positional name `_i`.
    pub fn positional(i: usize) -> DimName {
        DimName(format!("_{i}"))
    }

    /// The neighbor counter `NB_k`.
    pub fn neighbor_counter(k: u32) -> DimName {
        DimName(format!("NB_{k}"))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `Some(i)` for a positional name `_i`.
    pub fn position(&self) -> Option<usize> {
        let digits = self.0.strip_prefix('_')?;
        digit_string(digits)?.parse().ok()
    }

    /// `Some(k)` for a neighbor counter `NB_k`.
    pub fn neighbor_counter_index(&self) -> Option<u32> {
        let digits = self.0.strip_prefix("NB_")?;
        digit_string(digits)?.parse().ok()
    }

    /// `Some(src)` for a neighbor-table tag `NB_src`.
    pub fn table_source(&self) -> Option<DimName> {
        let src = self.0.strip_prefix("NB_")?;
        (!src.is_empty() && digit_string(src).is_none()).then(|| DimName(src.to_string()))
    }
}

fn digit_string(s: &str) -> Option<&str> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))).then_some(s)
}

impl fmt::Display for DimName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A size known at compile time or only at run time (`?` in the text format).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extent {
    /// Known now.
    Static(u64),
    /// Known at run time only.
    Dynamic,
}

impl fmt::Display for Extent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Extent::Static(n) => write!(f, "{n}"),
            Extent::Dynamic => f.write_str("?"),
        }
    }
}

/// How one level of a tensor is stored (the TACO / MLIR sparse level model, plus ragged and
/// distributed levels).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LevelFormat {
    /// Every index of the interval is stored (the default).
    Dense,
    /// Only the indices present are stored: a positions array per parent position plus a
    /// coordinates array. `nnz` is the number of stored entries of this level.
    Compressed {
        /// Each coordinate appears at most once per parent position.
        unique: bool,
        /// Coordinates are sorted within a parent position.
        ordered: bool,
        /// The number of stored entries.
        nnz: Extent,
    },
    /// One coordinate per parent entry, no positions array (the trailing levels of COO).
    Singleton {
        /// Each coordinate appears at most once per parent position.
        unique: bool,
        /// Coordinates are sorted.
        ordered: bool,
    },
    /// A dense run of run-time length per parent position (jagged rows); the interval bounds
    /// every run. `total` is the number of stored entries. At the root it is a vector of
    /// run-time length.
    Ragged {
        /// The number of stored entries over all parent positions.
        total: Extent,
    },
    /// Block-partitioned over the tensor's team: rank `r` of `n` holds a contiguous block of
    /// the interval (remainders go to the last ranks); stored dense locally.
    Block,
}

impl LevelFormat {
    /// `compressed` with the default properties: unique, ordered, run-time nnz.
    pub const COMPRESSED: LevelFormat = LevelFormat::Compressed { unique: true, ordered: true, nnz: Extent::Dynamic };

    /// The format's keyword.
    pub fn keyword(self) -> &'static str {
        match self {
            LevelFormat::Dense => "dense",
            LevelFormat::Compressed { .. } => "compressed",
            LevelFormat::Singleton { .. } => "singleton",
            LevelFormat::Ragged { .. } => "ragged",
            LevelFormat::Block => "block",
        }
    }

    /// Whether the level stores only some of its indices (compressed or singleton).
    pub fn is_sparse(self) -> bool {
        matches!(self, LevelFormat::Compressed { .. } | LevelFormat::Singleton { .. })
    }

    /// Dense and block levels store every index of their interval locally addressable by
    /// affine arithmetic.
    pub fn is_dense_like(self) -> bool {
        matches!(self, LevelFormat::Dense | LevelFormat::Block)
    }
}

/// One dimension of a tensor: name, interval and storage format.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Level {
    /// The dimension's name.
    pub name: DimName,
    /// Where the tensor provides values along this dimension.
    pub interval: Interval,
    /// How the level is stored.
    pub format: LevelFormat,
}

impl Level {
    /// A dense level.
    pub fn dense(name: DimName, interval: Interval) -> Level {
        Level { name, interval, format: LevelFormat::Dense }
    }
}

/// Where a tensor's data lives.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Device {
    /// The host (default).
    Cpu,
    /// Another device, named as its runtime names it (e.g. `"gpu:0"`).
    Named(String),
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Named(n) => f.write_str(n),
        }
    }
}

/// A team of processes a tensor is distributed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Team {
    /// Number of ranks; [`Team::WORLD`] (0) is every rank of the job, known when it runs
    /// (`team = world`), so one program runs unchanged at any rank count.
    pub ranks: u32,
}

impl Team {
    /// `team = world`: the team of all ranks the job was started with.
    pub const WORLD: u32 = 0;

    /// Whether the team's size is the job's (`team = world`).
    pub fn is_world(self) -> bool {
        self.ranks == Team::WORLD
    }
}

impl std::fmt::Display for Team {
    /// `world` or the number of ranks, as written in a type.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_world() {
            f.write_str("world")
        } else {
            write!(f, "{}", self.ranks)
        }
    }
}

/// Device and team of a tensor (seed 003): compute follows data, so operands of one operation
/// must share both.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Placement {
    /// The device holding the data.
    pub device: Device,
    /// The team the data is distributed over, if any.
    pub team: Option<Team>,
}

impl Placement {
    /// Host memory, no team.
    pub const HOST: Placement = Placement { device: Device::Cpu, team: None };

    /// Whether this is the default placement.
    pub fn is_host(&self) -> bool {
        *self == Placement::HOST
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device `{}`", self.device)?;
        match self.team {
            Some(t) if t.is_world() => write!(f, ", the world team"),
            Some(t) => write!(f, ", team of {} ranks", t.ranks),
            None => f.write_str(", no team"),
        }
    }
}

/// A tensor type: element type, levels and placement.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    /// The element type: a scalar, a tuple or another tensor.
    pub element: Handle<Type>,
    /// The levels, outermost first.
    pub levels: Vec<Level>,
    /// Device and team.
    pub placement: Placement,
}

impl TensorType {
    /// The level named `name`.
    pub fn level(&self, name: &DimName) -> Option<&Level> {
        self.levels.iter().find(|l| &l.name == name)
    }

    /// The position of the level named `name`.
    pub fn level_index(&self, name: &DimName) -> Option<usize> {
        self.levels.iter().position(|l| &l.name == name)
    }

    /// The highest neighbor counter `NB_k` among the levels.
    pub fn highest_neighbor_counter(&self) -> Option<u32> {
        self.levels.iter().filter_map(|l| l.name.neighbor_counter_index()).max()
    }

    /// Whether every level is dense.
    pub fn is_all_dense(&self) -> bool {
        self.levels.iter().all(|l| l.format == LevelFormat::Dense)
    }
}

/// A Strata type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// A scalar.
    Scalar(Scalar),
    /// A (possibly nested) tuple, used as a tensor element type.
    Tuple(Vec<Handle<Type>>),
    /// A tensor.
    Tensor(TensorType),
    /// A function type `(A, …) -> R`.
    Function {
        /// Parameter types.
        params: Vec<Handle<Type>>,
        /// Result type.
        result: Handle<Type>,
    },
}

/// The scalar of a value's type: the type itself if scalar, else the tensor's element if that
/// is a scalar.
pub fn element_scalar(types: &TypeArena, ty: Handle<Type>) -> Option<Scalar> {
    match &types[ty] {
        Type::Scalar(s) => Some(*s),
        Type::Tensor(t) => match types[t.element] {
            Type::Scalar(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

/// The element type of a value: a tensor's element, or the type itself otherwise (a scalar or
/// tuple value is a 0-d tensor of itself).
pub fn element_of(types: &TypeArena, ty: Handle<Type>) -> Handle<Type> {
    match &types[ty] {
        Type::Tensor(t) => t.element,
        _ => ty,
    }
}
