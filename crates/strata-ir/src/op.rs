//! The closed set of operations.
//!
//! Every operation is a variant of [`Op`]; passes match it exhaustively and destructure every
//! field, so adding a field or a variant breaks them at compile time instead of silently.
//! Operands are [`Handle<Expr>`](crate::Expr) referring to *earlier* expressions of the same
//! function.
//!
//! Conventions pinned here (see docs/language.md):
//! - `cartesian_shift(x, dim = D, offset = o)[p] = x[p + o]`, so the result's interval is the
//!   operand's moved by `-o` (GT4Py's convention; seed 000's formula text is mirrored);
//! - `transpose(perm)` follows numpy / StableHLO: `out.shape[i] = in.shape[perm[i]]` (MimIR's
//!   permutation is the inverse);
//! - `map_reduce` accumulates into its `init`: a literal (the ring zero) or a tensor operand
//!   (destination-passing, as `outs(%init)` in seeds 001 and 004).

use strata_entity::Handle;

use crate::affine::{AffineMap, Einsum};
use crate::literal::Literal;
use crate::module::{Expr, Function, Ring};
use crate::types::{DimName, Interval, Scalar, Type};

/// A handle to an expression (an SSA value) of the enclosing function.
pub type Value = Handle<Expr>;

macro_rules! keyword_enum {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $kw:literal,)* }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($(#[$vm])* $variant,)* }
        impl $name {
            /// Every variant.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
            /// The keyword in the text format.
            pub fn keyword(self) -> &'static str { match self { $($name::$variant => $kw,)* } }
            /// Parses the keyword.
            pub fn from_keyword(s: &str) -> Option<$name> { match s { $($kw => Some($name::$variant),)* _ => None } }
        }
    };
}

keyword_enum! {
    /// Elementwise unary builtins (seed 000), broadcast by name.
    UnaryOp {
        /// Logical not (`bool`).
        Not = "not",
        /// Negation (numeric).
        Neg = "neg",
        /// Absolute value (numeric).
        Abs = "abs",
        /// Square root (float).
        Sqrt = "sqrt",
        /// Exponential (float).
        Exp = "exp",
        /// Natural logarithm (float).
        Log = "log",
        /// Sine (float).
        Sin = "sin",
        /// Cosine (float).
        Cos = "cos",
        /// Tangent (float).
        Tan = "tan",
        /// Hyperbolic tangent (float).
        Tanh = "tanh",
        /// Round down (float).
        Floor = "floor",
        /// Round up (float).
        Ceil = "ceil",
        /// Round to the nearest integer, ties to even (float).
        Round = "round",
        /// Round toward zero (float).
        Trunc = "trunc",
        /// Inverse cosine (float).
        Acos = "acos",
        /// Inverse hyperbolic cosine (float).
        Acosh = "acosh",
        /// Inverse sine (float).
        Asin = "asin",
        /// Inverse hyperbolic sine (float).
        Asinh = "asinh",
        /// Inverse tangent (float).
        Atan = "atan",
        /// Inverse hyperbolic tangent (float).
        Atanh = "atanh",
        /// Hyperbolic cosine (float).
        Cosh = "cosh",
        /// Hyperbolic sine (float).
        Sinh = "sinh",
        /// `exp(x) - 1`, accurate near 0 (float).
        Expm1 = "expm1",
        /// `log(1 + x)`, accurate near 0 (float).
        Log1p = "log1p",
        /// Base-2 logarithm (float).
        Log2 = "log2",
        /// Base-10 logarithm (float).
        Log10 = "log10",
        /// Cube root, defined for negative values too (float).
        Cbrt = "cbrt",
        /// The gamma function Γ(x) (float; C's `tgamma`).
        Gamma = "gamma",
        /// −1, 0 or 1 (numeric; NaN stays NaN, ±0 becomes +0).
        Sign = "sign",
        /// Whether the value is NaN (numeric → `bool`; false for integers).
        IsNan = "isnan",
        /// Whether the value is ±∞ (numeric → `bool`; false for integers).
        IsInf = "isinf",
        /// Whether the value is neither NaN nor ±∞ (numeric → `bool`; true for integers).
        IsFinite = "isfinite",
        /// Whether the sign bit is set (float → `bool`; true for −0.0 and negative NaNs).
        SignBit = "signbit",
        /// Bitwise complement (integers; logical not on `bool`).
        BitNot = "bit_not",
        /// The real part (numeric → the real type of its parts; a real value is its own).
        Real = "real",
        /// The imaginary part (numeric → the real type of its parts; zero for a real value).
        Imag = "imag",
        /// The complex conjugate (numeric; a real value is its own).
        Conj = "conj",
    }
}

