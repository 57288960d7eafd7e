//! The lazy array: a node of a traced program, or data.
//!
//! An [`Array`] is cheap to clone (a reference-counted node). Operations build new nodes and
//! check shapes, dtypes and placements eagerly, so errors point at the call that caused them;
//! nothing is computed until [`Array::eval`] (or a read such as [`Array::to_ndarray`]). An
//! evaluated node keeps its value, so later programs start from it as an input.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use strata_entity::Handle;
use strata_ir::{DimName, Interval, Level, LevelFormat, Literal, Op, Placement, Scalar, Team, Type, Value};
use strata_runtime::{ElemType, Tensor, ValueType};
use strata_verify::build::ModuleBuilder;

use crate::dtype::DType;
use crate::error::{invalid, ArrayError, Result};

/// Where an array lives (seed 003): a device and, optionally, a team of processes it is
/// block-distributed over (along its first axis).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    /// The device (`"cpu"` for the host).
    pub device: String,
    /// The number of ranks of the team, if distributed.
    pub team: Option<u32>,
}

impl Place {
    /// The host, no team.
    pub fn host() -> Place {
        Place { device: "cpu".into(), team: None }
    }

    /// A device, no team.
    pub fn device(name: &str) -> Place {
        Place { device: name.into(), team: None }
    }

    /// The host, distributed over a team of `ranks`.
    pub fn team(ranks: u32) -> Place {
        Place { device: "cpu".into(), team: Some(ranks) }
    }

    /// The host, distributed over every rank of the job (`team = world`): the same program
    /// runs at any rank count (under [`crate::spmd`]; one process is a job of one rank).
    pub fn world() -> Place {
        Place::team(Team::WORLD)
    }

    pub(crate) fn to_ir(&self) -> Placement {
        Placement {
            device: if self.device == "cpu" {
                strata_ir::Device::Cpu
            } else {
                strata_ir::Device::Named(self.device.clone())
            },
            team: self.team.map(|ranks| Team { ranks }),
        }
    }
}

impl Default for Place {
    fn default() -> Self {
        Place::host()
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {}", self.device)?;
        match self.team {
            Some(Team::WORLD) => write!(f, ", the world team"),
            Some(r) => write!(f, ", team of {r}"),
            None => write!(f, ", no team"),
        }
    }
}

/// One traced operation: an IR op whose operand `k` is written as the handle of index `k`
/// (see [`operand`]) and stands for `args[k]`; a payload function it applies is a handle into
/// this thread's payload library ([`crate::trace::payload`]).
#[derive(Debug)]
pub(crate) struct Traced {
    /// The op.
    pub op: Op,
    /// The operands.
    pub args: Vec<Array>,
}

/// The placeholder for operand `k` of a traced op.
pub(crate) fn operand(k: usize) -> Value {
    Value::from_index(k)
}

/// What a node's IR value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// An array: a tensor over positional dimensions `_0, _1, …` of its shape.
    Array,
    /// A bare scalar of the node's dtype (a literal operand of elementwise ops), which
    /// broadcasts to any operand wherever that lives.
    Scalar,
    /// Another value (the tuple-valued fold inside `argmax`): only ever an operand, its type
    /// inferred when the program is built.
    Operand,
}

#[derive(Debug)]
pub(crate) struct Node {
    pub shape: Vec<usize>,
    pub dtype: DType,
    pub place: Place,
    /// The operation producing the array; `None` for data, and once evaluated (the value is
    /// then all that is needed, and the operands — a time loop's earlier states — are freed).
    pub op: RefCell<Option<Traced>>,
    /// What the node's IR value is.
    pub kind: Kind,
    /// The value, once known (shared with the programs that read it, never copied).
    pub value: RefCell<Option<Rc<Tensor>>>,
    /// The longest chain of operations not yet evaluated that ends here (0 for data).
    pub pending: u32,
}

impl Drop for Node {
    /// The value's memory, when nothing else holds it, is kept for a later run's output
    /// ([`strata_engine::recycle`]): a loop's next state reuses the last one's buffer.
    fn drop(&mut self) {
        if self.op.get_mut().is_some() {
            unshare(self);
        }
        if let Some(Ok(t)) = self.value.get_mut().take().map(Rc::try_unwrap) {
            strata_engine::recycle(t);
        }
    }
}

