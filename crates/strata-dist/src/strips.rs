//! Halo strips: how a rank holds an input it reads beyond its own block.
//!
//! The rank keeps its owned block where the caller has it (a resident array's rows, read in
//! place, never copied) and receives the rows it reads of its neighbors' blocks into small
//! buffers of their own — the strip *below* the block and the strip *above* it, each a
//! parameter of the local program appended after the entry's. The local program joins the
//! three with a `concat` along the block level ahead of every use; the native backend's
//! `split-pieces` pass turns the join into one loop nest per piece, each reading its piece in
//! place. A time step therefore moves only the halo rows, and holds no second copy of the
//! state (the block copied into a halo'd buffer cost a third of a stencil step's traffic and
//! one block of memory).
//!
//! An input is held this way when it is dense scalars read beyond the rows the rank owns, and
//! the stage has no neighbor shifts of distributed sources (whose rows the inspector plans at
//! run time into one held buffer).

use strata_ir::{DimName, ExprKind, Function, Interval, Op, ParamMode, Statement, Value};

use crate::Plan;

/// Rows of a halo strip and the local program's parameter holding them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Strip {
    /// The rows (of the block level) it holds.
    pub rows: Interval,
    /// Its parameter's position in the local program.
    pub param: usize,
}

/// An input held as its owned block plus strips on one rank.
#[derive(Clone, Debug, PartialEq)]
pub struct Strips {
    /// The input's parameter position (in the entry and in the local program).
    pub index: usize,
    /// The block level's position.
    pub level: usize,
    /// The block level's name.
    pub dim: DimName,
    /// The rows this rank owns (its block, the parameter's rows in the local program).
    pub owned: Interval,
    /// The rows below the block it reads, if any.
    pub below: Option<Strip>,
    /// The rows above the block it reads, if any.
    pub above: Option<Strip>,
}

impl Strips {
    /// The strips, below first.
    pub fn strips(&self) -> impl Iterator<Item = Strip> + '_ {
        self.below.iter().chain(&self.above).copied()
    }
}

impl Plan {
    /// The inputs `rank` holds as owned block plus strips, in parameter order; their strip
    /// parameters follow the entry's `params` parameters in that order (below, then above).
    pub fn strips(&self, rank: usize, params: usize) -> Vec<Strips> {
        if !self.indirect.is_empty() {
            return Vec::new();
        }
        let mut next = params;
        let mut strip = |rows: Interval| {
            next += 1;
            Strip { rows, param: next - 1 }
        };
        let mut out = Vec::new();
        for b in &self.params {
            if b.output || b.stored || !b.scalar {
                continue;
            }
            // A side read beyond the block on any rank is a strip on every rank (an empty one
            // where the rank reads nothing there: the first rank's below, the last's above,
            // both at 1 rank), so that every rank's local program has one structure and one
            // kernel.
            let [below, above] = b.reaches;
            let (owned, held) = (b.owned[rank], b.held[rank]);
            if !(below || above) || owned.is_empty() || !held.contains(owned) {
                continue;
            }
            let below = below.then(|| strip(Interval::new(held.start, owned.start)));
            let above = above.then(|| strip(Interval::new(owned.stop, held.stop)));
            out.push(Strips { index: b.index, level: b.level, dim: b.dim.clone(), owned, below, above });
        }
        out
    }
}

/// Gives the local entry `f` (whose parameters are the entry's) a parameter per strip and makes
/// every use of each input `s.index` read `concat(below, block, above)` instead, joined at the
/// start of the body. The strip parameters take the input's type handle; the caller types
/// them (and the block) at their rows.
pub(crate) fn join_strips(f: &mut Function, strips: &[Strips]) {
    let mut added = Vec::new();
    for s in strips {
        for (strip, side) in s.below.iter().map(|b| (b, "below")).chain(s.above.iter().map(|a| (a, "above"))) {
            let p = f.params[s.index];
            let e = strata_ir::Expr {
                name: format!("{}.{side}", f.exprs[p].name),
                ty: f.exprs[p].ty,
                kind: ExprKind::Param(ParamMode::In),
            };
            let span = *f.exprs.meta(p);
            debug_assert_eq!(f.params.len(), strip.param, "strip parameters in order");
            f.params.push(f.exprs.append(e, span));
        }
    }
    for s in strips {
        let p = f.params[s.index];
        let mut args = Vec::with_capacity(3);
        args.extend(s.below.map(|b| f.params[b.param]));
        args.push(p);
        args.extend(s.above.map(|b| f.params[b.param]));
        let e = strata_ir::Expr {
            name: format!("{}.halo", f.exprs[p].name),
            ty: f.exprs[p].ty,
            kind: ExprKind::Op(Op::Concat { args, dim: s.dim.clone(), mode: strata_ir::Mode::Copy }),
        };
        let span = *f.exprs.meta(p);
        let joined = f.exprs.append(e, span);
        redirect(f, p, joined);
        added.push(joined);
    }
    prepend(f, &added);
}

