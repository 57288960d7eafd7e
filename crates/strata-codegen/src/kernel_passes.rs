//! Passes over a lowered entry's kernel list, run by [`crate::lower::lower`] after lowering
//! (each preserves every buffer's final content): write a result where a later kernel only
//! copies it ([`forward_results`]), run dependent scans over one domain per strip of
//! columns ([`fuse_scans`]), share loops between consecutive independent kernels
//! ([`fuse_adjacent`]), and find buffers written whole before any read
//! ([`overwritten_first`]).

use std::rc::Rc;

use strata_ir::{DimName, Interval, Level};

use crate::kernel::{Buffer, Kernel, KernelKind, ScanStage};
use crate::sym::{Coord, Load, SExpr};

/// Lets a kernel write a temporary straight into the buffer a later kernel only copies it to
/// (`%x <- %sol` after `%sol = scan(…)`; a matrix–vector product kept because a norm reads it
/// too, and also returned), instead of into the temporary: one pass over memory and one
/// kernel less. Requires the temporary's one writer to be a scan or a plain kernel writing
/// all of it first, the copy to cover the whole target with identical levels, nothing from
/// the writer to the copy to touch the target and nothing after the copy to write it; later
/// reads of the temporary read the target instead.
pub fn forward_results(mut kernels: Vec<Kernel>, buffers: &[Buffer]) -> Vec<Kernel> {
    let mut i2 = 0;
    while i2 < kernels.len() {
        let k2 = &kernels[i2];
        let plain = k2.as_nest().is_some();
        let copy = k2.stores.iter().enumerate().find_map(|(si, st)| {
            let SExpr::Load(l) = &*st.value else { return None };
            let (tb, ob) = (l.buffer, st.buffer);
            let identity = buffers[tb]
                .levels
                .iter()
                .zip(&l.coords)
                .all(|(lv, c)| matches!(c, Coord::Var { dim, offset: 0 } if *dim == lv.name));
            let same = buffers[tb].levels == buffers[ob].levels && buffers[tb].scalar == buffers[ob].scalar;
            (plain && buffers[tb].temp && identity && same && k2.domain == buffers[ob].levels).then_some((si, tb, ob))
        });
        let Some((si, tb, ob)) = copy else {
            i2 += 1;
            continue;
        };
        let writers: Vec<usize> = (0..i2).filter(|&i| kernels[i].stores.iter().any(|s| s.buffer == tb)).collect();
        let ok = match writers.as_slice() {
            [i1] => {
                let writer = &kernels[*i1];
                let whole = writer.scan().is_some()
                    || (writer.as_nest().is_some()
                        && writer.scatter().is_none()
                        && overwritten_first(&kernels, tb, &buffers[tb].levels));
                whole
                    && (*i1..i2).all(|i| !kernels[i].reads(ob) && !kernels[i].writes(ob))
                    && kernels[i2 + 1..].iter().all(|k| !k.writes(ob))
            }
            _ => false,
        };
        if !ok {
            i2 += 1;
            continue;
        }
        let i1 = writers[0];
        for st in &mut kernels[i1].stores {
            if st.buffer == tb {
                st.buffer = ob;
            }
        }
        let to_target = |l: &Load| {
            (l.buffer == tb).then(|| Rc::new(SExpr::Load(Rc::new(Load { buffer: ob, coords: l.coords.clone() }))))
        };
        for k in &mut kernels[i1 + 1..] {
            for st in &mut k.stores {
                st.value = crate::sym::replace_loads(&st.value, &to_target);
            }
            if let KernelKind::Scan(s) = &mut k.kind {
                s.scan.updates = s.scan.updates.iter().map(|u| crate::sym::replace_loads(u, &to_target)).collect();
            }
        }
        kernels[i2].stores.remove(si);
        if kernels[i2].stores.is_empty() {
            kernels.remove(i2);
        }
    }
    kernels
}

/// The largest strip-local scratch (bytes) [`fuse_scans`] creates per kernel.
const LOCAL_SCRATCH: usize = 1 << 20;

/// Fuses a scan with the next one over the same domain and dimension when the second reads
/// the first's results only at the point it updates and nothing else reads them (the forward
/// and backward sweeps of a tridiagonal solve): both run per strip of columns, and the first's
/// results live in a strip-local scratch array (`ScanKernel::local`) that stays in cache instead
/// of going to memory and back. Results are unchanged (each column runs both sweeps in order).
pub fn fuse_scans(kernels: Vec<Kernel>, buffers: &[Buffer]) -> Vec<Kernel> {
    // The last kernel reading each buffer: a result kept local must not be read after.
    let last_reader: Vec<Option<usize>> =
        (0..buffers.len()).map(|b| kernels.iter().rposition(|k| k.reads(b))).collect();
    let mut out: Vec<Kernel> = Vec::new();
    for (i, k) in kernels.into_iter().enumerate() {
        if let Some(prev) = out.last_mut() {
            if let Some(local) = scans_fuse(prev, &k, buffers, &last_reader, i) {
                prev.comment = format!("{}; then {}", prev.comment, k.comment);
                let (KernelKind::Scan(p), KernelKind::Scan(next)) = (&mut prev.kind, k.kind) else {
                    unreachable!("scans_fuse fuses scans")
                };
                p.chain.push(ScanStage { scan: next.scan, stores: k.stores });
                p.local.extend(local);
                continue;
            }
        }
        out.push(k);
    }
    out
}

