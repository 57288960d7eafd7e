//! A stage whose neighbor shifts read a block-distributed source ([`crate::indirect`]):
//! the inspector's rounds (fetching the table rows the needed rows reach), the plan rebuilt
//! with each input held on the hull of its needed rows, and the fetch of exactly those rows.

use std::collections::BTreeSet;

use crate::exchange::FetchPlan;
use crate::indirect::KnownTables;
use crate::plan::Indirection;
use crate::{rows, slab, Comm, Plan, RowSet, Rows};
use strata_entity::Handle;
use strata_ir::{Function, Module, TypeArena};
use strata_runtime::{Argument, Data, Tensor, Value, ValueType};

use super::arg::placeholder;
use super::{agree, spare, timed_exchange, Arg, Clock, Failed, RankError};

/// The level of a table's destination dimension (the one not tagged `NB_<Src>`).
fn destination_level(ty: &ValueType) -> usize {
    ty.levels.iter().position(|l| l.name.table_source().is_none()).unwrap_or(0)
}

/// What the inspector found for one stage on this rank, kept for the next runs while the
/// tables are the same: the plan with each input held on the hull of its needed rows, the
/// needed rows, the local program at those rows and the fetch of each input.
#[derive(Debug)]
pub(crate) struct Inspected {
    /// A digest of the tables' rows this rank read (with their types).
    digest: u64,
    plan: Plan,
    needs: Vec<RowSet>,
    local: (Module, Handle<Function>),
    fetches: Vec<(usize, FetchPlan)>,
    /// What the caller keeps with the local program.
    memo: super::Memo,
}

/// What the inspector last found for a stage, per process (a time loop's later steps reuse it: the
/// inspector's rounds, its all-to-alls and the local program are made once while the tables
/// do not change).
#[derive(Debug, Default)]
pub struct InspectorCache(std::sync::Mutex<Option<std::sync::Arc<Inspected>>>);

impl Clone for InspectorCache {
    /// A clone starts empty (a cache belongs to the stage it was filled for).
    fn clone(&self) -> Self {
        InspectorCache::default()
    }
}

impl Inspected {
    /// The local program at the rows this rank needs.
    pub(super) fn local(&self) -> super::Local<'_> {
        super::Local { module: &self.local.0, entry: self.local.1, memo: &self.memo }
    }
}

