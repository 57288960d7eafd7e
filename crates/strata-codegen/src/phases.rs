//! Phases of a run around inputs that arrive late: which kernels of a [`KernelProgram`] can
//! run before some buffers hold their values (a rank's halo strips, still being received) and
//! which must wait for them. A distributed time step runs the first phase while its halo
//! exchange is under way — the interior before the boundary strips — then waits and runs the
//! second ([`crate::exec::Buffers::call_some`]).
//!
//! The split keeps the program's meaning: every kernel still runs exactly once, each phase in
//! program order, and a kernel moves ahead of a waiting one only when they are independent:
//! it reads nothing late or written by a waiting kernel, writes nothing a waiting kernel reads,
//! and writes no part of a buffer a waiting kernel writes (a concatenation's pieces of one
//! result, split by `split-pieces`, write disjoint boxes). Reads count whole buffers; a
//! kernel's rolling windows ([`crate::kernel::Window`]) are its own scratch and count as
//! neither.

use strata_ir::{DimName, Interval};

use crate::kernel::{Kernel, KernelKind, KernelProgram};

/// The box of a buffer a kernel writes: an interval per level, by name (`None`: all of it, or
/// not known).
pub type Region = Option<Vec<(DimName, Interval)>>;

/// What one kernel touches.
#[derive(Clone, Debug, PartialEq)]
pub struct Access {
    /// Buffers it reads.
    pub reads: Vec<usize>,
    /// Buffers it writes, each with the box it writes.
    pub writes: Vec<(usize, Region)>,
}

impl Access {
    /// What kernel `k` of `program` reads and writes.
    pub fn of(program: &KernelProgram, k: &Kernel) -> Access {
        // A window's planes are the kernel's own scratch, written before they are read.
        let scratch: Vec<usize> = k.windows().iter().map(|w| w.buffer).collect();
        let n = program.buffers.len();
        let touched = |b: &usize| !scratch.contains(b);
        let reads = (0..n).filter(|&b| k.reads(b)).filter(touched).collect();
        // Stores of a nest (windowed or not) over dense loops go to the domain's point.
        let plain = matches!(&k.kind, KernelKind::Nest(nest) if nest.compressed.is_none()) && k.sets.is_empty();
        let writes = (0..n)
            .filter(|&b| k.writes(b))
            .filter(touched)
            .map(|b| {
                // A plain nest stores at the domain's point: the box of the domain's intervals
                // on the buffer's levels.
                let boxed = plain
                    .then(|| {
                        program.buffers[b]
                            .levels
                            .iter()
                            .map(|l| k.domain.iter().find(|d| d.name == l.name).map(|d| (l.name.clone(), d.interval)))
                            .collect::<Option<Vec<_>>>()
                    })
                    .flatten();
                (b, boxed)
            })
            .collect();
        Access { reads, writes }
    }

    /// Every kernel's access, in program order.
    pub fn all(program: &KernelProgram) -> Vec<Access> {
        program.kernels.iter().map(|k| Access::of(program, k)).collect()
    }
}

/// Whether two written boxes of one buffer may overlap.
fn overlap(a: &Region, b: &Region) -> bool {
    let (Some(a), Some(b)) = (a, b) else { return true };
    a.iter().zip(b).all(|((_, x), (_, y))| x.start.max(y.start) < x.stop.min(y.stop))
}

/// For each kernel (in program order), whether it runs in the first phase: before the buffers
/// `late` hold their values. `None` when no kernel can (nothing to overlap).
pub fn early(access: &[Access], late: &[usize]) -> Option<Vec<bool>> {
    let mut tainted: Vec<usize> = late.to_vec();
    let mut waiting: Vec<&Access> = Vec::new();
    let mut out = Vec::with_capacity(access.len());
    for a in access {
        let reads_late = a.reads.iter().any(|b| tainted.contains(b));
        let clobbers = a.writes.iter().any(|(b, region)| {
            waiting
                .iter()
                .any(|w| w.reads.contains(b) || w.writes.iter().any(|(c, other)| c == b && overlap(region, other)))
        });
        let first = !reads_late && !clobbers;
        if !first {
            tainted.extend(a.writes.iter().map(|(b, _)| *b));
            waiting.push(a);
        }
        out.push(first);
    }
    out.iter().any(|&f| f).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(a: i64, b: i64) -> Interval {
        Interval::new(a, b)
    }

    fn rows(b: usize, r: Interval) -> (usize, Region) {
        (b, Some(vec![(DimName::new("I"), r), (DimName::new("J"), iv(0, 8))]))
    }

    #[test]
    fn the_interior_piece_runs_before_the_strip_arrives() {
        // b0 out, b1 the block, b2 the strip below: piece 1 reads the strip, piece 2 does not.
        let access = [
            Access { reads: vec![1, 2], writes: vec![rows(0, iv(21, 22))] },
            Access { reads: vec![1], writes: vec![rows(0, iv(22, 42))] },
        ];
        assert_eq!(early(&access, &[2]), Some(vec![false, true]));
    }

    #[test]
    fn a_kernel_reading_what_a_waiting_one_writes_waits() {
        // A temporary b3 computed near the boundary from the strip, then read whole.
        let access = [
            Access { reads: vec![1, 2], writes: vec![rows(3, iv(21, 22))] },
            Access { reads: vec![1], writes: vec![rows(3, iv(22, 42))] },
            Access { reads: vec![3], writes: vec![rows(0, iv(22, 41))] },
        ];
        assert_eq!(early(&access, &[2]), Some(vec![false, true, false]));
    }

    #[test]
    fn nothing_moves_over_a_waiting_kernel_it_would_clobber() {
        // The second kernel overwrites what the waiting first one reads (b3), or writes rows
        // of b0 the waiting one writes too.
        let war = [
            Access { reads: vec![2, 3], writes: vec![rows(0, iv(0, 4))] },
            Access { reads: vec![1], writes: vec![rows(3, iv(0, 4))] },
        ];
        assert_eq!(early(&war, &[2]), None);
        let waw = [
            Access { reads: vec![2], writes: vec![rows(0, iv(0, 4))] },
            Access { reads: vec![1], writes: vec![rows(0, iv(3, 8))] },
            Access { reads: vec![1], writes: vec![(0, None)] },
        ];
        assert_eq!(early(&waw, &[2]), None);
    }

    #[test]
    fn without_late_buffers_everything_runs_first() {
        let access = [Access { reads: vec![1], writes: vec![(0, None)] }];
        assert_eq!(early(&access, &[]), Some(vec![true]));
    }
}