/// The longest chain of unevaluated operations an array may end before it is evaluated on its
/// own: a loop that never reads its state (`u = u + dt * (roll(u, 1) - u)` for 1,000 steps)
/// then runs one program of a fixed size every few steps — compiled once, its scalars
/// parameters — instead of one program of the whole history at the end, whose size grows with
/// the step count.
pub const MAX_PENDING: u32 = 48;

/// The pending chain of an operation on `args`.
fn pending_after(args: &[Array]) -> u32 {
    1 + args.iter().filter(|a| !a.is_evaluated()).map(|a| a.0.pending).max().unwrap_or(0)
}

/// A lazily evaluated n-dimensional array with array-API semantics.
#[derive(Clone, Debug)]
pub struct Array(pub(crate) Rc<Node>);

impl Array {
    /// The extents.
    pub fn shape(&self) -> &[usize] {
        &self.0.shape
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.0.shape.len()
    }

    /// The number of elements.
    pub fn size(&self) -> usize {
        self.0.shape.iter().product()
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.0.dtype
    }

    /// Where the array lives.
    pub fn place(&self) -> &Place {
        &self.0.place
    }

    /// The device name.
    pub fn device(&self) -> &str {
        &self.0.place.device
    }

    /// Whether the value has been computed (or the array holds data).
    pub fn is_evaluated(&self) -> bool {
        self.0.value.borrow().is_some()
    }

    /// Whether the array is distributed over a team (a bare scalar never is: it broadcasts
    /// wherever its operands live).
    pub(crate) fn on_team(&self) -> bool {
        self.0.place.team.is_some() && !self.is_bare_scalar()
    }

    /// Whether the node is a bare scalar (an internal constant operand, not an array).
    pub(crate) fn is_bare_scalar(&self) -> bool {
        self.0.kind == Kind::Scalar
    }

    /// A new traced node of an operation that needs its operands whole: where an operand
    /// lives on a team, it is collected first and the result distributed over the team again
    /// (along its first axis; a 0-d result is replicated, an array of the host). Elementwise
    /// and placement ops, which keep block levels, use [`Array::traced_blockwise`].
    pub(crate) fn traced(op: Op, args: Vec<Array>, shape: Vec<usize>, dtype: DType, place: Place) -> Array {
        if place.team.is_none() && !args.iter().any(Array::on_team) {
            return Array::traced_blockwise(op, args, shape, dtype, place);
        }
        let (args, whole_place) = whole_operands(args, &place);
        // `placed` leaves a 0-d result where it is.
        crate::ops::placed(Array::traced_blockwise(op, args, shape, dtype, whole_place), &place)
    }

    /// A new traced node of an operation that runs block by block: its operands and result
    /// keep their block levels (elementwise ops, `distribute`, `collect`, `to_device`).
    pub(crate) fn traced_blockwise(op: Op, args: Vec<Array>, shape: Vec<usize>, dtype: DType, place: Place) -> Array {
        let a = Array::node(op, args, shape, dtype, place, Kind::Array);
        if a.0.pending >= MAX_PENDING {
            // An error is not lost: the read that needs the value runs the program again.
            let _ = a.eval();
        }
        a
    }

    /// A traced node whose value is not an array (`kind`): only ever an operand, never
    /// evaluated on its own.
    pub(crate) fn special_traced(
        op: Op,
        args: Vec<Array>,
        shape: Vec<usize>,
        dtype: DType,
        kind: Kind,
        place: Place,
    ) -> Array {
        // Special nodes are operands only: on a team operand they compute on the whole array.
        let (args, place) = if args.iter().any(Array::on_team) { whole_operands(args, &place) } else { (args, place) };
        Array::node(op, args, shape, dtype, place, kind)
    }

    /// A step inside a composite operation that keeps block levels (the `subset` before the
    /// shifts of a team slice, the pieces of an assignment): an operand only, typed when the
    /// program is built (its intervals need not start at 0), never evaluated on its own nor
    /// collected.
    pub(crate) fn traced_step(op: Op, args: Vec<Array>, dtype: DType, place: Place) -> Array {
        Array::node(op, args, Vec::new(), dtype, place, Kind::Operand)
    }

