//! Seed 004's ops beyond rectangular arrays: `gather`, `scatter`, `collapse_shape`,
//! `expand_shape` and `convert`.

use strata_entity::Handle;
use strata_ir::{DimName, Interval, Level, LevelFormat, Mode, Placement, Scalar, Type, Value};

use crate::broadcast::common_placement;
use crate::context::{renumber, Cx, RuleResult, View};

type Res<T> = Result<T, Box<strata_ir::Diagnostic>>;

fn clash(cx: &Cx, name: DimName) -> Box<strata_ir::Diagnostic> {
    cx.error(
        "strata::verify::duplicate_dimension",
        format!("the result would have two dimensions named `{name}`"),
        "name clash",
    )
}

/// The result type of `gather(source, indices, coordinates, mode)`.
fn gather_type(cx: &mut Cx, source: Value, indices: Value, coordinates: &[u32], mode: Mode) -> Res<Handle<Type>> {
    // Block levels too: a gather from (or with indices) distributed by rows.
    let (s, i) = (cx.require_dense_like(source, "gather")?, cx.require_dense_like(indices, "gather")?);
    let placement = common_placement(cx, &[source, indices], &[s.clone(), i.clone()])?;
    if !cx.scalar_of(i.element).is_some_and(Scalar::is_integer) {
        let d = cx.error("strata::verify::expected_index", "gather indices must be integers", "not an index tensor");
        return Err(cx.with_operand(d, indices));
    }
    let Some(last) = i.levels.last() else {
        let d = cx.error(
            "strata::verify::gather_coordinate_mismatch",
            "gather indices need a trailing coordinate dimension",
            "0-d indices",
        );
        return Err(cx.with_operand(d, indices));
    };
    if last.interval.len() != coordinates.len() as u64 {
        let d = cx.error(
            "strata::verify::gather_coordinate_mismatch",
            format!(
                "the indices' last dimension holds {} coordinates, but `coordinates` lists {}",
                last.interval.len(),
                coordinates.len()
            ),
            "coordinate count differs",
        );
        return Err(cx.with_operand(d, indices));
    }
    let mut sorted = coordinates.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != coordinates.len() || sorted.last().is_some_and(|&c| c as usize >= s.rank()) {
        let d = cx.error(
            "strata::verify::invalid_dimension_index",
            format!("`coordinates` must list distinct dimensions of the source (rank {})", s.rank()),
            "bad coordinate list",
        );
        return Err(cx.with_operand(d, source));
    }
    let batch: Vec<Level> = i.levels[..i.rank() - 1].to_vec();
    let slice: Vec<Level> = s
        .levels
        .iter()
        .enumerate()
        .filter(|(k, _)| !coordinates.contains(&(*k as u32)))
        .map(|(_, l)| l.clone())
        .collect();
    Ok(match mode {
        Mode::Copy => {
            let levels = renumber([batch, slice].concat()).map_err(|n| clash(cx, n))?;
            cx.tensor(s.element, levels, placement)
        }
        Mode::View => {
            let inner = renumber(slice).map_err(|n| clash(cx, n))?;
            let outer = renumber(batch).map_err(|n| clash(cx, n))?;
            let el = cx.tensor(s.element, inner, Placement::HOST);
            cx.tensor(el, outer, placement)
        }
    })
}

pub(crate) fn gather(cx: &mut Cx, source: Value, indices: Value, coordinates: &[u32], mode: Mode) -> RuleResult {
    gather_type(cx, source, indices, coordinates, mode)
}

pub(crate) fn scatter(
    cx: &mut Cx,
    source: Value,
    dest: Value,
    indices: Value,
    coordinates: &[u32],
    mode: Mode,
) -> RuleResult {
    let expected = gather_type(cx, dest, indices, coordinates, mode)?;
    if cx.ty(source) != expected {
        let d = cx.error(
            "strata::verify::scatter_shape_mismatch",
            format!("the scattered values must have type `{}` (what `gather` would read there)", cx.show(expected)),
            "source type differs",
        );
        return Err(cx.with_operand(d, source));
    }
    Ok(cx.ty(dest))
}

fn check_groups(cx: &Cx, groups: &[Vec<u32>], rank: usize, what: &str) -> Res<()> {
    let flat: Vec<u32> = groups.iter().flatten().copied().collect();
    if flat != (0..rank as u32).collect::<Vec<_>>() || groups.iter().any(Vec::is_empty) {
        return Err(Box::new(
            cx.error(
                "strata::verify::invalid_reassociation",
                format!("`groups` must split the {rank} {what} dimensions into consecutive, non-empty runs in order"),
                "bad grouping",
            )
            .with_help("e.g. `[[0, 1], [2]]` merges the first two of three dimensions"),
        ));
    }
    Ok(())
}

pub(crate) fn collapse_shape(cx: &mut Cx, arg: Value, groups: &[Vec<u32>]) -> RuleResult {
    let v = cx.require_dense(arg, "collapse_shape")?;
    check_groups(cx, groups, v.rank(), "operand")?;
    let mut levels = Vec::new();
    for g in groups {
        if g.len() == 1 {
            levels.push(v.levels[g[0] as usize].clone());
        } else {
            let n = cx.product(g.iter().map(|&i| v.levels[i as usize].interval.len()), "the collapsed extent")?;
            levels.push(Level::dense(DimName::positional(0), Interval::from_len(n)));
        }
    }
    let levels = renumber(levels).map_err(|n| clash(cx, n))?;
    Ok(cx.tensor(v.element, levels, v.placement))
}

