//! What `strata lower --to dist` prints of a plan.

use std::fmt;

use super::{Indirection, Plan};

impl fmt::Display for Plan {
    /// What `strata lower --to dist` prints: each distributed parameter's blocks, halos and
    /// messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "distribution of @{} over {} ranks (block partition: remainders to the last ranks)",
            self.entry, self.ranks
        )?;
        for p in &self.params {
            let kind = if p.output { "out" } else { "in " };
            writeln!(f, "  {kind} %{}: block level `{}{}`", p.name, p.dim, p.global)?;
            for r in 0..self.ranks {
                let (o, h) = (p.owned[r], p.held[r]);
                write!(f, "    rank {r}: owns {}{o}", p.dim)?;
                if h != o {
                    write!(f, ", holds {}{h} (halo {} below, {} above)", p.dim, o.start - h.start, h.stop - o.stop)?;
                }
                writeln!(f)?;
            }
            let msgs = p.messages();
            if !p.output && !self.indirect.is_empty() {
                writeln!(
                    f,
                    "    the rows beyond its block that it reads (through the tables below) are fetched at run time"
                )?;
            } else if msgs.is_empty() {
                if !p.output {
                    writeln!(f, "    no exchange")?;
                }
            } else {
                let strips = (0..self.ranks).filter(|&r| self.strips(r, 0).iter().any(|s| s.index == p.index)).count();
                if strips > 0 {
                    writeln!(
                        f,
                        "    halo exchange (non-blocking send/receive, overlapped: the kernels that read no received \
                         row run while it is under way, the others after it completes):"
                    )?;
                    writeln!(
                        f,
                        "      (into strips beside the block on {strips} of {} ranks: the block is read where it is, \
                         the program joins block and strips with a `concat`)",
                        self.ranks
                    )?;
                } else {
                    writeln!(f, "    halo exchange (non-blocking send/receive, before the run):")?;
                }
                for (from, to, rows) in msgs {
                    writeln!(f, "      rank {from} -> rank {to}: {}{rows}", p.dim)?;
                }
            }
            match (p.output, p.stored) {
                (false, true) => {
                    writeln!(f, "    sparse or ragged: each rank reads only its rows of the .npz, as storage")?
                }
                (true, true) => writeln!(
                    f,
                    "    sparse or ragged: the ranks' stored entries gathered on rank 0, written as one .npz"
                )?,
                (true, false) => writeln!(f, "    each rank writes its block at its offset in one file")?,
                (false, false) => {}
            }
        }
        for s in &self.indirect {
            let through = match s.kind {
                Indirection::Neighbor => "the table",
                Indirection::Gather => "the gather indices",
            };
            writeln!(
                f,
                "  `%{}` in `@{}` reads `{}` rows through {through} %{}: which ones is planned at run time from \
                 its entries (an all-to-all of the rows each rank needs, then point-to-point messages of exactly \
                 those rows; a rank holds the hull of its rows)",
                s.value, s.func, s.dim, s.table
            )?;
        }
        if self.params.is_empty() {
            writeln!(f, "  nothing is distributed: every rank runs the whole program; rank 0 writes")?;
        }
        Ok(())
    }
}