    /// The live node computing `op` on `args` (hash-consed), or a new one.
    fn node(op: Op, args: Vec<Array>, shape: Vec<usize>, dtype: DType, place: Place, kind: Kind) -> Array {
        let pending = pending_after(&args);
        shared(Node {
            shape,
            dtype,
            place,
            op: RefCell::new(Some(Traced { op, args })),
            kind,
            value: RefCell::new(None),
            pending,
        })
    }

    /// An array of `shape` holding `t`: a team array's block (rows of the first axis, under
    /// [`crate::spmd`]) or a whole value.
    pub(crate) fn from_block(t: Tensor, shape: &[usize], place: Place) -> Array {
        let ElemType::Scalar(dtype) = t.ty.element else { unreachable!("a block of an array holds scalars") };
        Array(Rc::new(Node {
            shape: shape.to_vec(),
            dtype,
            place,
            op: RefCell::new(None),
            kind: Kind::Array,
            value: RefCell::new(Some(Rc::new(t))),
            pending: 0,
        }))
    }

    /// An array holding `t` (a dense tensor over positional dimensions).
    pub(crate) fn from_tensor(t: Tensor, place: Place) -> Result<Array> {
        let ElemType::Scalar(dtype) = t.ty.element else {
            return Err(ArrayError::Data("arrays hold scalar elements".into()));
        };
        let shape = t.ty.shape();
        let mut ty = value_type(&shape, dtype, &place);
        let mut data = t.data;
        if let Some(rows) = crate::spmd::block(&place, &shape) {
            // Under `mpirun` a team array holds only this rank's block.
            data = strata_dist::slab::slice(&Tensor { ty: ty.clone(), data, present: None }, 0, rows).data;
            ty.levels[0].interval = rows;
        }
        Ok(Array::from_block(Tensor { ty, data, present: None }, &shape, place))
    }

    /// A team array from this rank's block of an entry's result distributed along its first
    /// level (`block`: the owned rows at the result's coordinates; `global`: its type).
    pub(crate) fn from_entry_block(block: Tensor, global: &ValueType) -> Result<Array> {
        let ElemType::Scalar(dtype) = global.element else {
            return Err(ArrayError::Data("a result of tuples or tensors: arrays hold scalar elements".to_string()));
        };
        let device = match &global.placement.device {
            strata_ir::Device::Cpu => "cpu".to_string(),
            strata_ir::Device::Named(n) => n.clone(),
        };
        let place = Place { device, team: global.placement.team.map(|t| t.ranks) };
        let shape: Vec<usize> = global.levels.iter().map(|l| l.interval.len() as usize).collect();
        let mut ty = value_type(&shape, dtype, &place);
        let (start, rows) = (global.levels[0].interval.start, block.ty.levels[0].interval);
        ty.levels[0].interval = Interval::new(rows.start - start, rows.stop - start);
        Ok(Array::from_block(Tensor { ty, data: block.data, present: block.present }, &shape, place))
    }

    /// Checks that `others` live where `self` does (compute follows data).
    /// A 0-d array of the host combines with arrays on a team of the same device: it is
    /// replicated on every rank (a reduction of a team array is such an array). Bare scalars
    /// (literal operands) combine with anything.
    pub(crate) fn same_place(op: &'static str, arrays: &[&Array]) -> Result<Place> {
        let first =
            arrays.iter().find(|a| a.on_team()).or(arrays.first()).map(|a| a.place().clone()).unwrap_or_default();
        for a in arrays.iter().filter(|a| !a.is_bare_scalar()) {
            let replicated = a.ndim() == 0 && a.place().team.is_none() && a.device() == first.device;
            if *a.place() != first && !replicated {
                return Err(ArrayError::Placement { op, a: first.to_string(), b: a.place().to_string() });
            }
        }
        Ok(first)
    }

    /// Normalizes a possibly negative axis of an array of rank `ndim`.
    pub(crate) fn axis(op: &'static str, axis: isize, ndim: usize) -> Result<usize> {
        let n = ndim as isize;
        if axis < -n || axis >= n {
            return Err(ArrayError::Axis { op, message: format!("axis {axis} is out of range for {ndim} axes") });
        }
        Ok(if axis < 0 { (axis + n) as usize } else { axis as usize })
    }