/// Which operand types a unary builtin accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryDomain {
    /// `bool` only.
    Bool,
    /// Any numeric type (complex included).
    Numeric,
    /// Real and complex floating types.
    Inexact,
    /// Real floating types only.
    Float,
    /// Integer types and `bool`.
    Bits,
}

impl UnaryOp {
    /// The operand types the op accepts.
    pub fn domain(self) -> UnaryDomain {
        match self {
            UnaryOp::Not => UnaryDomain::Bool,
            UnaryOp::Neg
            | UnaryOp::Abs
            | UnaryOp::Sign
            | UnaryOp::IsNan
            | UnaryOp::IsInf
            | UnaryOp::IsFinite
            | UnaryOp::Real
            | UnaryOp::Imag
            | UnaryOp::Conj => UnaryDomain::Numeric,
            UnaryOp::BitNot => UnaryDomain::Bits,
            UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Trunc | UnaryOp::Cbrt | UnaryOp::Gamma | UnaryOp::SignBit => {
                UnaryDomain::Float
            }
            _ => UnaryDomain::Inexact,
        }
    }

    /// Whether the op is only defined on (real or complex) floats.
    pub fn float_only(self) -> bool {
        matches!(self.domain(), UnaryDomain::Float | UnaryDomain::Inexact)
    }

    /// Whether the result on a complex operand is the real type of its parts (`abs`, `real`,
    /// `imag`); on other operands these keep the operand type.
    pub fn drops_imaginary(self) -> bool {
        matches!(self, UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag)
    }

    /// The result's element type on an operand of type `s` (after the domain check).
    pub fn result(self, s: Scalar) -> Scalar {
        if self.is_test() {
            Scalar::Bool
        } else if self.drops_imaginary() {
            s.real_part()
        } else {
            s
        }
    }

    /// Whether the result is `bool` (a test) rather than the operand type.
    pub fn is_test(self) -> bool {
        matches!(self, UnaryOp::IsNan | UnaryOp::IsInf | UnaryOp::IsFinite | UnaryOp::SignBit)
    }
}

keyword_enum! {
    /// Elementwise binary builtins (seed 000), broadcast by name.
    BinaryOp {
        /// `a + b`
        Plus = "plus",
        /// `a - b`
        Minus = "minus",
        /// `a * b`
        Multiplies = "multiplies",
        /// `a / b`
        Divides = "divides",
        /// Remainder with the sign of the dividend.
        Modulo = "modulo",
        /// `a ** b`
        Power = "power",
        /// The larger.
        Maximum = "maximum",
        /// The smaller.
        Minimum = "minimum",
        /// Logical and (`bool`).
        And = "and",
        /// Logical or (`bool`).
        Or = "or",
        /// Logical exclusive or (`bool`).
        Xor = "xor",
        /// `a == b` → `bool`
        Eq = "eq",
        /// `a != b` → `bool`
        Ne = "ne",
        /// `a < b` → `bool`
        Less = "less",
        /// `a <= b` → `bool`
        LessEqual = "less_equal",
        /// `a > b` → `bool`
        Greater = "greater",
        /// `a >= b` → `bool`
        GreaterEqual = "greater_equal",
        /// Division rounding toward −∞ (numeric; an integer divisor 0 gives 0, as numpy).
        FloorDivide = "floor_divide",
        /// Remainder with the sign of the divisor, `a - floor_divide(a, b) * b` (numeric; an
        /// integer divisor 0 gives 0, as numpy).
        Remainder = "remainder",
        /// Bitwise and (integers and `bool`).
        BitAnd = "bit_and",
        /// Bitwise or (integers and `bool`).
        BitOr = "bit_or",
        /// Bitwise exclusive or (integers and `bool`).
        BitXor = "bit_xor",
        /// `a << b` (integers; 0 once `b` is negative or at least the bit width).
        ShiftLeft = "shift_left",
        /// `a >> b`, arithmetic for signed types (integers; the sign fill once `b` is negative
        /// or at least the bit width).
        ShiftRight = "shift_right",
        /// Angle of the point `(b, a)` (float).
        Atan2 = "atan2",
        /// `sqrt(a² + b²)` without undue overflow (float).
        Hypot = "hypot",
        /// `|a|` with the sign of `b` (float).
        CopySign = "copysign",
        /// `log(exp(a) + exp(b))` (float).
        LogAddExp = "logaddexp",
        /// The next representable value after `a` toward `b` (float).
        NextAfter = "nextafter",
    }
}

