//! Arenas with typed handles.
//!
//! Every IR entity (a type, an expression, a function) is stored in an [`Arena`] and referred to
//! by a [`Handle`] — a 32-bit index tagged with the entity's Rust type, so a handle to a type can
//! never be used where a handle to an expression is expected. Types are interned in a
//! [`UniqueArena`], which makes structural type equality a handle comparison.
//!
//! Invariants:
//! - entries are only ever appended, so a handle stays valid for the arena's lifetime;
//! - each entry carries a `Span`-like metadata value of type `S`, kept in a parallel vector and
//!   ignored by equality: two arenas are equal when their entries are, wherever they came from.
//!
//! Analysis results keyed by handle live in a [`SecondaryMap`], never as fields patched into
//! the entities themselves.

#![deny(missing_docs)]

use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::num::NonZeroU32;

/// A typed index into an [`Arena`] or [`UniqueArena`] of `T`.
pub struct Handle<T> {
    index: NonZeroU32,
    marker: PhantomData<fn() -> T>,
}

impl<T> Handle<T> {
    /// Makes a handle from a zero-based index (as returned by [`Handle::index`]).
    ///
    /// # Panics
    /// If `index` does not fit in 32 bits minus one.
    pub fn from_index(index: usize) -> Self {
        let raw = u32::try_from(index + 1).expect("arena larger than u32::MAX entries");
        Handle { index: NonZeroU32::new(raw).expect("index + 1 is non-zero"), marker: PhantomData }
    }

    /// The zero-based position of the entry in its arena.
    pub fn index(self) -> usize {
        self.index.get() as usize - 1
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Handle<T> {}
impl<T> PartialEq for Handle<T> {
    fn eq(&self, other: &Self) -> bool {
        self.index == other.index
    }
}
impl<T> Eq for Handle<T> {}
impl<T> PartialOrd for Handle<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Handle<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.index.cmp(&other.index)
    }
}
impl<T> Hash for Handle<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.index.hash(state)
    }
}
impl<T> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.index())
    }
}

/// A set of handles, one bit per index: insertion, removal and membership in constant time,
/// iteration in index order (the order entries were made in).
pub struct HandleSet<T> {
    words: Vec<u64>,
    marker: PhantomData<fn() -> T>,
}

impl<T> HandleSet<T> {
    /// The empty set.
    pub fn new() -> Self {
        HandleSet { words: Vec::new(), marker: PhantomData }
    }

    /// Adds `h`; whether it was not there yet.
    pub fn insert(&mut self, h: Handle<T>) -> bool {
        let (w, bit) = (h.index() / 64, 1u64 << (h.index() % 64));
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        let fresh = self.words[w] & bit == 0;
        self.words[w] |= bit;
        fresh
    }

    /// Whether `h` is in the set.
    pub fn contains(&self, h: &Handle<T>) -> bool {
        self.words.get(h.index() / 64).is_some_and(|w| w & (1 << (h.index() % 64)) != 0)
    }

    /// Removes `h`; whether it was there.
    pub fn remove(&mut self, h: &Handle<T>) -> bool {
        let was = self.contains(h);
        if was {
            self.words[h.index() / 64] &= !(1 << (h.index() % 64));
        }
        was
    }

    /// Removes every handle.
    pub fn clear(&mut self) {
        self.words.clear();
    }

    /// Whether the set has no handle.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The number of handles.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The handles in index order.
    pub fn iter(&self) -> impl Iterator<Item = Handle<T>> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64).filter(move |b| bits & (1 << b) != 0).map(move |b| Handle::from_index(w * 64 + b))
        })
    }

    /// Keeps the handles for which `keep` holds.
    pub fn retain(&mut self, mut keep: impl FnMut(Handle<T>) -> bool) {
        let gone: Vec<Handle<T>> = self.iter().filter(|&h| !keep(h)).collect();
        for h in gone {
            self.remove(&h);
        }
    }
}

impl<T> Default for HandleSet<T> {
    fn default() -> Self {
        Self::new()
    }
}
impl<T> Clone for HandleSet<T> {
    fn clone(&self) -> Self {
        HandleSet { words: self.words.clone(), marker: PhantomData }
    }
}
impl<T> PartialEq for HandleSet<T> {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}
impl<T> Eq for HandleSet<T> {}
impl<T> fmt::Debug for HandleSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}
impl<T> FromIterator<Handle<T>> for HandleSet<T> {
    fn from_iter<I: IntoIterator<Item = Handle<T>>>(iter: I) -> Self {
        let mut s = HandleSet::new();
        for h in iter {
            s.insert(h);
        }
        s
    }
}

/// An append-only vector of `T`, indexed by [`Handle<T>`], with per-entry metadata `S`.
#[derive(Clone)]
pub struct Arena<T, S = ()> {
    data: Vec<T>,
    meta: Vec<S>,
}

impl<T, S> Default for Arena<T, S> {
    fn default() -> Self {
        Arena { data: Vec::new(), meta: Vec::new() }
    }
}

impl<T, S> Arena<T, S> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `value` with its metadata and returns its handle.
    pub fn append(&mut self, value: T, meta: S) -> Handle<T> {
        self.data.push(value);
        self.meta.push(meta);
        Handle::from_index(self.data.len() - 1)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the arena has no entries.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The entry behind `handle`, or `None` if the handle is out of range (used by handle
    /// validation; everything after validation indexes infallibly).
    pub fn try_get(&self, handle: Handle<T>) -> Option<&T> {
        self.data.get(handle.index())
    }

    /// The metadata (usually a source span) of `handle`'s entry.
    pub fn meta(&self, handle: Handle<T>) -> &S {
        &self.meta[handle.index()]
    }

    /// Iterates over `(handle, entry)` pairs in insertion order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (Handle<T>, &T)> + ExactSizeIterator {
        self.data.iter().enumerate().map(|(i, v)| (Handle::from_index(i), v))
    }

    /// Iterates over the handles in insertion order.
    pub fn handles(&self) -> impl DoubleEndedIterator<Item = Handle<T>> + ExactSizeIterator {
        (0..self.data.len()).map(Handle::from_index)
    }
}

