//! Placement (seed 003): moving arrays between devices and onto and off teams of processes.
//! Compute follows data, so the operands of one operation live in one place, and these are
//! the calls that move them (`to_device`, `distribute`, `collect`: the IR ops of those names).
//!
//! An operation on team arrays works block by block where it can (elementwise ops and these
//! three); any other operation computes on the whole array (`collect`), and its result is
//! distributed over the team again along its first axis — a 0-d result is a host array,
//! replicated, which combines with arrays on any team of its device. The front end evaluates
//! a program in one process, so a team array holds every rank's block; `strata run --ranks N`
//! runs programs over MPI.

use strata_ir::Op;

use super::{collected, placed};
use crate::array::{operand, Array, Place};
use crate::error::{invalid, Result};

/// The team of every rank of the job, for [`distribute`] (`team = world`).
pub const WORLD: u32 = strata_ir::Team::WORLD;

/// `x` distributed over a team of `ranks` processes ([`WORLD`]: every rank of the job):
/// block-partitioned along its first axis, the remainder going to the last ranks.
///
/// # Errors
/// `x` is 0-d (a 0-d array is replicated, not partitioned), already on a team (`collect` it
/// first), or, under [`crate::spmd`], `ranks` is neither the job's size nor [`WORLD`].
pub fn distribute(x: &Array, ranks: u32) -> Result<Array> {
    if x.ndim() == 0 {
        return Err(invalid("distribute", "a 0-d array cannot be partitioned (it combines with team arrays as it is)"));
    }
    if let Some(r) = x.place().team {
        return Err(invalid("distribute", format!("the array is already on a team of {r} ranks; `collect` it first")));
    }
    crate::spmd::check_team("distribute", ranks, "`WORLD`")?;
    Ok(placed(x.clone(), &Place { device: x.device().to_string(), team: Some(ranks) }))
}

/// `x` gathered from its team into one array on its device.
///
/// # Errors
/// `x` is not on a team.
pub fn collect(x: &Array) -> Result<Array> {
    if !x.on_team() {
        return Err(invalid("collect", "the array is not on a team"));
    }
    Ok(collected(x))
}

/// `x` moved to device `device` (`"cpu"` for the host), on the same team if it has one.
///
/// # Errors
/// A device name that is empty or has characters other than letters, digits and `_`.
pub fn to_device(x: &Array, device: &str) -> Result<Array> {
    if device.is_empty() || !device.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(invalid("to_device", format!("`{device}` is not a device name (letters, digits and `_`)")));
    }
    if x.device() == device {
        return Ok(x.clone());
    }
    let place = Place { device: device.to_string(), team: x.place().team };
    let device = place.to_ir().device;
    Ok(Array::traced_blockwise(
        Op::ToDevice { arg: operand(0), device },
        vec![x.clone()],
        x.shape().to_vec(),
        x.dtype(),
        place,
    ))
}