/// The family a binary op belongs to, which decides its typing rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryClass {
    /// Numeric operands, result of the operand type.
    Arithmetic,
    /// `bool` operands and result.
    Logical,
    /// Integer or `bool` operands, result of the operand type.
    Bitwise,
    /// Any scalar operands, `bool` result.
    Comparison,
}

impl BinaryOp {
    /// The typing family of the op.
    pub fn class(self) -> BinaryClass {
        match self {
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => BinaryClass::Logical,
            BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor | BinaryOp::ShiftLeft | BinaryOp::ShiftRight => {
                BinaryClass::Bitwise
            }
            BinaryOp::Eq
            | BinaryOp::Ne
            | BinaryOp::Less
            | BinaryOp::LessEqual
            | BinaryOp::Greater
            | BinaryOp::GreaterEqual => BinaryClass::Comparison,
            _ => BinaryClass::Arithmetic,
        }
    }

    /// Whether the op is only defined on floats.
    pub fn float_only(self) -> bool {
        matches!(
            self,
            BinaryOp::Atan2 | BinaryOp::Hypot | BinaryOp::CopySign | BinaryOp::LogAddExp | BinaryOp::NextAfter
        )
    }

    /// Whether the op is defined on complex operands: `+ - * / **`, `eq` and `ne`.
    pub fn takes_complex(self) -> bool {
        matches!(
            self,
            BinaryOp::Plus
                | BinaryOp::Minus
                | BinaryOp::Multiplies
                | BinaryOp::Divides
                | BinaryOp::Power
                | BinaryOp::Eq
                | BinaryOp::Ne
        )
    }

    /// Whether the op excludes `bool` operands (the shifts).
    pub fn integer_only(self) -> bool {
        matches!(self, BinaryOp::ShiftLeft | BinaryOp::ShiftRight)
    }
}

keyword_enum! {
    /// The builtin rings (seed 002's `%tensor.Ring`), generic over their element type.
    BuiltinRing {
        /// `(+, ×)` with zero 0, for numeric types.
        PlusTimes = "plus_times",
        /// `(max, +)` with zero −∞ (or the type's minimum), for numeric types.
        MaxPlus = "max_plus",
        /// `(min, +)` with zero +∞ (or the type's maximum), for numeric types.
        MinPlus = "min_plus",
        /// `(or, and)` with zero `false`, for `bool`.
        OrAnd = "or_and",
    }
}

/// A ring: builtin, or defined by the module (`ring @name …`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RingRef {
    /// A builtin ring.
    Builtin(BuiltinRing),
    /// A ring item of the module.
    User(Handle<Ring>),
}

keyword_enum! {
    /// Whether a subset-style op may alias its operand (seed 004's view / copy attribute).
    Mode {
        /// Materialize the result in fresh storage.
        Copy = "copy",
        /// Alias the operand's storage; `gather` then yields a nested tensor of slices.
        View = "view",
    }
}

keyword_enum! {
    /// How a `transpose` permutation reads (seed 002 writes MimIR's convention, `scatter`).
    PermKind {
        /// `out.dims[i] = in.dims[perm[i]]` (StableHLO, numpy): the default.
        Gather = "gather",
        /// `out.dims[perm[i]] = in.dims[i]` (MimIR).
        Scatter = "scatter",
    }
}

impl PermKind {
    /// The permutation in the `gather` convention. `perm` must be a permutation.
    pub fn as_gather(self, perm: &[u32]) -> Vec<u32> {
        match self {
            PermKind::Gather => perm.to_vec(),
            PermKind::Scatter => {
                let mut g = vec![0; perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    g[p as usize] = i as u32;
                }
                g
            }
        }
    }
}

/// Where `pack`'s tiles come from and how its outer dimensions are ordered (MLIR
/// `tensor.pack`'s `inner_dims_pos` and `outer_dims_perm`); `unpack` takes the same to invert.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PackLayout {
    /// The operand dimensions that are tiled, in the order of the tile's dimensions; empty:
    /// every dimension, in order.
    pub inner_dims_pos: Vec<u32>,
    /// Outer dimension `i` is operand dimension `outer_dims_perm[i]` (the `gather` convention);
    /// empty: the operand's order.
    pub outer_dims_perm: Vec<u32>,
}

