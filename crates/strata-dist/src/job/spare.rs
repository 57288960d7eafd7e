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

thread_local! {
    static SPARE: RefCell<Vec<Tensor>> = const { RefCell::new(Vec::new()) };
}

/// A kept buffer of type `ty` (its content stale: the caller overwrites every element).
pub(crate) fn take(ty: &ValueType) -> Option<Tensor> {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        let at = s.iter().position(|t| t.ty == *ty)?;
        Some(s.swap_remove(at))
    })
}

/// Keeps the dense buffers among `values` (a run's arguments, no longer needed).
pub(crate) fn keep(values: Vec<Value>) {
    SPARE.with(|s| {
        let mut s = s.borrow_mut();
        for v in values {
            let Value::Tensor(t) = v else { continue };
            let dense = matches!(t.data, Data::Scalars(_)) && t.present.is_none();
            if dense && t.len() * t.ty.element.scalar().map_or(0, |e| e.size_bytes()) >= MIN_BYTES {
                if s.len() == KEPT {
                    s.remove(0);
                }
                s.push(t);
            }
        }
    });
}