/// A digest of the rows of the tables (`tables`: parameter positions) this rank read: XXH3 over
/// their types, and their stamps ([`Arg::stamped`]: a resident array's) or else their bytes and
/// presence masks.
fn tables_digest(read: &[Arg<'_>], tables: &BTreeSet<usize>) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3Default::new();
    for &p in tables {
        h.update(&p.to_le_bytes());
        let Some((ty, data)) = read[p].rows() else { continue };
        h.update(format!("{ty:?}").as_bytes());
        // Values that never change while they exist, named by their stamp: a new table is a
        // new stamp (equal values under another stamp only re-run the inspector).
        if let Some(stamp) = read[p].stamp() {
            h.update(b"stamp");
            h.update(&stamp.to_le_bytes());
            continue;
        }
        if let Data::Scalars(c) = data {
            h.update(slab::column_bytes(c));
        }
        if let Arg::Value(Value::Tensor(Tensor { present: Some(present), .. })) = &read[p] {
            // SAFETY: a `bool` is one byte holding 0 or 1, a valid `u8`.
            h.update(unsafe { std::slice::from_raw_parts(present.as_ptr().cast::<u8>(), present.len()) });
        }
    }
    h.digest()
}

/// Runs the inspector on this rank (or reuses what it found, when no rank's tables changed
/// since the stage's last run) and fetches every input's needed rows: returns what it found
/// (the local program at the rows needed: [`Inspected::local`]) and the program's arguments.
/// `read` holds this rank's owned rows of every input (in the static plan's local types; a
/// resident block lent, not copied).
#[allow(clippy::too_many_arguments)]
pub(super) fn prepare<'a>(
    comm: &Comm,
    cache: &InspectorCache,
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    plan: &Plan,
    read: Vec<Arg<'a>>,
    repeat: usize,
    clock: &mut Clock,
) -> Result<(std::sync::Arc<Inspected>, Vec<Arg<'a>>), Failed> {
    let rank = comm.rank;
    let t = comm.wtime();
    let tables: BTreeSet<usize> = plan.indirect.iter().map(|s| s.table_param).collect();
    // Neighbor tables (not gather indices): `-1` skips.
    let skips: BTreeSet<usize> =
        plan.indirect.iter().filter(|s| s.kind == Indirection::Neighbor).map(|s| s.table_param).collect();
    let digest = tables_digest(&read, &tables);
    let kept = cache.0.lock().unwrap_or_else(|e| e.into_inner()).clone().filter(|i| i.digest == digest);
    // Every rank must take the same way (the inspector's rounds are collective).
    let changed = agree(comm, comm.max_i64(i64::from(kept.is_none())).map_err(RankError::from))?;
    let found = match kept {
        Some(kept) if changed == 0 => kept,
        _ => {
            let found = std::sync::Arc::new(inspect(comm, module, types, entry, plan, &read, &tables, &skips, digest)?);
            *cache.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(found.clone());
            found
        }
    };
    let Inspected { plan, needs, local: (local, local_entry), fetches, .. } = &*found;
    let lf = &local.functions[*local_entry];
    // The arguments: a held block for each distributed input (made below; what was read stays
    // in `read`, serving other ranks' fetches), every other value moved over.
    let mut read = read;
    let held_inputs: BTreeSet<usize> =
        plan.params.iter().filter(|b| !b.output && read[b.index].rows().is_some()).map(|b| b.index).collect();
    let mut args: Vec<Arg<'a>> = Vec::with_capacity(read.len());
    for (p, v) in read.iter_mut().enumerate() {
        args.push(match held_inputs.contains(&p) {
            true => Arg::Value(placeholder()),
            false => v.take(),
        });
    }
    for (k, b) in plan.params.iter().enumerate() {
        let Some((ty, data)) = read[b.index].rows().filter(|_| held_inputs.contains(&b.index)) else { continue };
        let held_ty = ValueType::from_ir(&local.types, lf.exprs[lf.params[b.index]].ty);
        let owned = b.owned[rank];
        // Held on exactly its owned rows (nothing fetched, every row needed: one rank, or a
        // block whose neighbors' rows it does not read), a lent input is read where the caller
        // keeps it, as a block without halo is: no copy per run.
        let every_row = !skips.contains(&b.index) || needs[k].within(owned).runs() == [owned];
        let rows = |t: &ValueType| t.levels[b.level].interval;
        if every_row && rows(&held_ty) == owned && rows(ty) == owned && super::same_layout(ty, &held_ty) {
            if let Arg::Lent { data: lent, .. } = &read[b.index] {
                if let Some(arg) = Arg::lend(&held_ty, lent) {
                    args[b.index] = arg;
                    continue;
                }
            }
        }
        // A buffer an earlier run held, else fresh zeros: every row the program reads is
        // written below (the owned ones copied, the others fetched; a table's unneeded rows
        // set to the skip value).
        let mut held = spare::take(&held_ty).unwrap_or_else(|| Tensor::zeros(&held_ty));
        let mut copied = vec![owned];
        if skips.contains(&b.index) {
            // Table rows not needed reach nothing (their entries may point at rows this rank
            // does not hold): the skip value -1, in any width. (Gather indices keep every
            // row the rank owns: the rows it computes.)
            slab::bytes_mut(&mut held).fill(0xff);
            copied = needs[k].within(owned).runs().to_vec();
        }
        for rows in copied {
            slab::copy_rows_as(ty, data, &mut held, b.level, rows);
        }
        args[b.index] = Arg::Value(Value::Tensor(held));
    }
    clock.read_s += comm.wtime() - t;
    // The exchange of exactly the rows needed, planned once, run like the halo exchange
    // (repeated for timing). Rows are served from what was read: a table's held copy keeps
    // only the rows this rank needs.
    for (k, fetch) in fetches {
        let b = &plan.params[*k];
        let (Arg::Value(Value::Tensor(held)), Some(mine)) = (&mut args[b.index], read[b.index].rows()) else {
            continue;
        };
        let tag = super::halo_tag(b.index);
        let pieces = std::slice::from_mut(held);
        timed_exchange(comm, repeat, clock, || fetch.run_into_pieces(comm, mine, pieces, tag))?;
    }
    Ok((found.clone(), args))
}

