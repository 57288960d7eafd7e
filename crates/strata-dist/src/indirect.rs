//! Neighbor shifts of block-distributed sources — the nabla's `pp(E2V[0])` with the vertices
//! spread over the ranks. The rows of the source a rank reads are the table's entries at the
//! rows it needs, known only from the data, so they are planned at run time
//! (inspector–executor):
//!
//! 1. *Inspect.* The plan's backward analysis runs again with rows as sets
//!    ([`crate::RowSet`]) and the tables' entries known ([`KnownTables`]): a shift through a
//!    table reaches the entries of the table rows needed. Table rows another rank owns are
//!    fetched first (an all-to-all round per level of indirection: the nabla's flux on edges
//!    reached from the vertices needs those edges' `E2V` rows before it knows which vertices).
//! 2. *Plan the exchange.* For every distributed input, the rows needed that other ranks own
//!    are requested from their owners with one `MPI_Alltoallv` ([`FetchPlan::new`]); each
//!    rank learns which of its rows to serve to whom.
//! 3. *Exchange.* Point-to-point messages of exactly those rows ([`FetchPlan::run`]), reused
//!    on every run of the stage.
//!
//! A rank stores each input on the hull of its rows: rows inside the hull that it neither owns
//! nor needs stay zero (a table's: `-1`, the skip value, so they reach nothing).

use std::collections::{BTreeMap, HashMap};

use strata_ir::Interval;
use strata_runtime::Tensor;

use crate::plan::{BlockParam, Tables};
use crate::rows::{RowSet, Rows};
use crate::{slab, Comm, CommError};

/// The neighbor tables' entries a rank knows: the rows it holds or has fetched.
#[derive(Default)]
pub struct KnownTables {
    tables: HashMap<usize, KnownTable>,
    missing: BTreeMap<usize, RowSet>,
}

struct KnownTable {
    /// Destination row → its entries, in neighbor order.
    rows: HashMap<i64, Vec<i64>>,
    /// The destination level's interval (a replicated table's rows are all known).
    global: Interval,
}

impl KnownTables {
    /// Learns rows `rows` of the table that is entry parameter `param` from `t`, whose
    /// destination level is at position `level` (the other level is the neighbors').
    pub fn learn(&mut self, param: usize, t: &Tensor, level: usize, rows: Interval, global: Interval) {
        let shape = t.ty.shape();
        let lo = t.ty.levels[level].interval.start;
        let neighbors = shape[1 - level];
        let stride = |row: i64, k: usize| {
            let r = (row - lo) as usize;
            if level == 0 {
                r * neighbors + k
            } else {
                k * shape[1] + r
            }
        };
        let table = self.tables.entry(param).or_insert_with(|| KnownTable { rows: HashMap::new(), global });
        for row in rows.start..rows.stop {
            let entries = (0..neighbors).map(|k| t.scalar_at(stride(row, k)).as_i128() as i64).collect();
            table.rows.insert(row, entries);
        }
    }

    /// The table rows asked for but not known, by parameter (and forgets them).
    pub fn take_missing(&mut self) -> BTreeMap<usize, RowSet> {
        std::mem::take(&mut self.missing)
    }
}

impl Tables for KnownTables {
    type R = RowSet;

    fn reached(&mut self, param: usize, dst: Option<&RowSet>, neighbor: Option<i64>) -> Option<RowSet> {
        let table = self.tables.get(&param)?;
        let all;
        let dst = match dst {
            Some(d) => d,
            None => {
                all = RowSet::of(table.global);
                &all
            }
        };
        let mut reached = Vec::new();
        let mut missing = Vec::new();
        // Rows outside the table are no rows of it (an entry pointing there is reported by
        // the run, at the shift that reads it).
        for run in dst.within(table.global).runs() {
            for row in run.start..run.stop {
                let Some(entries) = table.rows.get(&row) else {
                    missing.push(row);
                    continue;
                };
                match neighbor {
                    Some(k) => reached.extend(entries.get(k as usize).copied()),
                    None => reached.extend_from_slice(entries),
                }
            }
        }
        // -1 is the skip value: no row.
        reached.retain(|&r| r != -1);
        if !missing.is_empty() {
            self.missing.entry(param).or_default().add(&RowSet::from_rows(missing));
        }
        Some(RowSet::from_rows(reached))
    }
}

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

    /// Rows this rank receives.
    pub fn received_rows(&self) -> u64 {
        self.recv.iter().flat_map(|(_, runs)| runs).map(|r| r.len()).sum()
    }

    /// Runs the exchange from `from` (this rank's rows) into `into` (which holds the rows
    /// received); returns the bytes received.
    pub fn run_into(&self, comm: &Comm, from: &Tensor, into: &mut Tensor, tag: i32) -> Result<usize, CommError> {
        let sends = self.pack(from);
        self.exchange(comm, &sends, into, tag)
    }

    fn pack(&self, from: &Tensor) -> Vec<(usize, Vec<u8>)> {
        self.send
            .iter()
            .map(|(to, runs)| (*to, runs.iter().flat_map(|r| slab::pack(from, self.level, *r)).collect()))
            .collect()
    }

    fn exchange(
        &self,
        comm: &Comm,
        sends: &[(usize, Vec<u8>)],
        into: &mut Tensor,
        tag: i32,
    ) -> Result<usize, CommError> {
        let mut bufs: Vec<Vec<u8>> = self
            .recv
            .iter()
            .map(|(_, runs)| vec![0u8; runs.iter().map(|r| slab::packed_len(into, self.level, *r)).sum()])
            .collect();
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
                let len = slab::packed_len(into, self.level, *r);
                slab::unpack(into, self.level, *r, &buf[at..at + len]);
                at += len;
            }
            received += buf.len();
        }
        Ok(received)
    }
}