    /// Normalizes an axis list (`None`: every axis), rejecting repeats.
    pub(crate) fn axes(op: &'static str, axes: Option<&[isize]>, ndim: usize) -> Result<Vec<usize>> {
        let Some(axes) = axes else { return Ok((0..ndim).collect()) };
        let mut out = Vec::new();
        for &a in axes {
            let a = Array::axis(op, a, ndim)?;
            if out.contains(&a) {
                return Err(invalid(op, format!("axis {a} is repeated")));
            }
            out.push(a);
        }
        out.sort_unstable();
        Ok(out)
    }
}

/// Operands gathered from their teams (`collect`) and the place without the team: where an
/// operation that needs whole arrays runs.
fn whole_operands(args: Vec<Array>, place: &Place) -> (Vec<Array>, Place) {
    (args.iter().map(crate::ops::collected).collect(), crate::ops::untiled(place))
}

/// The digest of what makes two traced nodes the same computation: the op (its payload a
/// handle into the thread's library, where equal payloads are one function), the operand nodes
/// (by address), the result's shape, dtype, place and kind.
fn digest(n: &Node, t: &Traced) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    t.op.hash(&mut h);
    for a in &t.args {
        (Rc::as_ptr(&a.0) as usize).hash(&mut h);
    }
    n.shape.hash(&mut h);
    n.dtype.hash(&mut h);
    n.place.hash(&mut h);
    n.kind.hash(&mut h);
    h.finish()
}

/// Whether traced nodes `a` (operation `ta`) and `b` (`tb`) compute the same thing.
fn same_computation(a: &Node, ta: &Traced, b: &Node, tb: &Traced) -> bool {
    a.kind == b.kind
        && a.dtype == b.dtype
        && a.shape == b.shape
        && a.place == b.place
        && ta.args.len() == tb.args.len()
        && ta.args.iter().zip(&tb.args).all(|(x, y)| Rc::ptr_eq(&x.0, &y.0))
        && ta.op == tb.op
}

thread_local! {
    /// Live traced nodes by what they compute (hash-consing): building the same operation on
    /// the same operands again returns the existing node, so a program computes it once (the
    /// mean inside `std` and a `mean` of the same array are one fold). Entries are compared
    /// through the nodes themselves (no key is copied), and a node leaves the table when it is
    /// dropped or evaluated ([`unshare`]), so the table holds the live traced nodes only.
    /// Operand addresses stay valid because a live node keeps its operands alive.
    static NODES: RefCell<hashbrown::HashTable<(u64, std::rc::Weak<Node>)>> = const { RefCell::new(hashbrown::HashTable::new()) };
}

/// The live node computing what `node` computes, or `node` itself, shared from now on.
fn shared(node: Node) -> Array {
    let hash = {
        let t = node.op.borrow();
        digest(&node, t.as_ref().expect("a traced node"))
    };
    NODES.with(|nodes| {
        let mut nodes = nodes.borrow_mut();
        let found = nodes
            .find(hash, |(h, w)| {
                *h == hash
                    && w.upgrade().is_some_and(|n| {
                        let (a, b) = (n.op.borrow(), node.op.borrow());
                        matches!((a.as_ref(), b.as_ref()), (Some(ta), Some(tb)) if same_computation(&n, ta, &node, tb))
                    })
            })
            .and_then(|(_, w)| w.upgrade());
        if let Some(n) = found {
            // `node` was never in the table: its operation (and the operands it holds) goes
            // outside the table's borrow, and without `Node::drop` looking for its entry.
            drop(nodes);
            let mut node = node;
            drop(node.op.get_mut().take());
            return Array(n);
        }
        let n = Rc::new(node);
        nodes.insert_unique(hash, (hash, Rc::downgrade(&n)), |(h, _)| *h);
        Array(n)
    })
}

/// Removes the table entry of traced node `n` (being dropped, or dropping its operation), if
/// it has one. A thread's table may be gone while the thread ends: nothing to remove then.
fn unshare(n: &Node) {
    let Some(hash) = n.op.try_borrow().ok().and_then(|t| t.as_ref().map(|t| digest(n, t))) else { return };
    let _ = NODES.try_with(|nodes| {
        let Ok(mut nodes) = nodes.try_borrow_mut() else { return };
        if let Ok(e) = nodes.find_entry(hash, |(h, w)| *h == hash && std::ptr::eq(w.as_ptr(), n)) {
            e.remove();
        }
    });
}

