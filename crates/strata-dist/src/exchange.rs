//! Moving rows of a block level between ranks: which rows each rank sends to and receives
//! from each other one ([`FetchPlan`]), either known from the interval types (a halo) or
//! requested at run time (the rows a neighbor table reaches, [`crate::indirect`]), and the
//! point-to-point messages that move them.

use strata_ir::Interval;
use strata_runtime::{Data, Tensor, ValueType};

use crate::plan::BlockParam;
use crate::rows::RowSet;
use crate::{slab, Comm, CommError};

/// Which rows of one distributed input a rank receives from each other rank and serves to
/// each: planned once, by an all-to-all of requests, and reused for every exchange.
#[derive(Clone, Debug, Default)]
pub struct FetchPlan {
    /// The block level's position.
    pub level: usize,
    /// Rows received: `(from, runs)`.
    pub recv: Vec<(usize, Vec<Interval>)>,
    /// Rows served: `(to, runs)`.
    pub send: Vec<(usize, Vec<Interval>)>,
}

fn encode(runs: &[Interval]) -> Vec<u8> {
    runs.iter().flat_map(|r| [r.start.to_le_bytes(), r.stop.to_le_bytes()]).flatten().collect()
}

fn decode(bytes: &[u8]) -> Vec<Interval> {
    let word = |c: &[u8]| i64::from_le_bytes(c.try_into().expect("8 bytes"));
    bytes.chunks_exact(16).map(|c| Interval::new(word(&c[..8]), word(&c[8..]))).collect()
}

impl FetchPlan {
    /// Plans the fetch of `need` (rows of `b`'s block level; those this rank owns are not
    /// fetched) on every rank — a collective call.
    pub fn new(comm: &Comm, b: &BlockParam, need: &RowSet) -> Result<FetchPlan, CommError> {
        let me = comm.rank;
        let remote = need.outside(b.owned[me]);
        let wanted: Vec<Vec<Interval>> = b.owned.iter().map(|o| remote.within(*o).runs().to_vec()).collect();
        let requests: Vec<Vec<u8>> =
            wanted.iter().enumerate().map(|(k, w)| if k == me { Vec::new() } else { encode(w) }).collect();
        let asked = comm.alltoallv(&requests)?;
        let recv = wanted.into_iter().enumerate().filter(|(k, w)| *k != me && !w.is_empty()).collect();
        let send = asked
            .iter()
            .enumerate()
            .map(|(k, bytes)| (k, decode(bytes)))
            .filter(|(k, w)| *k != me && !w.is_empty())
            .collect();
        Ok(FetchPlan { level: b.level, recv, send })
    }

    /// The halo exchange of `b` on rank `me`: the plan's messages naming it, which every rank
    /// knows from the interval types (no requests needed; O(ranks) per run).
    pub fn halo(b: &BlockParam, me: usize) -> FetchPlan {
        let recv = b.received_by(me).map(|(from, _, rows)| (from, vec![rows])).collect();
        let send = b.sent_by(me).map(|(_, to, rows)| (to, vec![rows])).collect();
        FetchPlan { level: b.level, recv, send }
    }

    /// Runs the exchange in place: serves rows `held` owns and places the rows received into
    /// it; returns the bytes received.
    pub fn run(&self, comm: &Comm, held: &mut Tensor, tag: i32) -> Result<usize, CommError> {
        let sends = self.pack(&held.ty, &held.data);
        self.exchange(comm, sends, std::slice::from_mut(held), tag)
    }

    /// Runs the exchange from `from` (this rank's rows) into `into` (which holds the rows
    /// received); returns the bytes received.
    pub fn run_into(&self, comm: &Comm, from: &Tensor, into: &mut Tensor, tag: i32) -> Result<usize, CommError> {
        let sends = self.pack(&from.ty, &from.data);
        self.exchange(comm, sends, std::slice::from_mut(into), tag)
    }

    /// Runs the exchange from `from` (this rank's rows: a type and its values) into `pieces`,
    /// each holding some of the rows received ([`crate::Strips`]); returns the bytes received.
    pub fn run_into_pieces(
        &self,
        comm: &Comm,
        from: (&ValueType, &Data),
        pieces: &mut [Tensor],
        tag: i32,
    ) -> Result<usize, CommError> {
        let sends = self.pack(from.0, from.1);
        self.exchange(comm, sends, pieces, tag)
    }

    fn pack(&self, ty: &ValueType, data: &Data) -> Vec<(usize, Vec<u8>)> {
        self.send
            .iter()
            .map(|(to, runs)| (*to, runs.iter().flat_map(|r| slab::pack_as(ty, data, self.level, *r)).collect()))
            .collect()
    }

    /// Sends `sends` and places each received run into the first of `into` holding its rows.
    fn exchange(
        &self,
        comm: &Comm,
        sends: Vec<(usize, Vec<u8>)>,
        into: &mut [Tensor],
        tag: i32,
    ) -> Result<usize, CommError> {
        self.start_with(comm, sends, into, tag)?.finish(into)
    }

