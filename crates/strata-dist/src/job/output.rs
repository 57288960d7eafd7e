//! A distributed result leaving the ranks: gathered (on one rank, or on all), or written into
//! one `.npy` file by every rank at its block's offset.

use std::path::Path;

use strata_ir::{Interval, LevelFormat};
use strata_runtime::{Tensor, Value, ValueType};

use super::{agree, Failed, Step};
use crate::{slab, Comm};

/// The owned rows of a local result, as a tensor of their own.
///
/// # Errors
/// The value is not a dense tensor, or does not hold `owned`.
pub fn owned_rows(v: &Value, level: usize, owned: Interval) -> Step<Tensor> {
    let t = v.clone().into_tensor().map_err(|e| e.to_string())?;
    let have = t.ty.levels[level].interval;
    if !have.contains(owned) {
        return Err(format!("the local result covers {have}, not the owned block {owned}"));
    }
    Ok(slab::slice(&t, level, owned))
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
    fn new(comm: &Comm, v: &Value, level: usize, owned: Interval, global: &ValueType) -> Step<Gathered> {
        let mine = owned_rows(v, level, owned)?;
        let whole = Tensor::zeros(&with_interval(&mine.ty, level, global.levels[level].interval));
        let parts = strata_runtime::dist::block_partition(global.levels[level].interval, comm.size as u32);
        let geo = slab::Rows::of(&mine.ty, level).ok_or("a distributed result holds scalars")?;
        let counts: Vec<usize> = parts.iter().map(|p| geo.outer * geo.inner * geo.elem * p.len() as usize).collect();
        let bytes = comm.gatherv(slab::bytes(&mine), &counts, 0).map_err(|e| e.to_string())?;
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

/// Gathers a distributed result on rank 0 (`None` on the others): a collective call.
///
/// # Errors
/// This rank's value does not hold its block, or MPI fails.
pub fn gather(comm: &Comm, v: &Value, level: usize, owned: Interval, global: &ValueType) -> Step<Option<Value>> {
    let mut g = Gathered::new(comm, v, level, owned, global)?;
    Ok(g.bytes.take().map(|bytes| Value::Tensor(g.assemble(&bytes))))
}

/// Gathers a distributed result on every rank (gathered on rank 0 and broadcast): a
/// collective call. The result's type is the local one's with the whole interval.
///
/// # Errors
/// This rank's value does not hold its block, or MPI fails.
pub fn allgather(comm: &Comm, v: &Value, level: usize, owned: Interval, global: &ValueType) -> Step<Tensor> {
    let mut g = Gathered::new(comm, v, level, owned, global)?;
    let mut bytes = g.bytes.take().unwrap_or_else(|| vec![0u8; g.counts.iter().sum()]);
    comm.bcast(&mut bytes, 0).map_err(|e| e.to_string())?;
    Ok(g.assemble(&bytes))
}

/// Writes a result to `path` (a collective call): a distributed one by every rank at its
/// block's offset in one temporary file beside `path`, renamed into place once all have
/// written (removed if any failed); a replicated one by rank 0.
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
    let Some((level, owned, global)) = block else {
        let step = if comm.rank == 0 {
            match v {
                Value::Tensor(t) => strata_runtime::npy::write_value(path, name, t),
                Value::Stored(s) => strata_runtime::sparse_io::write_stored(path, name, s),
            }
            .map_err(|e| e.to_string())
        } else {
            Ok(())
        };
        return agree(comm, step);
    };
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let job = std::env::var("OMPI_COMM_WORLD_JOBID").or_else(|_| std::env::var("PMIX_NAMESPACE")).unwrap_or_default();
    let tmp = dir.join(format!(".{file_name}.strata-tmp.{}", job.replace(['/', '@'], "_")));
    let mut g = global.clone();
    g.levels[*level].format = LevelFormat::Dense;
    g.placement.team = None;
    let start = if comm.rank == 0 { slab::create_npy(&tmp, &g) } else { Ok(0) };
    let start = agree(comm, start)?;
    let mut buf = start.to_ne_bytes();
    agree(comm, comm.bcast(&mut buf, 0).map_err(|e| e.to_string()))?;
    let start = u64::from_ne_bytes(buf);
    let written = owned_rows(v, *level, *owned).and_then(|t| slab::write_rows(&tmp, start, &g, *level, &t, *owned));
    let failed = comm.max_i64(i64::from(written.is_err())).unwrap_or(1);
    if failed != 0 && comm.rank == 0 {
        let _ = std::fs::remove_file(&tmp);
    }
    agree(comm, written)?;
    let renamed = if comm.rank == 0 {
        std::fs::rename(&tmp, path).map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            format!("cannot write `{}`: {e}", path.display())
        })
    } else {
        Ok(())
    };
    agree(comm, renamed)
}