impl PackLayout {
    /// The tiled operand dimensions, in tile order, for an operand of rank `rank`.
    pub fn tiled(&self, rank: usize) -> Vec<usize> {
        if self.inner_dims_pos.is_empty() {
            (0..rank).collect()
        } else {
            self.inner_dims_pos.iter().map(|&d| d as usize).collect()
        }
    }

    /// The operand dimension of each outer dimension, for an operand of rank `rank`.
    pub fn outer(&self, rank: usize) -> Vec<usize> {
        if self.outer_dims_perm.is_empty() {
            (0..rank).collect()
        } else {
            self.outer_dims_perm.iter().map(|&d| d as usize).collect()
        }
    }
}

keyword_enum! {
    /// The three spellings of seed 002's elementwise function application.
    MapKind {
        /// `map(@f, %a, %b, …)`: any number of operands.
        Map = "map",
        /// `unary(@f, %a)`: exactly one operand.
        Unary = "unary",
        /// `binary(@f, %a, %b)`: exactly two operands.
        Binary = "binary",
    }
}

/// The accumulator of a `map_reduce`: the ring zero (a literal, broadcast to the output) or an
/// initial tensor that the reduction accumulates into (destination-passing style).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Init {
    /// A literal of the output element type.
    Literal(Literal),
    /// A tensor of the output type.
    Value(Value),
}