    /// Starts the exchange from `from` (this rank's rows: a type and its values) into pieces
    /// of the types `into` (each holding some of the rows received, as [`Self::run_into_pieces`]
    /// places them) and returns at once: the caller computes what needs no received row, then
    /// [`StartedFetch::finish`] places them.
    pub fn start<'c>(
        &self,
        comm: &'c Comm,
        from: (&ValueType, &Data),
        into: &[RawRows],
        tag: i32,
    ) -> Result<StartedFetch<'c>, CommError> {
        self.start_with(comm, self.pack(from.0, from.1), into, tag)
    }

    fn start_with<'c>(
        &self,
        comm: &'c Comm,
        sends: Vec<(usize, Vec<u8>)>,
        into: &[impl Destination],
        tag: i32,
    ) -> Result<StartedFetch<'c>, CommError> {
        let level = self.level;
        let mut recvs = Vec::with_capacity(self.recv.len());
        for (from, runs) in &self.recv {
            let mut len = 0;
            for r in runs {
                let k = piece(into, level, r).ok_or(CommError::Unplaced { rows: *r, from: *from })?;
                len += into[k].packed_len(level, *r);
            }
            recvs.push((*from, vec![0u8; len]));
        }
        let started = comm.start(sends, recvs, tag)?;
        Ok(StartedFetch { started, recv: self.recv.clone(), level })
    }
}

/// The first of `into` holding rows `r` of `level`.
fn piece(into: &[impl Destination], level: usize, r: &Interval) -> Option<usize> {
    into.iter().position(|t| t.ty().levels[level].interval.contains(*r))
}

/// A halo exchange under way ([`FetchPlan::start`]).
pub struct StartedFetch<'c> {
    started: crate::comm::Started<'c>,
    recv: Vec<(usize, Vec<Interval>)>,
    level: usize,
}

impl StartedFetch<'_> {
    /// Waits for the messages and places each received run into the first of `into` holding
    /// its rows (the pieces it was started with); returns the bytes received.
    ///
    /// # Errors
    /// An MPI failure.
    pub fn finish(self, into: &mut [impl Destination]) -> Result<usize, CommError> {
        let level = self.level;
        let bufs = self.started.wait()?;
        let mut received = 0;
        for ((_, runs), (_, buf)) in self.recv.iter().zip(&bufs) {
            let mut at = 0;
            for r in runs {
                let k = piece(into, level, r).expect("checked when started");
                let len = into[k].packed_len(level, *r);
                into[k].unpack(level, *r, &buf[at..at + len]);
                at += len;
            }
            received += buf.len();
        }
        Ok(received)
    }
}

/// Where received rows go: a tensor, or the bytes of a dense scalar one ([`RawRows`]).
pub trait Destination {
    /// Its type.
    fn ty(&self) -> &ValueType;
    /// The bytes `rows` of `level` take packed.
    fn packed_len(&self, level: usize, rows: Interval) -> usize;
    /// Places packed `rows` of `level`.
    fn unpack(&mut self, level: usize, rows: Interval, packed: &[u8]);
}

impl Destination for Tensor {
    fn ty(&self) -> &ValueType {
        &self.ty
    }
    fn packed_len(&self, level: usize, rows: Interval) -> usize {
        slab::packed_len(self, level, rows)
    }
    fn unpack(&mut self, level: usize, rows: Interval, packed: &[u8]) {
        slab::unpack(self, level, rows, packed);
    }
}

/// The values of a dense tensor of scalars, by address, with its type: where an exchange
/// overlapped with a run places rows, the tensor itself being lent to the run meanwhile (no
/// reference to its values is held, so the run's may be).
pub struct RawRows {
    ty: ValueType,
    ptr: *mut u8,
    len: usize,
}

impl RawRows {
    /// The destination for the values of `t` (dense scalars).
    ///
    /// # Safety
    /// `t`'s values must stay alive and unmoved in memory (the tensor itself may move) while
    /// the result is used, and nothing else may read or write them while
    /// [`StartedFetch::finish`] writes them.
    pub unsafe fn new(t: &mut Tensor) -> RawRows {
        let ty = t.ty.clone();
        let b = slab::bytes_mut(t);
        RawRows { ty, ptr: b.as_mut_ptr(), len: b.len() }
    }
}

impl Destination for RawRows {
    fn ty(&self) -> &ValueType {
        &self.ty
    }
    fn packed_len(&self, level: usize, rows: Interval) -> usize {
        slab::Rows::of(&self.ty, level).map_or(0, |g| g.packed_len(rows))
    }
    fn unpack(&mut self, level: usize, rows: Interval, packed: &[u8]) {
        let Some(g) = slab::Rows::of(&self.ty, level) else { return };
        // SAFETY: `RawRows::new`'s contract: the values are alive, `len` bytes, and ours.
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
        g.unpack_into(bytes, rows, packed);
    }
}
