//! Held blocks kept between runs. A time loop runs the same stage every step, and each run holds
//! the same blocks (owned rows plus halo) in fresh buffers: on a large block the page faults of
//! a fresh buffer cost as much as the copy into it. Buffers a run no longer needs are kept here
//! (a few per thread) and handed to the next run that holds a block of the same type, which
//! overwrites every row: its owned rows are copied in, the others arrive by the halo exchange.

use std::cell::RefCell;

use strata_runtime::{Data, Tensor, Value, ValueType};

/// Buffers kept per thread (the blocks of one step's inputs, with room to spare).
const KEPT: usize = 8;

/// Buffers smaller than this are not worth keeping.
const MIN_BYTES: usize = 1 << 20;

/// A buffer no run took back after this many later runs is freed (a loop's stages alternate,
/// so a stage's buffers wait one run of the other stage; memory is not held after a loop).
const RUNS_KEPT: u32 = 2;

thread_local! {
    /// Kept buffers with the number of runs since each was kept.
    static SPARE: RefCell<Vec<(u32, Tensor)>> = const { RefCell::new(Vec::new()) };
}

/// A kept buffer of type `ty` (its content stale: the caller overwrites every element).
pub(crate) fn take(ty: &ValueType) -> Option<Tensor> {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        let at = s.iter().position(|(_, t)| t.ty == *ty)?;
        Some(s.swap_remove(at).1)
    })
}

/// Keeps the dense buffers among `values` (a run's arguments, no longer needed), and frees
/// those no run took back for [`RUNS_KEPT`] runs.
pub(crate) fn keep(values: impl IntoIterator<Item = Value>) {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        for (age, _) in s.iter_mut() {
            *age += 1;
        }
        s.retain(|(age, _)| *age < RUNS_KEPT);
        for v in values {
            let Value::Tensor(t) = v else { continue };
            let dense = matches!(t.data, Data::Scalars(_)) && t.present.is_none();
            if dense && t.len() * t.ty.element.scalar().map_or(0, |e| e.size_bytes()) >= MIN_BYTES {
                if s.len() == KEPT {
                    s.remove(0);
                }
                s.push((0, t));
            }
        }
    });
}