/// The buffers to keep local if `next` (kernel `i`) can run as a further stage of scan kernel
/// `prev` (see [`fuse_scans`]); `last_reader[b]` is the last kernel that reads buffer `b`.
fn scans_fuse(
    prev: &Kernel,
    next: &Kernel,
    buffers: &[Buffer],
    last_reader: &[Option<usize>],
    i: usize,
) -> Option<Vec<usize>> {
    let (Some(a), Some(b)) = (prev.scan(), next.scan()) else { return None };
    let first = prev.chain().last().map_or(a, |st| &st.scan);
    if a.last_only || b.last_only || prev.domain != next.domain || first.dim != b.dim {
        return None;
    }
    // The previous stage's results: what `next` may read, at the point it updates only.
    let last: Vec<usize> = prev.chain().last().map_or(&prev.stores, |st| &st.stores).iter().map(|s| s.buffer).collect();
    if next.stores.iter().any(|s| prev.writes(s.buffer)) {
        return None;
    }
    let identity = |l: &Load| {
        buffers[l.buffer]
            .levels
            .iter()
            .zip(&l.coords)
            .all(|(lv, c)| matches!(c, Coord::Var { dim, offset: 0 } if *dim == lv.name))
    };
    let (mut uses, mut at_point) = (false, true);
    for e in b.updates.iter().chain(next.stores.iter().map(|s| &s.value)) {
        crate::sym::for_each_load(e, &mut |l| {
            if last.contains(&l.buffer) {
                uses = true;
                at_point &= identity(l);
            }
        });
    }
    if !uses || !at_point {
        return None;
    }
    let mut full: Vec<&DimName> = prev.domain.iter().map(|l| &l.name).chain([&b.dim.name]).collect();
    full.sort();
    let mut bytes = 0;
    for &t in &last {
        let buf = &buffers[t];
        let mut names: Vec<&DimName> = buf.levels.iter().map(|l| &l.name).collect();
        names.sort();
        let read_later = last_reader[t].is_some_and(|r| r > i);
        if !buf.temp || names != full || read_later {
            return None;
        }
        bytes += b.dim.interval.len() as usize * crate::emit_c::STRIP as usize * buf.scalar.size_bytes();
    }
    (bytes <= LOCAL_SCRATCH).then_some(last)
}

/// Merges consecutive plain kernels over the same domain when neither reads what the other
/// writes (e.g. the two extracted fluxes of the FVM nabla): one loop, shared loads.
pub fn fuse_adjacent(kernels: Vec<Kernel>) -> Vec<Kernel> {
    let mut out: Vec<Kernel> = Vec::new();
    for k in kernels {
        if let Some(prev) = out.last_mut() {
            let writes = |k: &Kernel| k.stores.iter().map(|s| s.buffer).collect::<Vec<_>>();
            let reads_any = |k: &Kernel, bs: &[usize]| bs.iter().any(|&b| k.reads(b));
            let plain = |k: &Kernel| k.as_nest().is_some_and(|n| n.compressed.is_none() && n.windows.is_empty());
            if plain(prev)
                && plain(&k)
                && prev.domain == k.domain
                && !reads_any(&k, &writes(prev))
                && !reads_any(prev, &writes(&k))
                && !writes(prev).iter().any(|&b| k.writes(b))
            {
                prev.comment = format!("{}; {}", prev.comment, k.comment);
                prev.stores.extend(k.stores);
                continue;
            }
        }
        out.push(k);
    }
    out
}

/// Whether the first kernel that touches buffer `b` writes all of it (its domain is exactly the
/// buffer's levels, or it compacts into it) without reading it.
pub fn overwritten_first(kernels: &[Kernel], b: usize, levels: &[Level]) -> bool {
    // Consecutive plain kernels writing disjoint boxes of the buffer over its levels (a kernel
    // split into pieces) that together cover it.
    let mut boxes: Vec<Vec<Interval>> = Vec::new();
    let volume = |b: &[Interval]| b.iter().map(|iv| iv.len() as u128).product::<u128>();
    let whole: u128 = levels.iter().map(|l| l.interval.len() as u128).product();
    for k in kernels {
        let plain = matches!(k.kind, KernelKind::Nest(_)) && k.writes(b) && !k.reads(b) && k.sets.is_empty();
        let same_levels = k.domain.len() == levels.len() && k.domain.iter().zip(levels).all(|(d, l)| d.name == l.name);
        if !plain || !same_levels {
            break;
        }
        let mine: Vec<Interval> = k.domain.iter().map(|l| l.interval).collect();
        let disjoint = boxes.iter().all(|o| o.iter().zip(&mine).any(|(a, b)| a.intersect(*b).is_empty()));
        let inside = mine.iter().zip(levels).all(|(iv, l)| l.interval.contains(*iv));
        if !disjoint || !inside {
            break;
        }
        boxes.push(mine);
        if boxes.len() > 1 && boxes.iter().map(|b| volume(b)).sum::<u128>() == whole {
            return true;
        }
    }
    for k in kernels {
        if k.reads(b) {
            return false;
        }
        if k.writes(b) {
            // A compaction writes every run whole (its ends absent); an addition at coordinates
            // needs zeros first.
            match k.scatter() {
                Some(crate::kernel::Scatter::Compact { .. }) => return true,
                Some(crate::kernel::Scatter::AddAt { .. }) => return false,
                None => {}
            }
            let steps = k.scan().filter(|sc| !sc.last_only).map(|sc| &sc.dim);
            let mut domain: Vec<&Level> = k.domain.iter().chain(steps).collect();
            domain.sort_by(|x, y| x.name.as_str().cmp(y.name.as_str()));
            let mut own: Vec<&Level> = levels.iter().collect();
            own.sort_by(|x, y| x.name.as_str().cmp(y.name.as_str()));
            return domain == own;
        }
    }
    false
}