/// One operation. The result type is inferred from the operands and attributes, except for the
/// few ops marked *declared*, whose result type is the one written in the text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    // ---- seed 000: builtins over named dimensions ----
    /// A constant (*declared* type): a scalar, or a tensor filled with `value`.
    Constant {
        /// The value.
        value: Literal,
    },
    /// An elementwise unary builtin.
    Unary {
        /// Which builtin.
        op: UnaryOp,
        /// The operand.
        arg: Value,
    },
    /// An elementwise binary builtin with name-based broadcasting.
    Binary {
        /// Which builtin.
        op: BinaryOp,
        /// Left operand.
        lhs: Value,
        /// Right operand.
        rhs: Value,
    },
    /// `select(cond, a, b)` — seed 000's `if` and seed 002's `select`, broadcast by name.
    Select {
        /// `bool` condition.
        cond: Value,
        /// Taken where `cond` holds.
        on_true: Value,
        /// Taken elsewhere.
        on_false: Value,
    },
    /// Elementwise conversion to another scalar type.
    Cast {
        /// The operand.
        arg: Value,
        /// Target element type.
        to: Scalar,
    },
    /// Builds tuple elements from tensors, broadcast by name.
    MakeTuple {
        /// The fields.
        fields: Vec<Value>,
    },
    /// Projects field `index` of a tuple-element tensor.
    TupleGet {
        /// The tuple tensor.
        tuple: Value,
        /// Field number.
        index: u32,
    },
    /// Applies a function (the seed's λ application).
    Call {
        /// The callee, defined earlier in the module.
        func: Handle<Function>,
        /// Arguments.
        args: Vec<Value>,
        /// Which of the callee's results this value is (0 for a function with one result).
        /// `%q, %r = call(@divmod, …)` is one statement per result, each a `Call` taking its
        /// own; the printer writes them together again.
        result: u32,
    },
    /// `x[p + offset]` along `dim`: moves the interval by `-offset`.
    CartesianShift {
        /// The operand.
        arg: Value,
        /// The dimension shifted.
        dim: DimName,
        /// The offset.
        offset: i64,
    },
    /// Partial unstructured shift: looks up all neighbors through `table`, adding a neighbor
    /// counter dimension `NB_k`.
    ShiftInit {
        /// The operand, defined on the table's source dimension.
        arg: Value,
        /// Neighbor table `tensor<int, Dst[..], NB_Src[0:n]>`.
        table: Value,
    },
    /// Selects neighbor `neighbor` of the highest neighbor counter dimension.
    ShiftApply {
        /// The operand, with at least one `NB_k` dimension.
        arg: Value,
        /// Which neighbor.
        neighbor: i64,
    },
    /// `shift_apply(neighbor)(shift_init(table)(arg))`.
    UnstructuredShift {
        /// The operand.
        arg: Value,
        /// Neighbor table.
        table: Value,
        /// Which neighbor.
        neighbor: i64,
    },
    /// Whether each value exists (is not a skipped neighbor).
    CanDeref {
        /// The operand.
        arg: Value,
    },
    /// Folds `func` over the highest neighbor counter dimension.
    Reduce {
        /// `(acc, a_1, …) -> acc` over tensors without the reduced dimension.
        func: Handle<Function>,
        /// Operands.
        args: Vec<Value>,
        /// Initial accumulator.
        init: Literal,
    },
    /// A scan along `dim`: `state_k = func(state_{k∓1}, a_1[k], …)`.
    Scan {
        /// `(state, a_1, …) -> state` over tensors without `dim`.
        func: Handle<Function>,
        /// Operands.
        args: Vec<Value>,
        /// The scanned dimension.
        dim: DimName,
        /// Increasing indices if true.
        forward: bool,
        /// State before the first step: a literal, or a tensor of the state's type (the
        /// carry a distributed scan receives from the previous rank).
        init: Init,
    },
    /// Restricts intervals to sub-intervals.
    Subset {
        /// The operand.
        arg: Value,
        /// New intervals for some dimensions.
        domain: Vec<(DimName, Interval)>,
    },
    /// Concatenates along `dim`: named dimensions need contiguous intervals; positional ones are
    /// placed one after another.
    Concat {
        /// The pieces, in order.
        args: Vec<Value>,
        /// The dimension.
        dim: DimName,
        /// `view`: the pieces are to be placed in one buffer in place (seed 004); `copy`: copied.
        mode: Mode,
    },
    /// The indices of `dim` as an `index` tensor over that dimension.
    Pos {
        /// The operand whose interval is read.
        arg: Value,
        /// The dimension.
        dim: DimName,
    },
    /// Removes a dimension of extent 1: `drop_dim(%x, dim = K)` (the inverse of `add_dim`).
    DropDim {
        /// The operand.
        arg: Value,
        /// The dimension, of extent 1.
        dim: DimName,
    },
    /// Adds a dimension along which the operand is constant.
    AddDim {
        /// The operand.
        arg: Value,
        /// The new dimension.
        dim: DimName,
        /// Its interval.
        interval: Interval,
    },

    // ---- seed 002: structured core ----
    /// `map_reduce` in Einstein notation: `out[o] = fold(func, init, inputs at (o, r))`.
    MapReduce {
        /// `(acc, x_1, …) -> acc` on elements.
        func: Handle<Function>,
        /// Inputs.
        args: Vec<Value>,
        /// Accumulator start.
        init: Init,
        /// Subscripts.
        subscripts: Einsum,
    },
    /// `map_reduce` with affine access maps over an explicit iteration domain.
    MapReduceAff {
        /// `(acc, x_1, …) -> acc` on elements.
        func: Handle<Function>,
        /// Inputs.
        args: Vec<Value>,
        /// Accumulator start.
        init: Init,
        /// `Sr`: bounds of the loop nest, output loops first.
        domain: Vec<u64>,
        /// `Ro`: how many leading loops are parallel output loops.
        outputs: u32,
        /// `So`: the result shape.
        shape: Vec<u64>,
        /// Loop vector → write coordinates.
        out_map: AffineMap,
        /// Per input: loop vector → read coordinates.
        maps: Vec<AffineMap>,
        /// The value of reads outside an input (a convolution's zero border); without it they
        /// are a verification error.
        padding: Option<Literal>,
    },
    /// Generalized dot product over a ring with batching and contracting dimensions.
    DotGeneral {
        /// Left operand.
        lhs: Value,
        /// Right operand.
        rhs: Value,
        /// The ring.
        ring: RingRef,
        /// Contracting dimensions of `lhs` (positions).
        lhs_contract: Vec<u32>,
        /// Contracting dimensions of `rhs`, pairwise with `lhs_contract`.
        rhs_contract: Vec<u32>,
        /// Batching dimensions of `lhs`.
        lhs_batch: Vec<u32>,
        /// Batching dimensions of `rhs`, pairwise with `lhs_batch`.
        rhs_batch: Vec<u32>,
    },
    /// Matrix product of two 2-d tensors over a ring.
    Product2d {
        /// `m×k`.
        lhs: Value,
        /// `k×l`.
        rhs: Value,
        /// The ring.
        ring: RingRef,
    },
    /// Permutes dimensions: `out.dims[i] = in.dims[perm[i]]` (`kind = scatter`:
    /// `out.dims[perm[i]] = in.dims[i]`).
    Transpose {
        /// The operand.
        arg: Value,
        /// The permutation, as written.
        perm: Vec<u32>,
        /// How `perm` reads.
        kind: PermKind,
    },
    /// Expands size-1 dimensions to `shape` (same rank).
    Broadcast {
        /// The operand.
        arg: Value,
        /// The result shape.
        shape: Vec<u64>,
    },
    /// Places operand dimension `i` at result position `dims[i]` and broadcasts the rest.
    BroadcastInDim {
        /// The operand.
        arg: Value,
        /// The result shape.
        shape: Vec<u64>,
        /// Result position of each operand dimension.
        dims: Vec<u32>,
    },
    /// Applies `func` elementwise over same-shaped operands.
    Map {
        /// Which spelling.
        kind: MapKind,
        /// `(x_1, …) -> y` on elements.
        func: Handle<Function>,
        /// Operands.
        args: Vec<Value>,
    },
    /// Reads one element.
    Get {
        /// The tensor.
        arg: Value,
        /// One `index` scalar per dimension.
        indices: Vec<Value>,
    },
    /// Returns the tensor with one element replaced.
    Set {
        /// The tensor.
        arg: Value,
        /// One `index` scalar per dimension.
        indices: Vec<Value>,
        /// The new element.
        value: Value,
    },

    // ---- seed 001: nested tensors ----
    /// `tensor<M x N x T>` → `tensor<M/b0 x N/b1 x tensor<b0 x b1 x T>>`: outer dimensions
    /// ordered by `layout.outer_dims_perm`, tile dimensions by `layout.inner_dims_pos`; with
    /// `padding`, extents need not divide and the last tiles are filled with it.
    Pack {
        /// The operand.
        arg: Value,
        /// Tile size per tiled dimension.
        tile: Vec<u64>,
        /// Which dimensions are tiled, and the outer order.
        layout: PackLayout,
        /// The value of tile elements past the operand's extent.
        padding: Option<Literal>,
    },
    /// The inverse of `pack` with the same layout; `shape` (optional) drops the padding.
    Unpack {
        /// A tensor of tensors.
        arg: Value,
        /// The layout `pack` was given.
        layout: PackLayout,
        /// The result extents (empty: whole tiles).
        shape: Vec<u64>,
    },

    // ---- seed 004: beyond rectangular ----
    /// Extracts slices at coordinates listed in `indices` (last dimension: one coordinate per
    /// entry of `coordinates`).
    Gather {
        /// The tensor read.
        source: Value,
        /// `tensor<batch… x n x index>`.
        indices: Value,
        /// Which source dimensions the coordinates index.
        coordinates: Vec<u32>,
        /// `copy` gives a flat result, `view` a tensor of slices.
        mode: Mode,
    },
    /// Inserts slices of `source` into `dest` at the listed coordinates.
    Scatter {
        /// The slices written.
        source: Value,
        /// The tensor written into.
        dest: Value,
        /// `tensor<batch… x n x index>`.
        indices: Value,
        /// Which `dest` dimensions the coordinates index.
        coordinates: Vec<u32>,
        /// Whether `dest` is updated in place.
        mode: Mode,
    },
    /// Merges groups of adjacent dimensions.
    CollapseShape {
        /// The operand.
        arg: Value,
        /// Consecutive groups covering every dimension.
        groups: Vec<Vec<u32>>,
        /// View or copy.
        mode: Mode,
    },
    /// Splits dimensions into groups.
    ExpandShape {
        /// The operand.
        arg: Value,
        /// For each operand dimension, the result dimensions it becomes.
        groups: Vec<Vec<u32>>,
        /// The result shape.
        shape: Vec<u64>,
        /// View or copy.
        mode: Mode,
    },
    /// Changes storage formats (*declared* type: same dims and element, other formats).
    Convert {
        /// The operand.
        arg: Value,
        /// `view` reinterprets the storage (only when every level keeps its kind and place);
        /// `copy` rebuilds it.
        mode: Mode,
    },
    /// The coordinates along `dim` of `arg`'s non-zero entries (those that differ from the
    /// fill value and exist), ascending, for each point of its other levels: a ragged level
    /// (*declared* type: the other levels, then one ragged level bounded by `dim`'s length,
    /// element `index`). Values, not storage: explicit zeros a file stores are not listed.
    Coordinates {
        /// The operand.
        arg: Value,
        /// The dimension whose coordinates are listed.
        dim: DimName,
    },
    /// The non-zero values of `arg` along `dim`, in the order [`Op::Coordinates`] lists them
    /// (*declared* type, as for `coordinates` with `arg`'s element).
    Nonzeros {
        /// The operand.
        arg: Value,
        /// The dimension compacted.
        dim: DimName,
    },
    /// The tensor whose entries along `dim` are `values` at `coordinates` (ragged levels over
    /// the same other levels) and zero elsewhere; duplicate coordinates add up (*declared*
    /// type: the other levels and `dim`, in any order and formats).
    Assemble {
        /// Coordinates along `dim` (integers).
        coordinates: Value,
        /// The values, one per coordinate.
        values: Value,
        /// The dimension the coordinates index.
        dim: DimName,
    },

    // ---- seed 003: placement ----
    /// Moves a tensor to a device.
    ToDevice {
        /// The operand.
        arg: Value,
        /// Target device.
        device: crate::types::Device,
    },
    /// Block-distributes a tensor along `dim` over a team.
    Distribute {
        /// The operand (no team).
        arg: Value,
        /// Team size.
        ranks: u32,
        /// The partitioned dimension.
        dim: DimName,
    },
    /// Gathers a distributed tensor back onto one process.
    Collect {
        /// The distributed operand.
        arg: Value,
    },
}