/// The inspector's rounds on this rank: the rows every input needs, with the tables' entries
/// fetched from their owners until no rank misses any; then the plan at those rows, the local
/// program and each input's fetch.
#[allow(clippy::too_many_arguments)]
fn inspect(
    comm: &Comm,
    module: &Module,
    types: &TypeArena,
    entry: Handle<Function>,
    plan: &Plan,
    read: &[Arg<'_>],
    tables: &BTreeSet<usize>,
    skips: &BTreeSet<usize>,
    digest: u64,
) -> Result<Inspected, Failed> {
    let rank = comm.rank;
    let f = &module.functions[entry];
    let global = |p: usize| ValueType::from_ir(types, f.exprs[f.params[p]].ty);
    let block = |plan: &Plan, p: usize| plan.params.iter().position(|b| b.index == p);
    // The tables' rows this rank holds (a replicated table: all of them).
    let mut known = KnownTables::default();
    for &p in tables {
        let Some(t) = read[p].tensor() else { continue };
        let level = destination_level(&t.ty);
        let whole = global(p).levels[level].interval;
        let rows = block(plan, p).map_or(whole, |k| plan.params[k].owned[rank]);
        known.learn(p, t, level, rows, whole, skips.contains(&p));
    }
    // Rounds: the needs with the entries known so far; table rows that are missing fetched
    // from their owners, until no rank misses any.
    let mut plan = plan.clone();
    let needs: Vec<RowSet> = loop {
        let needs =
            agree(comm, plan.needs_at_run_time(module, types, entry, rank, &mut known).map_err(RankError::from))?;
        let missing = known.take_missing();
        let more = agree(comm, comm.max_i64(i64::from(!missing.is_empty())).map_err(RankError::from))?;
        if more == 0 {
            break needs;
        }
        for &p in tables {
            let (Some(k), Some(have)) = (block(&plan, p), read[p].tensor()) else { continue };
            let b = &plan.params[k];
            let want = missing.get(&p).cloned().unwrap_or_default();
            let fetch = agree(comm, FetchPlan::new(comm, b, &want).map_err(RankError::from))?;
            let mut got = slab::with_rows(&have.ty, b.level, want.hull());
            agree(comm, fetch.run_into(comm, have, &mut got, 1000 + p as i32).map_err(RankError::from))?;
            let whole = b.global;
            for (_, runs) in &fetch.recv {
                for r in runs {
                    known.learn(p, &got, b.level, *r, whole, skips.contains(&p));
                }
            }
        }
    };
    // Each input held on the hull of what the rank owns and needs, and read on the rows it
    // needs too (a positional level's reads are cut to them: `Plan::read_only_needed_rows`).
    for (b, need) in plan.params.iter_mut().zip(&needs) {
        if !b.output {
            b.held[rank] = rows::hull(b.owned[rank], need.hull());
            b.read[rank] = rows::hull(b.read[rank], need.hull());
        }
    }
    let local = agree(comm, plan.local_module(module, types, entry, rank).map_err(RankError::from))?;
    let mut fetches = Vec::new();
    for (k, b) in plan.params.iter().enumerate() {
        if !b.output && read[b.index].rows().is_some() {
            fetches.push((k, agree(comm, FetchPlan::new(comm, b, &needs[k]).map_err(RankError::from))?));
        }
    }
    Ok(Inspected { digest, plan, needs, local, fetches, memo: Default::default() })
}