impl<T, S> std::ops::Index<Handle<T>> for Arena<T, S> {
    type Output = T;
    fn index(&self, handle: Handle<T>) -> &T {
        &self.data[handle.index()]
    }
}

impl<T, S> std::ops::IndexMut<Handle<T>> for Arena<T, S> {
    fn index_mut(&mut self, handle: Handle<T>) -> &mut T {
        &mut self.data[handle.index()]
    }
}

/// Equality compares entries only; metadata such as spans never takes part.
impl<T: PartialEq, S> PartialEq for Arena<T, S> {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl<T: fmt::Debug, S> fmt::Debug for Arena<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// An arena that stores each distinct value once: inserting an equal value returns the existing
/// handle, so equal values always have equal handles.
#[derive(Clone)]
pub struct UniqueArena<T> {
    data: Vec<T>,
    map: HashMap<T, Handle<T>>,
}

impl<T> Default for UniqueArena<T> {
    fn default() -> Self {
        UniqueArena { data: Vec::new(), map: HashMap::new() }
    }
}

impl<T: Eq + Hash + Clone> UniqueArena<T> {
    /// An empty arena.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the handle of `value`, inserting it if it is new.
    pub fn insert(&mut self, value: T) -> Handle<T> {
        if let Some(&h) = self.map.get(&value) {
            return h;
        }
        self.data.push(value.clone());
        let h = Handle::from_index(self.data.len() - 1);
        self.map.insert(value, h);
        h
    }

    /// The handle of `value` if it has been inserted.
    pub fn get(&self, value: &T) -> Option<Handle<T>> {
        self.map.get(value).copied()
    }

    /// The number of distinct entries.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the arena has no entries.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The entry behind `handle`, or `None` when out of range.
    pub fn try_get(&self, handle: Handle<T>) -> Option<&T> {
        self.data.get(handle.index())
    }

    /// Iterates over `(handle, entry)` pairs in insertion order.
    pub fn iter(&self) -> impl Iterator<Item = (Handle<T>, &T)> {
        self.data.iter().enumerate().map(|(i, v)| (Handle::from_index(i), v))
    }
}

impl<T> std::ops::Index<Handle<T>> for UniqueArena<T> {
    type Output = T;
    fn index(&self, handle: Handle<T>) -> &T {
        &self.data[handle.index()]
    }
}

/// Two unique arenas are equal when they hold equal entries in the same order.
impl<T: PartialEq> PartialEq for UniqueArena<T> {
    fn eq(&self, other: &Self) -> bool {
        self.data == other.data
    }
}

impl<T: fmt::Debug> fmt::Debug for UniqueArena<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.data.iter()).finish()
    }
}

/// A side table from handles of `K` to values `V`, for analysis results (inferred types, use
/// counts) that must not be patched into the entities themselves.
#[derive(Clone, Debug)]
pub struct SecondaryMap<K, V> {
    data: Vec<Option<V>>,
    marker: PhantomData<fn() -> K>,
}

impl<K, V> Default for SecondaryMap<K, V> {
    fn default() -> Self {
        SecondaryMap { data: Vec::new(), marker: PhantomData }
    }
}

impl<K, V> SecondaryMap<K, V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the value for `key`, returning the previous one.
    pub fn insert(&mut self, key: Handle<K>, value: V) -> Option<V> {
        let i = key.index();
        if i >= self.data.len() {
            self.data.resize_with(i + 1, || None);
        }
        self.data[i].replace(value)
    }

    /// The value for `key`, if any.
    pub fn get(&self, key: Handle<K>) -> Option<&V> {
        self.data.get(key.index()).and_then(Option::as_ref)
    }

    /// Iterates over the keys that have a value.
    pub fn iter(&self) -> impl Iterator<Item = (Handle<K>, &V)> {
        self.data.iter().enumerate().filter_map(|(i, v)| v.as_ref().map(|v| (Handle::from_index(i), v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_arena_interns_equal_values() {
        let mut a = UniqueArena::new();
        let x = a.insert("f64".to_string());
        let y = a.insert("i32".to_string());
        assert_ne!(x, y);
        assert_eq!(a.insert("f64".to_string()), x);
        assert_eq!(a.len(), 2);
        assert_eq!(a[y], "i32");
    }

    #[test]
    fn arena_equality_ignores_metadata() {
        let mut a: Arena<u8, u32> = Arena::new();
        let mut b: Arena<u8, u32> = Arena::new();
        a.append(7, 1);
        b.append(7, 99);
        assert_eq!(a, b);
        b.append(8, 0);
        assert_ne!(a, b);
    }

    #[test]
    fn secondary_map_grows_on_demand() {
        let mut m: SecondaryMap<u8, &str> = SecondaryMap::new();
        let h = Handle::<u8>::from_index(5);
        assert_eq!(m.get(h), None);
        m.insert(h, "x");
        assert_eq!(m.get(h), Some(&"x"));
        assert_eq!(m.get(Handle::from_index(2)), None);
        assert_eq!(m.iter().count(), 1);
    }
}
