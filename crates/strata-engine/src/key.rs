//! The memo key of a prepared program: the entry's IR structure (every function, expression
//! and statement with its resolved type, no spans or comments) and the options.

use std::fmt::Write as _;

use strata_entity::Handle;
use strata_ir::print::TypeDisplay;
use strata_ir::{Function, Module, Type, TypeArena};

/// The structure of `module` (types resolved in `types`) and its entry, as an exact key: two
/// modules have equal keys exactly when they compute the same thing the same way.
pub fn structure(module: &Module, types: &TypeArena, entry: Handle<Function>) -> String {
    let ty = |t: Handle<Type>| TypeDisplay::in_arena(module, types, t).without_top_alias().to_string();
    let mut key = format!("entry {}\n", entry.index());
    for (_, a) in module.aliases.iter() {
        let _ = writeln!(key, "alias {} = {}", a.name, ty(a.ty));
    }
    for (_, r) in module.rings.iter() {
        let _ = writeln!(key, "ring {r:?}");
    }
    for (_, f) in module.functions.iter() {
        let _ = writeln!(key, "fn {} {:?} {:?}", f.name, f.kind, f.params);
        for &r in &f.results {
            let _ = writeln!(key, " -> {}", ty(r));
        }
        for (_, e) in f.exprs.iter() {
            let _ = writeln!(key, " {} {:?} : {}", e.name, e.kind, ty(e.ty));
        }
        for (_, s) in f.body.iter() {
            let _ = writeln!(key, " {s:?}");
        }
    }
    key
}
