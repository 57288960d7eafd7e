//! A distributed result leaving the ranks: gathered (on one rank, or on all), or written into
//! one `.npy` file by every rank at its block's offset.

use std::borrow::Cow;
use std::path::Path;

use strata_ir::{Interval, LevelFormat};
use strata_runtime::{Data, ElemType, Tensor, Value, ValueType};

use super::{agree, Failed, RankError, Step};
use crate::{slab, Comm};

/// A value as a dense tensor: borrowed when it is one, stored values converted.
///
/// # Errors
/// A stored value that does not convert.
pub fn dense(v: &Value) -> Step<Cow<'_, Tensor>> {
    match v {
        Value::Tensor(t) => Ok(Cow::Borrowed(t)),
        Value::Stored(s) => s.to_tensor().map(Cow::Owned).map_err(|e| RankError::internal(e.to_string())),
    }
}

/// The owned rows of a local result, as a tensor of their own.
///
/// # Errors
/// The value does not hold `owned`.
pub fn owned_rows(t: &Tensor, level: usize, owned: Interval) -> Step<Tensor> {
    slab::holds(t, level, owned).map_err(RankError::Internal)?;
    Ok(slab::slice(t, level, owned))
}

fn with_interval(t: &ValueType, level: usize, iv: Interval) -> ValueType {
    let mut t = t.clone();
    t.levels[level].interval = iv;
    t
}

/// Every rank's block of a distributed value, gathered in rank order on rank 0.
struct Gathered {
    /// The whole value, zeros until assembled.
    whole: Tensor,
    /// The blocks' bytes, in rank order (rank 0 only).
    bytes: Option<Vec<u8>>,
    /// Each rank's block.
    parts: Vec<Interval>,
    /// Each block's length in bytes.
    counts: Vec<usize>,
    level: usize,
}

impl Gathered {
    /// Gathers (a collective call).
    fn new(comm: &Comm, t: &Tensor, level: usize, owned: Interval, global: &ValueType) -> Step<Gathered> {
        let mine = owned_rows(t, level, owned)?;
        let whole = Tensor::zeros(&with_interval(&mine.ty, level, global.levels[level].interval));
        let parts = strata_runtime::dist::block_partition(global.levels[level].interval, comm.size as u32);
        let geo = slab::Rows::of(&mine.ty, level)
            .ok_or_else(|| RankError::internal("a distributed result must hold scalars or tuples of scalars"))?;
        let counts: Vec<usize> = parts.iter().map(|p| geo.outer * geo.inner * geo.elem * p.len() as usize).collect();
        let bytes = comm.gatherv(slab::bytes(&mine), &counts, 0)?;
        Ok(Gathered { whole, bytes, parts, counts, level })
    }

    /// The whole value from the blocks' bytes.
    fn assemble(mut self, bytes: &[u8]) -> Tensor {
        let mut at = 0;
        for (p, c) in self.parts.iter().zip(&self.counts) {
            slab::unpack(&mut self.whole, self.level, *p, &bytes[at..at + c]);
            at += c;
        }
        self.whole
    }
}

/// A tensor of tuples as one tensor of scalars per field, nested tuples flattened in order; a
/// tensor of scalars as itself (borrowed).
fn fields(t: &Tensor) -> Vec<Cow<'_, Tensor>> {
    if !matches!(t.data, Data::Tuple(_)) {
        return vec![Cow::Borrowed(t)];
    }
    let mut out = Vec::new();
    push_fields(t, &t.ty.element, &t.data, &mut out);
    out.into_iter().map(Cow::Owned).collect()
}

/// Pushes the scalar fields of `data` (elements of type `element`, laid out as `t`) to `out`.
fn push_fields(t: &Tensor, element: &ElemType, data: &Data, out: &mut Vec<Tensor>) {
    match (element, data) {
        (ElemType::Tuple(types), Data::Tuple(parts)) => {
            for (e, d) in types.iter().zip(parts) {
                push_fields(t, e, d, out);
            }
        }
        _ => out.push(Tensor {
            ty: ValueType { element: element.clone(), ..t.ty.clone() },
            data: data.clone(),
            present: t.present.clone(),
        }),
    }
}

/// The inverse of [`fields`]: a tensor of `ty`'s element from its fields' tensors, in order.
fn from_fields(ty: &ValueType, element: &ElemType, parts: &mut impl Iterator<Item = Tensor>) -> Tensor {
    match element {
        ElemType::Tuple(types) => {
            let data = types.iter().map(|f| from_fields(ty, f, parts).data).collect();
            Tensor { ty: ValueType { element: element.clone(), ..ty.clone() }, data: Data::Tuple(data), present: None }
        }
        _ => parts.next().expect("one tensor per field"),
    }
}