/// Makes every use of `from` in `f` (operands, assigned and returned values) read `to`, except
/// `to`'s own operands.
pub(crate) fn redirect(f: &mut Function, from: Value, to: Value) {
    let users: Vec<Value> = f.exprs.iter().map(|(v, _)| v).filter(|&v| v != to).collect();
    for v in users {
        if let ExprKind::Op(op) = &mut f.exprs[v].kind {
            op.operands_mut().into_iter().filter(|o| **o == from).for_each(|o| *o = to);
        }
    }
    let statements: Vec<_> = f.body.handles().collect();
    for h in statements {
        match &mut f.body[h] {
            Statement::Assign { value, .. } if *value == from => *value = to,
            Statement::Return(vs) => vs.iter_mut().filter(|v| **v == from).for_each(|v| *v = to),
            _ => {}
        }
    }
}

/// Puts `let`s of `values` (in order) at the start of `f`'s body (with its first statement's
/// location).
pub(crate) fn prepend(f: &mut Function, values: &[Value]) {
    let Some(first) = f.body.handles().next() else { return };
    let meta = f.body.meta(first).clone();
    let mut body = strata_entity::Arena::new();
    for &v in values {
        body.append(Statement::Let(v), meta.clone());
    }
    for (s, stmt) in f.body.iter() {
        body.append(stmt.clone(), f.body.meta(s).clone());
    }
    f.body = body;
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_runtime::ValueType;

    const LAPLACIAN: &str = include_str!("../../../examples/distributed/laplacian.strata");

    fn plan(
        source: &str,
        ranks: usize,
    ) -> (strata_ir::Module, strata_ir::TypeArena, strata_entity::Handle<Function>, Plan) {
        let m = strata_verify::parse(source).expect("parses");
        let info = strata_verify::verify(&m).expect("verifies");
        let entry = m.functions.handles().last().expect("an entry");
        let plan = Plan::new(&m, &info.types, entry, ranks).expect("plans");
        (m, info.types, entry, plan)
    }

    #[test]
    fn a_halo_is_received_into_strips_beside_the_block() {
        let (_, _, _, plan) = plan(LAPLACIAN, 3);
        // `@laplacian(%out, %inp)`: `%inp` is read one row beyond each block.
        let at = |rank| plan.strips(rank, 2);
        let s = &at(1)[0];
        assert_eq!((s.index, s.owned), (1, Interval::new(21, 43)));
        assert_eq!(s.below, Some(Strip { rows: Interval::new(20, 21), param: 2 }));
        // Some rank reads above its block (the first): every rank has a strip there, this one
        // of no rows, so that all ranks' local programs have one structure.
        assert_eq!(s.above, Some(Strip { rows: Interval::new(43, 43), param: 3 }));
        // The first rank reads one row above its block, the last two below.
        let iv = Interval::new;
        let strips = |rank: usize| at(rank)[0].strips().map(|s| (s.rows, s.param)).collect::<Vec<_>>();
        assert_eq!(strips(0), [(iv(-1, -1), 2), (iv(21, 22), 3)]);
        assert_eq!(strips(2), [(iv(41, 43), 2), (iv(65, 65), 3)]);
        // One rank holds everything it reads, in strips of no rows on the sides more ranks read
        // (its local program is theirs).
        assert_eq!(
            self::plan(LAPLACIAN, 1).3.strips(0, 2)[0].strips().map(|s| s.rows.len()).collect::<Vec<_>>(),
            [0, 0]
        );
    }

    #[test]
    fn a_ranks_halo_exchange_is_the_messages_naming_it() {
        // By hand, at 3 ranks: `%inp` (I[-1:65]) is owned as I[-1:21], I[21:43], I[43:65] and
        // held as I[-1:22], I[20:43], I[41:65].
        let (_, _, _, three) = plan(LAPLACIAN, 3);
        let inp = three.params.iter().find(|b| b.name == "inp").expect("`inp` is distributed");
        let iv = Interval::new;
        assert_eq!(inp.messages(), [(1, 0, iv(21, 22)), (0, 1, iv(20, 21)), (1, 2, iv(41, 43))]);
        // Every rank's own part, at many rank counts, agrees with the whole list (each message
        // sent is received).
        for ranks in [1, 2, 3, 5, 70] {
            let (_, _, _, plan) = plan(LAPLACIAN, ranks);
            for b in &plan.params {
                let all = b.messages();
                for me in 0..ranks {
                    let halo = crate::exchange::FetchPlan::halo(b, me);
                    let recv: Vec<_> = all.iter().filter(|m| m.1 == me).map(|m| (m.0, vec![m.2])).collect();
                    let send: Vec<_> = all.iter().filter(|m| m.0 == me).map(|m| (m.1, vec![m.2])).collect();
                    assert_eq!((halo.recv, halo.send), (recv, send), "{ranks} ranks, rank {me}");
                }
            }
        }
    }

    #[test]
    fn the_local_program_reads_block_and_strips_in_place() {
        let (m, types, entry, plan) = plan(LAPLACIAN, 3);
        let (local, local_entry) = plan.local_module(&m, &types, entry, 1).expect("a local program");
        let f = &local.functions[local_entry];
        let names: Vec<&str> = f.params.iter().map(|&p| f.exprs[p].name.as_str()).collect();
        assert_eq!(names, ["out", "inp", "inp.below", "inp.above"]);
        let ty = |k: usize| ValueType::from_ir(&local.types, f.exprs[f.params[k]].ty).levels[0].interval;
        assert_eq!((ty(1), ty(2), ty(3)), (Interval::new(21, 43), Interval::new(20, 21), Interval::new(43, 43)));
        // Native code reads each piece where it is: one loop nest per piece, no joined copy.
        let kernels = strata_codegen::lower(&local, &local.types, local_entry).expect("lowers").to_string();
        assert!(kernels.contains("piece 1 of 2"), "{kernels}");
        assert!(!kernels.contains("inp.halo"), "the join is not materialized:\n{kernels}");
    }

    #[test]
    fn every_rank_prints_one_kernel_whatever_its_block() {
        // Lowered as a rank lowers it, every rank's local program prints the same C at every
        // rank count: blocks of different sizes and places, halos on one side or two, the
        // first rank's block starting at the domain's edge. Only the extents differ.
        const LAPLAP: &str = include_str!("../../../examples/distributed/laplacian_of_laplacian.strata");
        let options =
            strata_codegen::LowerOptions { extents_per_site: true, ..strata_codegen::LowerOptions::for_this_machine() };
        for source in [LAPLACIAN, LAPLAP] {
            let mut texts = std::collections::BTreeSet::new();
            let mut extents = std::collections::BTreeSet::new();
            for ranks in [1, 2, 3, 5, 8] {
                let (m, types, entry, plan) = plan(source, ranks);
                for rank in 0..ranks {
                    let (local, e) = plan.local_module(&m, &types, entry, rank).expect("a local program");
                    let program = strata_codegen::lower_with(&local, &local.types, e, &options).expect("lowers");
                    let (c, x) = strata_codegen::emit_c::emit_with_extents(&program);
                    texts.insert(c);
                    extents.insert(x);
                }
            }
            assert_eq!(texts.len(), 1, "one text at every rank of 1, 2, 3, 5 and 8");
            assert!(extents.len() > 1, "the ranks' extents differ");
        }
    }

    #[test]
    fn the_interior_runs_while_the_strip_is_received() {
        // Rank 1 of 3 reads one row below its block (`inp.below`, parameter 2; `inp.above`,
        // parameter 3, holds no rows): the piece of `out` reading it waits for the exchange,
        // the interior piece runs first.
        let (m, types, entry, plan) = plan(LAPLACIAN, 3);
        let (local, local_entry) = plan.local_module(&m, &types, entry, 1).expect("a local program");
        let program = strata_codegen::lower(&local, &local.types, local_entry).expect("lowers");
        let layout = strata_codegen::exec::Layout::of(&program, strata_codegen::emit_c::extents(&program));
        let first = layout.early(&[2, 3]).expect("the interior runs first");
        let comments: Vec<(&str, bool)> =
            program.kernels.iter().zip(&first).map(|(k, &f)| (k.comment.as_str(), f)).collect();
        assert_eq!(comments, [("%out <- %l (piece 1 of 2)", false), ("%out <- %l (piece 2 of 2)", true)]);
    }
}
