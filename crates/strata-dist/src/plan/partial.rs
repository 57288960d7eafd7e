//! An entry whose result is a reduction or scan over a block level: each rank computes its
//! part over the rows it owns, from a start the ranks agree on.

use strata_entity::Handle;
use strata_ir::{ExprKind, Function, Interval, Module, Op, Statement, TypeArena};
use strata_runtime::dist::block_partition;

use super::{tensor, Partial, PartialStart};

/// Whether reductions over block levels are asked to give the same bits at every rank count
/// (`$STRATA_REPRODUCIBLE=1`, read once): [`PartialStart::Rows`].
pub fn reproducible() -> bool {
    static ASKED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ASKED.get_or_init(|| std::env::var("STRATA_REPRODUCIBLE").is_ok_and(|v| v == "1"))
}

/// The entry's returned reduction over block levels, with each contracted level's blocks.
pub(super) fn partial_of(module: &Module, types: &TypeArena, entry: Handle<Function>, ranks: usize) -> Option<Partial> {
    let f = &module.functions[entry];
    let value = f.body.iter().find_map(|(_, s)| match s {
        Statement::Return(vs) if vs.len() == 1 => Some(vs[0]),
        _ => None,
    })?;
    if let ExprKind::Op(op @ Op::Scan { func, args, forward, .. }) = &f.exprs[value].kind {
        let dim = crate::stages::scanned_block(f, types, op, value)?;
        let iv = tensor(types, f.exprs[value].ty)?.level(&dim)?.interval;
        let blocks = block_partition(iv, ranks as u32);
        let owned = (0..args.len())
            .filter(|&k| tensor(types, f.exprs[args[k]].ty).is_some_and(|t| t.level(&dim).is_some()))
            .map(|k| (k, dim.clone(), blocks.clone()))
            .collect();
        let mut chain: Vec<usize> = (0..ranks).filter(|&r| !blocks[r].is_empty()).collect();
        if !forward {
            chain.reverse();
        }
        let param = *f.params.last()?;
        let monoid = strata_ir::element_scalar(types, f.exprs[value].ty)
            .filter(|s| s.is_integer() || *s == strata_ir::Scalar::Bool)
            .and_then(|s| crate::stages::folding_op(module, *func, s));
        let start = PartialStart::Carry { param, chain, forward: *forward, monoid };
        return Some(Partial { value, owned, start });
    }
    let ExprKind::Op(op @ Op::MapReduce { func, args, init, subscripts: _ }) = &f.exprs[value].kind else {
        return None;
    };
    let contracted = crate::stages::contracted_blocks(f, types, op);
    if contracted.is_empty() {
        return None;
    }
    let scalar = strata_ir::element_scalar(types, f.exprs[value].ty)?;
    let (_, identity) = crate::stages::folding_op(module, *func, scalar)?;
    let letter = contracted[0].2;
    let owned = contracted
        .into_iter()
        .map(|(k, name, _)| {
            let iv = tensor(types, f.exprs[args[k]].ty).and_then(|t| t.level(&name)).map(|l| l.interval);
            (k, name, block_partition(iv.unwrap_or(Interval::new(0, 0)), ranks as u32))
        })
        .collect::<Vec<_>>();
    // The rows' tree needs one partition of one row dimension and a literal initial value.
    let start = match (init, owned.first()) {
        (strata_ir::Init::Literal(init), Some((_, name, blocks)))
            if reproducible() && owned.iter().all(|(_, n, b)| n == name && b == blocks) =>
        {
            PartialStart::Rows { identity, init: init.clone(), letter }
        }
        _ => PartialStart::Identity(identity),
    };
    Some(Partial { value, owned, start })
}

/// Makes `f` return `rank`'s part of `p`: the reduction or scan over the rows the rank owns
/// (a `subset` of each operand), from its start ([`PartialStart`]).
pub(super) fn partial_on(f: &mut Function, p: &Partial, rank: usize) {
    let ExprKind::Op(op) = f.exprs[p.value].kind.clone() else { return };
    let span = *f.exprs.meta(p.value);
    let mut args = match &op {
        Op::MapReduce { args, .. } | Op::Scan { args, .. } => args.clone(),
        _ => return,
    };
    let mut added = Vec::new();
    for (k, name, owned) in &p.owned {
        let arg = args[*k];
        let e = strata_ir::Expr {
            name: format!("{}.owned", f.exprs[arg].name),
            ty: f.exprs[arg].ty,
            kind: ExprKind::Op(Op::Subset { arg, domain: vec![(name.clone(), owned[rank])] }),
        };
        args[*k] = f.exprs.append(e, span);
        added.push(args[*k]);
    }
    let op = match (op, &p.start) {
        (Op::MapReduce { func, args: _, init, subscripts }, PartialStart::Identity(identity)) => {
            let init = if rank == 0 { init } else { strata_ir::Init::Literal(identity.clone()) };
            Op::MapReduce { func, args, init, subscripts }
        }
        // Every row folded on its own: the output keeps the rows.
        (Op::MapReduce { func, args: _, init: _, mut subscripts }, PartialStart::Rows { identity, letter, .. }) => {
            subscripts.output.insert(0, *letter);
            Op::MapReduce { func, args, init: strata_ir::Init::Literal(identity.clone()), subscripts }
        }
        (Op::Scan { func, args: _, dim, forward, init }, PartialStart::Carry { param, chain, .. }) => {
            let init = if chain.first() == Some(&rank) { init } else { strata_ir::Init::Value(*param) };
            Op::Scan { func, args, dim, forward, init }
        }
        _ => return,
    };
    let e = strata_ir::Expr {
        name: format!("{}.partial", f.exprs[p.value].name),
        ty: f.exprs[p.value].ty,
        kind: ExprKind::Op(op),
    };
    let partial = f.exprs.append(e, span);
    added.push(partial);
    let mut body = strata_entity::Arena::new();
    for (s, stmt) in f.body.iter() {
        let meta = f.body.meta(s).clone();
        if let Statement::Let(v) = stmt {
            if *v == p.value {
                continue;
            }
        }
        if let Statement::Return(_) = stmt {
            for &v in &added {
                body.append(Statement::Let(v), meta.clone());
            }
            body.append(Statement::Return(vec![partial]), meta);
        } else {
            body.append(stmt.clone(), meta);
        }
    }
    f.body = body;
}