/// Gathers a distributed result on rank 0 (`None` on the others): a collective call. Tuple
/// elements are gathered field by field.
///
/// # Errors
/// This rank's value does not hold its block, or MPI fails.
pub fn gather(comm: &Comm, t: &Tensor, level: usize, owned: Interval, global: &ValueType) -> Step<Option<Value>> {
    let ty = &t.ty;
    let mut parts = Vec::new();
    for field in fields(t) {
        let mut g = Gathered::new(comm, &field, level, owned, global)?;
        if let Some(bytes) = g.bytes.take() {
            parts.push(g.assemble(&bytes));
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let whole_ty = parts[0].ty.clone();
    let mut it = parts.into_iter();
    Ok(Some(Value::Tensor(from_fields(&ValueType { element: ty.element.clone(), ..whole_ty }, &ty.element, &mut it))))
}

/// The bytes of `whole` (an [`allgather`]'s result) that other ranks sent: its size beyond
/// this rank's part `mine`.
pub fn gathered_bytes(whole: &Tensor, mine: &Tensor) -> usize {
    let size = |t: &Tensor| t.ty.size_bytes().unwrap_or(0);
    size(whole).saturating_sub(size(mine))
}

/// Gathers a distributed result on every rank (gathered on rank 0 and broadcast): a
/// collective call. The result's type is the local one's with the whole interval.
///
/// # Errors
/// This rank's value does not hold its block, or MPI fails.
pub fn allgather(comm: &Comm, t: &Tensor, level: usize, owned: Interval, global: &ValueType) -> Step<Tensor> {
    let mut g = Gathered::new(comm, t, level, owned, global)?;
    let mut bytes = g.bytes.take().unwrap_or_else(|| vec![0u8; g.counts.iter().sum()]);
    comm.bcast(&mut bytes, 0)?;
    Ok(g.assemble(&bytes))
}

/// The temporary file a distributed output to `path` is written into before it is renamed:
/// hidden, beside `path`, named with the job's token (`strata run --ranks` removes it when a
/// rank dies mid-write).
pub fn temporary_of(path: &Path, job: &str) -> std::path::PathBuf {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!(".{file_name}.strata-tmp.{}", job.replace(['/', '@'], "_")))
}

/// Writes a result to `path` (a collective call): a distributed one by every rank at its
/// block's offset in one temporary file beside `path`, renamed into place once all have
/// written (removed if any failed); a replicated one, and a distributed one of tuples or a
/// sparse or ragged one (an `.npz`), by rank 0.
///
/// # Errors
/// Any rank failing to write (every rank returns an error; `path` is untouched).
pub fn write_output(
    comm: &Comm,
    name: &str,
    path: &Path,
    v: &Value,
    block: Option<&(usize, Interval, ValueType)>,
) -> Result<(), Failed> {
    let tuples = matches!(v, Value::Tensor(t) if matches!(t.ty.element, ElemType::Tuple(_)));
    if let (Some((level, owned, global)), true) = (block, tuples || super::is_stored(v.ty())) {
        // Tuple elements and sparse or ragged values go to an `.npz` (one array per field, or
        // SciPy's / the ragged layout's arrays), which ranks do not write into at offsets:
        // gathered on rank 0, written there.
        let whole = agree(comm, super::gather_value(comm, v, *level, *owned, global))?;
        return write_output(comm, name, path, whole.as_ref().unwrap_or(v), None);
    }
    let Some((level, owned, global)) = block else {
        let step = if comm.rank == 0 {
            match v {
                Value::Tensor(t) => strata_runtime::npy::write_value(path, name, t),
                Value::Stored(s) => strata_runtime::sparse_io::write_stored(path, name, s),
            }
            .map_err(|e| RankError::Data(e.to_string()))
        } else {
            Ok(())
        };
        return agree(comm, step);
    };
    let job = std::env::var("STRATA_JOB_TOKEN")
        .or_else(|_| std::env::var("OMPI_COMM_WORLD_JOBID"))
        .or_else(|_| std::env::var("PMIX_NAMESPACE"))
        .unwrap_or_default();
    let tmp = temporary_of(path, &job);
    let mut g = global.clone();
    g.levels[*level].format = LevelFormat::Dense;
    g.placement.team = None;
    let start = if comm.rank == 0 { slab::create_npy(&tmp, &g).map_err(RankError::Data) } else { Ok(0) };
    let start = agree(comm, start)?;
    let mut buf = start.to_ne_bytes();
    agree(comm, comm.bcast(&mut buf, 0).map_err(RankError::from))?;
    let start = u64::from_ne_bytes(buf);
    // Each rank writes its owned rows from the value it holds, in place (no copy of the block).
    let written = dense(v).and_then(|t| slab::write_rows(&tmp, start, &g, *level, &t, *owned).map_err(RankError::Data));
    let failed = comm.max_i64(i64::from(written.is_err())).unwrap_or(1);
    if failed != 0 && comm.rank == 0 {
        let _ = std::fs::remove_file(&tmp);
    }
    agree(comm, written)?;
    let renamed = if comm.rank == 0 {
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            RankError::Data(format!("cannot write `{}`: {e}", path.display()))
        })
    } else {
        Ok(())
    };
    agree(comm, renamed)
}