pub(crate) fn expand_shape(cx: &mut Cx, arg: Value, groups: &[Vec<u32>], shape: &[u64]) -> RuleResult {
    let v = cx.require_dense(arg, "expand_shape")?;
    if groups.len() != v.rank() {
        let d = cx.error(
            "strata::verify::invalid_reassociation",
            format!("`groups` has {} entries for an operand of rank {}", groups.len(), v.rank()),
            "one group per operand dimension",
        );
        return Err(cx.with_operand(d, arg));
    }
    check_groups(cx, groups, shape.len(), "result")?;
    let mut levels = Vec::new();
    for (g, l) in groups.iter().zip(&v.levels) {
        let n = cx.product(g.iter().map(|&i| shape[i as usize]), "the expanded extent")?;
        if n != l.interval.len() {
            let d = cx.error(
                "strata::verify::expand_size_mismatch",
                format!("dimension `{}` has extent {} but its group multiplies to {n}", l.name, l.interval.len()),
                "sizes differ",
            );
            return Err(cx.with_operand(d, arg));
        }
        if g.len() == 1 {
            levels.push(l.clone());
        } else {
            levels
                .extend(g.iter().map(|&i| Level::dense(DimName::positional(0), Interval::from_len(shape[i as usize]))));
        }
    }
    let levels = renumber(levels).map_err(|n| clash(cx, n))?;
    Ok(cx.tensor(v.element, levels, v.placement))
}

pub(crate) fn convert(cx: &mut Cx, arg: Value, mode: Mode, declared: Handle<Type>) -> RuleResult {
    let v = cx.view(arg);
    let mut to = cx.view_of_type(declared);
    let mut declared = declared;
    if cx.specializing() && to.is_tensor {
        // Specialized at other intervals (a rank's local program): the declared storage at the
        // operand's intervals and placement, `block` levels local (dense) where the operand's are.
        let mut levels = to.levels.clone();
        for l in &mut levels {
            if let Some(a) = v.levels.iter().find(|a| a.name == l.name) {
                l.interval = a.interval;
                if l.format == LevelFormat::Block && a.format != LevelFormat::Block {
                    l.format = LevelFormat::Dense;
                }
            }
        }
        declared = cx.tensor(to.element, levels, v.placement.clone());
        to = cx.view_of_type(declared);
    }
    if let Some(t) = nested_flat(cx, &v, &to) {
        return t.map(|()| declared).map_err(|d| cx.with_operand(d, arg));
    }
    let key = |w: &View| {
        let mut k: Vec<(DimName, Interval)> = w.levels.iter().map(|l| (l.name.clone(), l.interval)).collect();
        k.sort_by(|a, b| a.0.cmp(&b.0));
        k
    };
    if !to.is_tensor || v.element != to.element || v.placement != to.placement || key(&v) != key(&to) {
        let d = cx.error(
            "strata::verify::convert_mismatch",
            format!("`convert` changes storage only; `{}` cannot become `{}`", cx.show(cx.ty(arg)), cx.show(declared)),
            "element, dimensions, intervals and placement must stay",
        );
        return Err(cx.with_operand(d, arg));
    }
    let same_layout = v.levels.len() == to.levels.len()
        && v.levels.iter().zip(&to.levels).all(|(a, b)| a.name == b.name && a.format.keyword() == b.format.keyword());
    if mode == Mode::View && !same_layout {
        let d = cx.error(
            "strata::verify::view_not_possible",
            format!("`convert` to `{}` rebuilds the storage and cannot be a view", cx.show(declared)),
            "levels change kind or order",
        );
        return Err(Box::new(cx.with_operand(d, arg).with_help("use `mode = copy`")));
    }
    Ok(declared)
}

/// `convert` between a tensor of dense tiles and its flat form (the outer levels followed by
/// the tile's, seed 001's equivalence): `None` when neither side is such a pair, else whether
/// the two sides match.
fn nested_flat(cx: &mut Cx, from: &View, to: &View) -> Option<Result<(), Box<strata_ir::Diagnostic>>> {
    let (flat, nested) = match (super::nested::flattened(cx, from), super::nested::flattened(cx, to)) {
        (Some(f), None) => (to, f),
        (None, Some(f)) => (from, f),
        _ => return None,
    };
    if flat.levels == nested.0 && flat.element == nested.1 && from.placement == to.placement {
        return Some(Ok(()));
    }
    let want = cx.tensor(nested.1, nested.0, flat.placement.clone());
    let found = cx.tensor(flat.element, flat.levels.clone(), flat.placement.clone());
    Some(Err(cx.error(
        "strata::verify::convert_mismatch",
        format!(
            "`convert` between a tensor of tiles and its flat form needs the flat type `{}`, found `{}`",
            cx.show(want),
            cx.show(found)
        ),
        "the outer levels followed by the tile's, all dense",
    )))
}
