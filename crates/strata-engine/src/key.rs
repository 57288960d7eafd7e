//! The memo key of a prepared program: a 128-bit digest of the entry's IR structure (every
//! function, expression and statement with its resolved type, no spans or comments) — sixteen
//! bytes per memo entry, hashed and compared in a step, however large the program.

use std::fmt::Write as _;

use strata_entity::Handle;
use strata_ir::print::TypeDisplay;
use strata_ir::{Function, Module, Type, TypeArena};

/// A program's structure as a memo key (see [`structure`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StructureKey(pub u128);

impl StructureKey {
    /// Sixty-four bits of it, the same in every process (a distributed job's ranks compare
    /// these before a run).
    pub fn fingerprint(self) -> u64 {
        (self.0 ^ (self.0 >> 64)) as u64
    }
}

/// The text [`structure`] digests, fed to XXH3-128 as it is written (never held whole).
struct Digest(xxhash_rust::xxh3::Xxh3);

impl std::fmt::Write for Digest {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.update(s.as_bytes());
        Ok(())
    }
}

/// The structure of `module` (types resolved in `types`) and its entry, as a key: the XXH3-128
/// digest of a text that two modules share exactly when they compute the same thing the same
/// way (a collision between two programs of one process is a chance of about 2^-128 per pair,
/// against which a memo of at most [`crate::MEMO_CAPACITY`] entries is safe).
pub fn structure(module: &Module, types: &TypeArena, entry: Handle<Function>) -> StructureKey {
    let ty = |t: Handle<Type>| TypeDisplay::in_arena(module, types, t).without_top_alias();
    let mut key = Digest(xxhash_rust::xxh3::Xxh3::new());
    let _ = writeln!(key, "entry {}", entry.index());
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
    StructureKey(key.0.digest128())
}