/// The operands of `$op` (an `&Op` or an `&mut Op`), each mapped by `$f`, in text order: one
/// match (bindings are references of the op's mutability) serves [`Op::operands`] and
/// [`Op::operands_mut`].
macro_rules! operand_refs {
    ($op:expr, $f:expr) => {{
        let f = $f;
        match $op {
            Op::Constant { value: _ } => vec![],
            Op::Unary { op: _, arg }
            | Op::Cast { arg, to: _ }
            | Op::CartesianShift { arg, dim: _, offset: _ }
            | Op::ShiftApply { arg, neighbor: _ }
            | Op::CanDeref { arg }
            | Op::Subset { arg, domain: _ }
            | Op::Pos { arg, dim: _ }
            | Op::AddDim { arg, dim: _, interval: _ }
            | Op::DropDim { arg, dim: _ }
            | Op::Transpose { arg, perm: _, kind: _ }
            | Op::Broadcast { arg, shape: _ }
            | Op::BroadcastInDim { arg, shape: _, dims: _ }
            | Op::Pack { arg, tile: _, layout: _, padding: _ }
            | Op::Unpack { arg, layout: _, shape: _ }
            | Op::CollapseShape { arg, groups: _, mode: _ }
            | Op::ExpandShape { arg, groups: _, shape: _, mode: _ }
            | Op::Convert { arg, mode: _ }
            | Op::Coordinates { arg, dim: _ }
            | Op::Nonzeros { arg, dim: _ }
            | Op::ToDevice { arg, device: _ }
            | Op::Distribute { arg, ranks: _, dim: _ }
            | Op::Collect { arg }
            | Op::TupleGet { tuple: arg, index: _ } => vec![f(arg)],
            Op::Binary { op: _, lhs, rhs }
            | Op::DotGeneral { lhs, rhs, ring: _, lhs_contract: _, rhs_contract: _, lhs_batch: _, rhs_batch: _ }
            | Op::Product2d { lhs, rhs, ring: _ } => vec![f(lhs), f(rhs)],
            Op::Select { cond, on_true, on_false } => vec![f(cond), f(on_true), f(on_false)],
            Op::MakeTuple { fields: args }
            | Op::Call { func: _, args, result: _ }
            | Op::Reduce { func: _, args, init: _ }
            | Op::Concat { args, dim: _, mode: _ }
            | Op::Map { kind: _, func: _, args } => args.into_iter().map(f).collect(),
            Op::ShiftInit { arg, table } | Op::UnstructuredShift { arg, table, neighbor: _ } => vec![f(arg), f(table)],
            Op::MapReduce { func: _, args, init, subscripts: _ }
            | Op::Scan { func: _, args, dim: _, forward: _, init }
            | Op::MapReduceAff {
                func: _,
                args,
                init,
                domain: _,
                outputs: _,
                shape: _,
                out_map: _,
                maps: _,
                padding: _,
            } => {
                let mut v: Vec<_> = args.into_iter().map(f).collect();
                if let Init::Value(i) = init {
                    v.push(f(i));
                }
                v
            }
            Op::Get { arg, indices } => std::iter::once(arg).chain(indices).map(f).collect(),
            Op::Set { arg, indices, value } => {
                std::iter::once(arg).chain(indices).chain(std::iter::once(value)).map(f).collect()
            }
            Op::Gather { source, indices, coordinates: _, mode: _ } => vec![f(source), f(indices)],
            Op::Assemble { coordinates, values, dim: _ } => vec![f(coordinates), f(values)],
            Op::Scatter { source, dest, indices, coordinates: _, mode: _ } => vec![f(source), f(dest), f(indices)],
        }
    }};
}