impl Array {
    /// Drops the operation of an evaluated node: its operands (and theirs) are freed unless
    /// something else holds them. The node leaves the hash-consing table, whose entries name
    /// their operands by address.
    pub(crate) fn forget_operation(&self) {
        unshare(&self.0);
        let t = self.0.op.borrow_mut().take();
        drop(t);
    }
}

/// The runtime type of an array value: positional dense levels `_0, _1, …`; a team
/// distributes the first axis in blocks.
pub(crate) fn value_type(shape: &[usize], dtype: DType, place: &Place) -> ValueType {
    let levels = shape
        .iter()
        .enumerate()
        .map(|(i, &n)| Level {
            name: DimName::positional(i),
            interval: Interval::new(0, n as i64),
            format: if i == 0 && place.team.is_some() { LevelFormat::Block } else { LevelFormat::Dense },
        })
        .collect();
    ValueType { levels, placement: place.to_ir(), element: ElemType::Scalar(dtype), is_tensor: true }
}

/// The IR type of an array value (as [`value_type`]), in `mb`'s arena.
pub(crate) fn ir_type(mb: &mut ModuleBuilder, shape: &[usize], dtype: DType, place: &Place) -> Handle<Type> {
    let ValueType { levels, placement, .. } = value_type(shape, dtype, place);
    let element = mb.scalar(dtype);
    mb.tensor(element, levels, placement)
}

/// The literal of type `dtype` for the value `v` (rounded to `f32`, wrapped to integers).
pub(crate) fn literal(v: f64, dtype: DType) -> Literal {
    match dtype {
        Scalar::Bool => Literal::Bool(v != 0.0),
        Scalar::F32 | Scalar::C64 => Literal::Float(v as f32 as f64),
        d if d.is_inexact() => Literal::Float(v),
        d => Literal::Int(strata_runtime::Sv::from_f64(d, v).as_i128() as i64),
    }
}

/// An integer literal of type `dtype` (wrapped to the type).
pub(crate) fn int_literal(v: i128, dtype: DType) -> Literal {
    match dtype {
        d if d.is_inexact() => Literal::Float(v as f64),
        Scalar::Bool => Literal::Bool(v != 0),
        d => Literal::Int(strata_runtime::Sv::from_i128(d, v).as_i128() as i64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many entries this thread's hash-consing table holds.
    fn table_len() -> usize {
        NODES.with(|n| n.borrow().len())
    }

    fn data(v: &[f64]) -> Array {
        Array::from_vec(&[v.len()], v.to_vec()).unwrap()
    }

    /// The table holds the live traced nodes only: the same operation on the same operands is
    /// one node while it lives; a dropped or evaluated node leaves the table, so a loop that
    /// traces and drops (or evaluates) every step keeps it at its working set, and the same
    /// operation traced again afterwards is a new node computing the right value.
    #[test]
    fn the_hash_consing_table_holds_the_live_traced_nodes_only() {
        let (x, y) = (data(&[1.0, 2.0, 3.0]), data(&[10.0, 20.0, 30.0]));
        let base = table_len();
        let a = crate::add(&x, &y).unwrap();
        let b = crate::add(&x, &y).unwrap();
        assert!(Rc::ptr_eq(&a.0, &b.0), "one node for one computation");
        assert_eq!(table_len(), base + 1);
        let c = crate::multiply(&a, &y).unwrap();
        assert_eq!(table_len(), base + 2);
        drop((b, c));
        assert_eq!(table_len(), base + 1, "a dropped node leaves the table");
        assert_eq!(a.to_vec::<f64>().unwrap(), vec![11.0, 22.0, 33.0]);
        assert_eq!(table_len(), base, "an evaluated node leaves the table");
        drop(a);
        for step in 0..10_000 {
            let s = crate::subtract(&crate::add(&x, &y).unwrap(), &x).unwrap();
            if step % 1000 == 0 {
                assert_eq!(s.to_vec::<f64>().unwrap(), vec![10.0, 20.0, 30.0]);
            }
        }
        assert_eq!(table_len(), base, "nothing left behind by 10,000 traced steps");
        let again = crate::add(&x, &y).unwrap();
        assert_eq!(again.to_vec::<f64>().unwrap(), vec![11.0, 22.0, 33.0]);
    }
}
