//! The C for kernels that stage values in rolling windows ([`crate::stage`]): threads take
//! contiguous blocks of the outermost level; each keeps, per window, a ring of planes in a
//! scratch array of its own, computes the window's plane `p + ahead` and then the stores' plane
//! `p`, for `p` from its block's start minus the warm-up to its end.

use std::fmt::Write;

use crate::kernel::{Kernel, Store, Window};
use crate::sym::{Coord, Load};

use super::{c_type, close_loops, emit_stores, open_loops, var, Emitter};

impl Emitter<'_> {
    /// A read of window `w` (its outermost coordinate picks the ring's plane).
    pub(super) fn window_load(&self, w: &Window, l: &Load) -> String {
        let levels = &self.buffer(w.buffer).levels;
        let Some(Coord::Var { .. }) = l.coords.first() else { unreachable!("windows are read at loop variables") };
        let plane = super::row_major(&levels[1..], |i, _| self.coord(&l.coords[i + 1]));
        let size: i64 = levels[1..].iter().map(|lv| lv.interval.len() as i64).product();
        format!(
            "win{}[(({} - ({})) % {}) * {size} + {plane}]",
            w.buffer,
            self.coord(&l.coords[0]),
            levels[0].interval.start,
            w.depth()
        )
    }
}

/// A kernel with windows: see the module documentation.
pub(super) fn emit_windowed(out: &mut String, em: &Emitter, k: &Kernel) {
    let (outer, inner) = k.domain.split_first().expect("windowed kernels have two levels or more");
    let (start, len) = (outer.interval.start, outer.interval.len() as i64);
    let warm_up = k.windows().iter().map(|w| w.behind - w.ahead).min().unwrap_or(0);
    let p = var(outer.name.as_str());
    let _ = writeln!(out, "  #pragma omp parallel reduction(max:e_) if(par_)");
    let _ = writeln!(out, "  {{");
    let _ = writeln!(out, "    int *err = &e_; (void)err;");
    let _ = writeln!(out, "    const int64_t nt_ = omp_get_num_threads(), t_ = omp_get_thread_num();");
    let _ = writeln!(
        out,
        "    const int64_t c0_ = {start} + {len} * t_ / nt_, c1_ = {start} + {len} * (t_ + 1) / nt_;  /* this thread's planes of {} */",
        outer.name
    );
    let mut allocated = Vec::new();
    for w in k.windows() {
        let b = em.buffer(w.buffer);
        let t = c_type(b.scalar);
        let size: i64 = b.levels[1..].iter().map(|lv| lv.interval.len() as i64).product::<i64>() * w.depth();
        let _ = writeln!(
            out,
            "    {t} *restrict win{} = ({t} *)aligned_alloc(64, (sizeof({t}) * {size} + 63) / 64 * 64);  /* {} planes of %{} */",
            w.buffer,
            w.depth(),
            b.name
        );
        allocated.push(format!("win{}", w.buffer));
    }
    let _ = writeln!(out, "    if (!({})) e_ = 5;", allocated.join(" && "));
    let _ = writeln!(out, "    else if (c0_ < c1_)");
    let _ = writeln!(out, "    for (int64_t p_ = c0_ + ({warm_up}); p_ < c1_; ++p_) {{");
    for w in k.windows() {
        let b = em.buffer(w.buffer);
        let _ = writeln!(
            out,
            "      if (p_ + ({}) >= c0_ + ({})) {{  /* plane p + {} of %{} */",
            w.ahead, w.behind, w.ahead, b.name
        );
        let _ = writeln!(out, "        const int64_t {p} = p_ + ({});", w.ahead);
        let mut indent = String::from("        ");
        let braces = open_loops(out, em, &b.levels[1..], &mut indent, None);
        let store = Store { buffer: w.buffer, value: w.value.clone() };
        emit_stores(out, em, std::slice::from_ref(&store), &indent);
        close_loops(out, &mut indent, braces);
        let _ = writeln!(out, "      }}");
    }
    let _ = writeln!(out, "      if (p_ >= c0_) {{  /* the stores' plane */");
    let _ = writeln!(out, "        const int64_t {p} = p_;");
    let mut indent = String::from("        ");
    let braces = open_loops(out, em, inner, &mut indent, None);
    emit_stores(out, em, &k.stores, &indent);
    close_loops(out, &mut indent, braces);
    let _ = writeln!(out, "      }}");
    let _ = writeln!(out, "    }}");
    for w in &allocated {
        let _ = writeln!(out, "    free({w});");
    }
    let _ = writeln!(out, "  }}");
}
