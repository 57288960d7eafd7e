//! Tensors on a team: the block partition and each rank's local block.
//!
//! A tensor with a `block` level over a team of `n` ranks is split along that level into `n`
//! contiguous blocks; remainders go to the last ranks (IMEX's default partition), so with 10
//! indices over 3 ranks the blocks are `[0:3]`, `[3:6]`, `[6:10]`. Each block keeps its *global*
//! interval, so rank-local code indexes with global coordinates. The single-process interpreter
//! holds the whole tensor; the distributed layer works with [`local_blocks`].

use strata_ir::{Interval, LevelFormat};

use crate::tensor::{strides, Tensor};

/// The blocks of `interval` for each of `ranks` ranks, in rank order.
pub fn block_partition(interval: Interval, ranks: u32) -> Vec<Interval> {
    let n = interval.len();
    let r = u64::from(ranks.max(1));
    let (base, rem) = (n / r, n % r);
    let mut start = interval.start;
    (0..r)
        .map(|k| {
            let len = base + u64::from(k >= r - rem);
            let iv = Interval::new(start, start + len as i64);
            start = iv.stop;
            iv
        })
        .collect()
}

/// Each rank's block of a distributed tensor (the whole tensor, once, if it has no block level
/// or no team): the block level's interval becomes the rank's global sub-interval.
pub fn local_blocks(t: &Tensor) -> Vec<Tensor> {
    let (Some(team), Some(d)) = (t.ty.placement.team, t.ty.levels.iter().position(|l| l.format == LevelFormat::Block))
    else {
        return vec![t.clone()];
    };
    let shape = t.ty.shape();
    let st = strides(&shape);
    block_partition(t.ty.levels[d].interval, team.ranks)
        .into_iter()
        .map(|iv| {
            let mut ty = t.ty.clone();
            ty.levels[d].interval = iv;
            let lo = (iv.start - t.ty.levels[d].interval.start) as usize;
            let local_shape = ty.shape();
            let lst = strides(&local_shape);
            let positions: Vec<usize> = (0..ty.len())
                .map(|i| {
                    (0..shape.len())
                        .map(|k| {
                            let c = (i / lst[k]) % local_shape[k].max(1);
                            (if k == d { c + lo } else { c }) * st[k]
                        })
                        .sum()
                })
                .collect();
            let present = t.present.as_ref().map(|p| positions.iter().map(|&j| p[j]).collect());
            Tensor { ty, data: t.data.select(&positions), present }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::{Column, Sv};
    use crate::tensor::{Data, ElemType, ValueType};
    use strata_ir::{DimName, Level, Placement, Scalar, Team};

    #[test]
    fn remainders_go_to_the_last_ranks() {
        let b = block_partition(Interval::new(0, 10), 3);
        assert_eq!(b, vec![Interval::new(0, 3), Interval::new(3, 6), Interval::new(6, 10)]);
        let b = block_partition(Interval::new(-2, 3), 2);
        assert_eq!(b, vec![Interval::new(-2, 0), Interval::new(0, 3)]);
        let b = block_partition(Interval::new(0, 2), 4);
        assert_eq!(b.iter().map(|i| i.len()).collect::<Vec<_>>(), vec![0, 0, 1, 1]);
    }

    #[test]
    fn local_blocks_hold_their_global_rows() {
        // A 5x2 tensor, block-distributed along I over 2 ranks: rows 0-1 and 2-4.
        let ty = ValueType {
            levels: vec![
                Level { name: DimName::new("I"), interval: Interval::new(0, 5), format: LevelFormat::Block },
                Level::dense(DimName::new("J"), Interval::new(0, 2)),
            ],
            placement: Placement { device: strata_ir::Device::Cpu, team: Some(Team { ranks: 2 }) },
            element: ElemType::Scalar(Scalar::I32),
            is_tensor: true,
        };
        let t =
            Tensor { data: Data::Scalars(Column::from_fn(Scalar::I32, 10, |i| Sv::I32(i as i32))), ty, present: None };
        let blocks = local_blocks(&t);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].ty.levels[0].interval, Interval::new(0, 2));
        assert_eq!(blocks[1].ty.levels[0].interval, Interval::new(2, 5));
        assert_eq!(blocks[1].data, Data::Scalars(Column::I32(vec![4, 5, 6, 7, 8, 9])));
    }
}
