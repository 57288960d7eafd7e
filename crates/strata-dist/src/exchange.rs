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
        self.exchange(comm, &sends, std::slice::from_mut(held), tag)
    }

    /// Runs the exchange from `from` (this rank's rows) into `into` (which holds the rows
    /// received); returns the bytes received.
    pub fn run_into(&self, comm: &Comm, from: &Tensor, into: &mut Tensor, tag: i32) -> Result<usize, CommError> {
        let sends = self.pack(&from.ty, &from.data);
        self.exchange(comm, &sends, std::slice::from_mut(into), tag)
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
        self.exchange(comm, &sends, pieces, tag)
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
        sends: &[(usize, Vec<u8>)],
        into: &mut [Tensor],
        tag: i32,
    ) -> Result<usize, CommError> {
        let level = self.level;
        let piece = |into: &[Tensor], r: &Interval| into.iter().position(|t| t.ty.levels[level].interval.contains(*r));
        let mut bufs = Vec::with_capacity(self.recv.len());
        for (from, runs) in &self.recv {
            let mut len = 0;
            for r in runs {
                let k = piece(into, r).ok_or(CommError::Unplaced { rows: *r, from: *from })?;
                len += slab::packed_len(&into[k], self.level, *r);
            }
            bufs.push(vec![0u8; len]);
        }
        {
            let send_refs: Vec<(usize, &[u8])> = sends.iter().map(|(r, v)| (*r, v.as_slice())).collect();
            let mut recv_refs: Vec<(usize, &mut [u8])> =
                self.recv.iter().zip(bufs.iter_mut()).map(|((from, _), v)| (*from, v.as_mut_slice())).collect();
            comm.exchange(&send_refs, &mut recv_refs, tag)?;
        }
        let mut received = 0;
        for ((_, runs), buf) in self.recv.iter().zip(&bufs) {
            let mut at = 0;
            for r in runs {
                let k = piece(into, r).expect("checked above");
                let len = slab::packed_len(&into[k], self.level, *r);
                slab::unpack(&mut into[k], self.level, *r, &buf[at..at + len]);
                at += len;
            }
            received += buf.len();
        }
        Ok(received)
    }
}