impl Op {
    /// The op's name in the text format.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Constant { .. } => "constant",
            Op::Unary { op, .. } => op.keyword(),
            Op::Binary { op, .. } => op.keyword(),
            Op::Select { .. } => "select",
            Op::Cast { .. } => "cast",
            Op::MakeTuple { .. } => "make_tuple",
            Op::TupleGet { .. } => "tuple_get",
            Op::Call { .. } => "call",
            Op::CartesianShift { .. } => "cartesian_shift",
            Op::ShiftInit { .. } => "shift_init",
            Op::ShiftApply { .. } => "shift_apply",
            Op::UnstructuredShift { .. } => "unstructured_shift",
            Op::CanDeref { .. } => "can_deref",
            Op::Reduce { .. } => "reduce",
            Op::Scan { .. } => "scan",
            Op::Subset { .. } => "subset",
            Op::Concat { .. } => "concat",
            Op::Pos { .. } => "pos",
            Op::AddDim { .. } => "add_dim",
            Op::DropDim { .. } => "drop_dim",
            Op::MapReduce { .. } => "map_reduce",
            Op::MapReduceAff { .. } => "map_reduce_aff",
            Op::DotGeneral { .. } => "dot_general",
            Op::Product2d { .. } => "product_2d",
            Op::Transpose { .. } => "transpose",
            Op::Broadcast { .. } => "broadcast",
            Op::BroadcastInDim { .. } => "broadcast_in_dim",
            Op::Map { kind, .. } => kind.keyword(),
            Op::Get { .. } => "get",
            Op::Set { .. } => "set",
            Op::Pack { .. } => "pack",
            Op::Unpack { .. } => "unpack",
            Op::Gather { .. } => "gather",
            Op::Scatter { .. } => "scatter",
            Op::CollapseShape { .. } => "collapse_shape",
            Op::ExpandShape { .. } => "expand_shape",
            Op::Convert { .. } => "convert",
            Op::Coordinates { .. } => "coordinates",
            Op::Nonzeros { .. } => "nonzeros",
            Op::Assemble { .. } => "assemble",
            Op::ToDevice { .. } => "to_device",
            Op::Distribute { .. } => "distribute",
            Op::Collect { .. } => "collect",
        }
    }

    /// The value operands, in text order.
    pub fn operands(&self) -> Vec<Value> {
        operand_refs!(self, |v: &Value| *v)
    }

    /// The value operands, mutable, in the order of [`Op::operands`]: to re-point an op copied
    /// into another function.
    pub fn operands_mut(&mut self) -> Vec<&mut Value> {
        operand_refs!(self, std::convert::identity)
    }

    /// Functions the op refers to.
    pub fn functions(&self) -> Vec<Handle<Function>> {
        match self {
            Op::Call { func, .. }
            | Op::Reduce { func, .. }
            | Op::Scan { func, .. }
            | Op::MapReduce { func, .. }
            | Op::MapReduceAff { func, .. }
            | Op::Map { func, .. } => vec![*func],
            _ => vec![],
        }
    }

    /// The function the op calls or applies (a payload), to re-point it: the one of
    /// [`Op::functions`].
    pub fn function_mut(&mut self) -> Option<&mut Handle<Function>> {
        match self {
            Op::Call { func, .. }
            | Op::Reduce { func, .. }
            | Op::Scan { func, .. }
            | Op::MapReduce { func, .. }
            | Op::MapReduceAff { func, .. }
            | Op::Map { func, .. } => Some(func),
            _ => None,
        }
    }

    /// Whether the result type is the declared one rather than inferred.
    pub fn has_declared_type(&self) -> bool {
        matches!(
            self,
            Op::Constant { .. }
                | Op::Convert { .. }
                | Op::Coordinates { .. }
                | Op::Nonzeros { .. }
                | Op::Assemble { .. }
        )
    }
}

/// The type of a handle to a type, re-exported for convenience in op signatures.
pub type TypeHandle = Handle<Type>;
