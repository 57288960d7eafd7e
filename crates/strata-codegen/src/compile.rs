//! Compiling generated C with the system C compiler, with an on-disk cache.
//!
//! The compiler is `$CC`, else `cc`, with [`FLAGS`] (no fused multiply-add, so arithmetic
//! equals the interpreter's bit for bit; OpenMP threads share each kernel's outermost loop). Shared objects are
//! cached in `$STRATA_CACHE_DIR`, else `$XDG_CACHE_HOME/strata`, else `~/.cache/strata`, keyed
//! by a hash of the source, the compiler's identity, the flags and the CPU: a warm run skips the
//! compiler.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The flags every kernel is compiled with.
/// `-fno-math-errno` lets loops calling `exp`, `sin`, … vectorize with glibc's vector math
/// (see `emit_c`'s prelude); nothing reads `errno`.
/// `-Werror=implicit-function-declaration`: the prelude declares what kernels call instead of
/// including every header (`emit_c::translation_unit`), and a call it missed must fail to
/// compile rather than return an implicit `int`.
pub const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-fPIC",
    "-shared",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-std=gnu11",
    "-fopenmp",
    "-Werror=implicit-function-declaration",
];

/// What every kernel library links: libm, on x86-64 glibc's vector math library, and the
/// compiler's OpenMP runtime (`-fopenmp`).
///
/// With GCC nothing else: `-nodefaultlibs` leaves the C library out of the link (a kernel's
/// few C library calls, `malloc` and `memcpy`, bind at load time to the C library every
/// process has loaded), which took half of the link (11 of 20 ms on a kernel, measured; the
/// link is a fixed cost of every compile). `-lgcc` keeps GCC's own helpers. Other compilers
/// (Clang) link as usual: there `-nodefaultlibs` would drop the OpenMP runtime as well.
///
/// With GCC the library also routes its `GOMP_parallel` calls through the prelude's
/// `__wrap_GOMP_parallel` (`-Wl,--wrap`, enabled in the prelude by `STRATA_WRAP_GOMP_PARALLEL`):
/// a region whose `if(par_)` is false, or any region of a run asking for one thread, runs its
/// loop on the calling thread at once. libgomp itself makes a team of one for it, which wakes
/// the pool's idle threads (a futex call, ~1.1 µs on the 2-core VM against 0.1 µs; every small
/// kernel of a front end's loop paid it).
pub(crate) fn libs(cc: &str) -> &'static [&'static str] {
    const MATH: &[&str] = if cfg!(target_arch = "x86_64") { &["-lm", "-lmvec"] } else { &["-lm"] };
    const GCC: &[&str] = if cfg!(target_arch = "x86_64") {
        &["-nodefaultlibs", "-lm", "-lmvec", "-lgcc", "-DSTRATA_WRAP_GOMP_PARALLEL", "-Wl,--wrap=GOMP_parallel"]
    } else {
        &["-nodefaultlibs", "-lm", "-lgcc", "-DSTRATA_WRAP_GOMP_PARALLEL", "-Wl,--wrap=GOMP_parallel"]
    };
    let id = compiler_identity(cc);
    // GCC's `--version` names its copyright holder; Clang's says "clang" (and `cc` may be either).
    if cfg!(target_os = "linux") && id.contains("Free Software Foundation") && !id.contains("clang") {
        GCC
    } else {
        MATH
    }
}

/// Why compiling or loading failed.
#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    /// The compiler could not be started.
    #[error("cannot run the C compiler `{compiler}`: {source} (set $CC to a C compiler)")]
    NoCompiler {
        /// The command.
        compiler: String,
        /// Why.
        source: std::io::Error,
    },
    /// The compiler rejected the generated code.
    #[error("the C compiler `{compiler}` failed on the generated file {}:\n{stderr}", file.display())]
    Failed {
        /// The command.
        compiler: String,
        /// The generated C file, kept for inspection.
        file: PathBuf,
        /// What the compiler said.
        stderr: String,
    },
    /// The cache could not be written.
    #[error("cannot write to the kernel cache {}: {source} (set $STRATA_CACHE_DIR)", dir.display())]
    Cache {
        /// The cache folder.
        dir: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The shared object could not be loaded.
    #[error("cannot load the compiled kernel {}: {source}", path.display())]
    Load {
        /// The shared object.
        path: PathBuf,
        /// Why.
        source: libloading::Error,
    },
}

/// The C compiler command.
pub fn compiler() -> String {
    std::env::var("CC").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "cc".to_string())
}

/// The kernel cache folder.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("STRATA_CACHE_DIR") {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(d).join("strata");
    }
    if let Some(h) = std::env::var_os("HOME") {
        return PathBuf::from(h).join(".cache/strata");
    }
    std::env::temp_dir().join("strata-cache")
}

/// XXH3, 64 bits, of `parts` (each after its length): a stable hash for cache keys and
/// checksums. Every new size hashes its generated C (20–30 KB) and every first load of a cached
/// object the object: 0.7 µs for 20 KB, where FNV-1a took 22 µs.
pub fn hash(parts: &[&[u8]]) -> u64 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    h.digest()
}

/// What `cc --version` prints (once per process and compiler): part of every cache key, and
/// how [`libs`] tells GCC from other compilers. Running the compiler costs ~2 ms, more than the
/// rest of a cached call (a process's first kernel found in the cache), so its output is kept in
/// the kernel cache too, under the compiler's file: its resolved path, size and modification
/// time ([`remembered_identity`]). Installing another compiler changes them, and a later
/// process asks it again (ccache decides the same way by default).
fn compiler_identity(cc: &str) -> &'static str {
    use std::collections::HashMap;
    use std::sync::Mutex;
    // One string per compiler for the process (every kernel lookup asks, twice).
    static IDS: OnceLock<Mutex<HashMap<String, &'static str>>> = OnceLock::new();
    let mut ids = IDS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(id) = ids.get(cc) {
        return id;
    }
    let ask = || version_of(cc);
    let id = match compiler_file_key(cc) {
        Some(key) => remembered_identity(&cache_dir(), key, ask),
        None => ask(),
    }
    .unwrap_or_default();
    let id: &'static str = Box::leak(id.into_boxed_str());
    ids.insert(cc.to_string(), id);
    id
}

/// What compiler `cc --version` prints; `None` where it does not run or fails.
fn version_of(cc: &str) -> Option<String> {
    Command::new(cc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// A digest of the file compiler `cc` runs (found on `$PATH` unless it names a path): its
/// resolved path, size and modification time; `None` where it cannot be found.
fn compiler_file_key(cc: &str) -> Option<u64> {
    let found = if cc.contains('/') {
        PathBuf::from(cc)
    } else {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|d| d.join(cc)).find(|p| p.is_file())?
    };
    let real = std::fs::canonicalize(found).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let modified = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    let stamp = format!("{} {} {}", meta.len(), modified.as_secs(), modified.subsec_nanos());
    Some(hash(&[real.as_os_str().as_encoded_bytes(), stamp.as_bytes()]))
}

/// The identity cache directory `dir` holds for compiler file `key` (`cc-<key>.version`), else
/// what `ask` answers, then kept there (best effort: a cache that cannot be written asks again
/// in the next process). An answer of `None` (the compiler did not run) is not kept.
fn remembered_identity(dir: &Path, key: u64, ask: impl FnOnce() -> Option<String>) -> Option<String> {
    let file = dir.join(format!("cc-{key:016x}.version"));
    if let Ok(id) = std::fs::read_to_string(&file) {
        return Some(id);
    }
    let id = ask()?;
    // Written under a name of its own and renamed into place: a reader never sees half of it.
    let tmp = dir.join(format!("cc-{key:016x}.version.{}.tmp", std::process::id()));
    if std::fs::create_dir_all(dir).is_ok()
        && std::fs::write(&tmp, &id).is_ok()
        && std::fs::rename(&tmp, &file).is_err()
    {
        let _ = std::fs::remove_file(&tmp);
    }
    Some(id)
}

/// The CPU the code is built for (`-march=native` makes it part of the object): its model and
/// feature flags as Linux lists them in `/proc/cpuinfo` for the first CPU (empty where there is
/// none), read once. A kernel cache shared between machines (a home on NFS, an image moved to
/// another host) then never loads one CPU's code on another, e.g. AVX-512 code on an AVX2 CPU.
fn cpu_identity() -> &'static str {
    static CPU: OnceLock<String> = OnceLock::new();
    CPU.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let first = info.split("\n\n").next().unwrap_or_default();
        first
            .lines()
            .filter(|l| l.starts_with("model name") || l.starts_with("flags") || l.starts_with("Features"))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// What a cached object's checksum file holds: its length and hash.
fn checksum(bytes: &[u8]) -> String {
    format!("{} {:016x}\n", bytes.len(), hash(&[bytes]))
}

/// Cached objects this process has checked (each is read and hashed once per process).
fn validated() -> &'static std::sync::Mutex<std::collections::HashSet<PathBuf>> {
    static SEEN: OnceLock<std::sync::Mutex<std::collections::HashSet<PathBuf>>> = OnceLock::new();
    SEEN.get_or_init(Default::default)
}

/// Whether cached object `so` has the length and hash its checksum file `sum` records.
fn intact(so: &Path, sum: &Path) -> bool {
    let mut seen = validated().lock().unwrap_or_else(|e| e.into_inner());
    if seen.contains(so) {
        return true;
    }
    let ok = match (std::fs::read(so), std::fs::read_to_string(sum)) {
        (Ok(bytes), Ok(recorded)) => checksum(&bytes) == recorded,
        _ => false,
    };
    if ok {
        seen.insert(so.to_path_buf());
    }
    ok
}

/// Whether the last [`build`] found its shared object in the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheState {
    /// Compiled now.
    Cold,
    /// Reused.
    Warm,
}

/// Compiles generated kernels `source` (or finds them in the cache); returns the shared
/// object's path.
pub fn build(source: &str) -> Result<(PathBuf, CacheState), CompileError> {
    let cc = compiler();
    build_with(&cc, FLAGS, libs(&cc), "k", source)
}

/// Generated kernels looked up in the kernel cache without compiling them ([`lookup`]).
pub struct Lookup {
    /// Their cache key (a hash of the source, the compiler's identity, the flags and the CPU):
    /// the same for the same source, in every process.
    pub key: u64,
    /// Their shared object, if the cache holds it intact.
    pub object: Option<PathBuf>,
}

/// Looks generated kernels `source` up in the cache as [`build`] would, without running the
/// compiler.
pub fn lookup(source: &str) -> Lookup {
    let cc = compiler();
    let (key, _, so, sum) = cache_entry(&cc, FLAGS, libs(&cc), "k", source);
    Lookup { key, object: found(so, &sum) }
}

/// The cache key of `source` built with `cc`, `flags` and `libs`, the cache folder, and the
/// paths of its shared object and checksum file there.
fn cache_entry(
    cc: &str,
    flags: &[&str],
    libs: &[&str],
    prefix: &str,
    source: &str,
) -> (u64, PathBuf, PathBuf, PathBuf) {
    let key = hash(&[
        source.as_bytes(),
        cc.as_bytes(),
        compiler_identity(cc).as_bytes(),
        flags.join(" ").as_bytes(),
        libs.join(" ").as_bytes(),
        cpu_identity().as_bytes(),
    ]);
    let dir = cache_dir();
    let so = dir.join(format!("{prefix}{key:016x}.so"));
    let sum = dir.join(format!("{prefix}{key:016x}.so.sum"));
    (key, dir, so, sum)
}

/// `so` if it exists with the checksum `sum` records; a damaged one (truncated, overwritten
/// or without its checksum: loading it could crash the process, a short file is SIGBUS when
/// mapped) is removed, to be built again.
fn found(so: PathBuf, sum: &Path) -> Option<PathBuf> {
    // Loaded by this process already: loading it again takes the loaded library, whatever the
    // file became (every new size of a program looks its object up; no `stat` for it).
    if libraries().lock().unwrap_or_else(|e| e.into_inner()).contains_key(&so) {
        return Some(so);
    }
    if !so.exists() {
        return None;
    }
    if intact(&so, sum) {
        return Some(so);
    }
    let _ = std::fs::remove_file(&so);
    let _ = std::fs::remove_file(sum);
    None
}

/// Removes the files of builds that ended with their process (a background compile still
/// running when the program exited): `*.tmp` objects and a build's own source,
/// `{prefix}{key}.{pid}.{n}.c` (kept as `{prefix}{key}.c` only when the build succeeds), older
/// than `age`, which no running build still writes. Done once per process, on its first
/// compile.
fn sweep(dir: &Path, age: std::time::Duration) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let a_builds_source = |name: &str| {
        let parts: Vec<&str> = name.split('.').collect();
        matches!(parts[..], [_, pid, n, "c"] if [pid, n].iter().all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit())))
    };
    for e in entries.flatten() {
        let path = e.path();
        let old = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|a| a > age);
        let name = e.file_name();
        let name = name.to_string_lossy();
        if old && (name.ends_with(".tmp") || a_builds_source(&name)) {
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// How many lock files a kernel cache holds per prefix: two builds wait for each other only when
/// their keys share one (1 in 64 for different kernels).
const LOCK_STRIPES: u64 = 64;

/// Compiles `source` into a shared object with the compiler `cc`, `flags` and `libs` (or finds
/// it in the cache, keyed by all of them and the compiler's identity); `prefix` starts the
/// cached files' names.
pub fn build_with(
    cc: &str,
    flags: &[&str],
    libs: &[&str],
    prefix: &str,
    source: &str,
) -> Result<(PathBuf, CacheState), CompileError> {
    let cc = cc.to_string();
    let (key, dir, so, sum) = cache_entry(&cc, flags, libs, prefix, source);
    if let Some(so) = found(so.clone(), &sum) {
        return Ok((so, CacheState::Warm));
    }
    std::fs::create_dir_all(&dir).map_err(|source| CompileError::Cache { dir: dir.clone(), source })?;
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| sweep(&dir, std::time::Duration::from_secs(3600)));
    // One build of a key at a time, across processes: the ranks of a job that need the same
    // kernel wait for the first to build it, then find it in the cache. Best effort: a file
    // system without locks builds concurrently, as below. The lock files are shared by keys
    // (one of `LOCK_STRIPES` by the key), so the cache holds a bounded number of them, and are
    // never removed (a process could lock a removed file while another creates a new one).
    let stripe = key % LOCK_STRIPES;
    let lock = std::fs::File::create(dir.join(format!("{prefix}lock.{stripe:02}"))).ok().filter(|f| f.lock().is_ok());
    if lock.is_some() && so.exists() && intact(&so, &sum) {
        return Ok((so, CacheState::Warm));
    }
    // Files of this build only (other threads and processes may build the same key at the
    // same time): the C file and the object get unique names, and the finished object is
    // renamed into place atomically.
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tag = format!("{}.{}", std::process::id(), BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let c_file = dir.join(format!("{prefix}{key:016x}.{tag}.c"));
    std::fs::write(&c_file, source).map_err(|source| CompileError::Cache { dir: dir.clone(), source })?;
    let tmp = dir.join(format!("{prefix}{key:016x}.so.{tag}.tmp"));
    let out = Command::new(&cc)
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(&c_file)
        .args(libs)
        .output()
        .map_err(|source| CompileError::NoCompiler { compiler: cc.clone(), source })?;
    if !out.status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(CompileError::Failed {
            compiler: cc,
            file: c_file,
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    // The checksum goes first: an object in place always has one (a crash in between leaves a
    // checksum without its object, which the next build replaces).
    let cache_err = |source| CompileError::Cache { dir: dir.clone(), source };
    let bytes = std::fs::read(&tmp).map_err(cache_err)?;
    let sum_tmp = dir.join(format!("{prefix}{key:016x}.so.sum.{tag}.tmp"));
    std::fs::write(&sum_tmp, checksum(&bytes)).map_err(cache_err)?;
    std::fs::rename(&sum_tmp, &sum).map_err(cache_err)?;
    std::fs::rename(&tmp, &so).map_err(cache_err)?;
    validated().lock().unwrap_or_else(|e| e.into_inner()).insert(so.clone());
    // The source stays beside its object for reading (a failed build keeps its own file, which
    // the error names).
    let _ = std::fs::rename(&c_file, dir.join(format!("{prefix}{key:016x}.c")));
    Ok((so, CacheState::Cold))
}

/// A loaded kernel entry.
pub struct Loaded {
    entry: EntryFn,
    some: Option<SomeFn>,
    detail: Option<DetailFn>,
}

/// The signature of every generated `<entry>_some`: [`EntryFn`]'s, and which kernels to run.
type SomeFn = unsafe extern "C" fn(*mut *mut std::ffi::c_void, i32, *const crate::runtime::Runtime, *const u8) -> i32;

/// `strata_error_detail` of a generated library: the first bad entry or index of the last run
/// (value, interval start and stop, table buffer or -1, whether set).
type DetailFn = unsafe extern "C" fn() -> *const i64;

/// The first value a run found outside its interval: what a run-time error names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadValue {
    /// The entry or computed index.
    pub value: i64,
    /// The interval it had to lie in.
    pub interval: strata_ir::Interval,
    /// The neighbor table's buffer it was read from (`None`: a computed index).
    pub table: Option<usize>,
}

/// The signature of every generated entry: buffers, threads, the runtime table.
type EntryFn = unsafe extern "C" fn(*mut *mut std::ffi::c_void, i32, *const crate::runtime::Runtime) -> i32;

/// The kernel libraries this process has loaded, by path.
type Libraries = std::sync::Mutex<std::collections::HashMap<PathBuf, &'static libloading::Library>>;

fn libraries() -> &'static Libraries {
    static LIBS: OnceLock<Libraries> = OnceLock::new();
    LIBS.get_or_init(Default::default)
}

/// How many distinct kernel libraries this process has loaded. Kernels take their extents as
/// arguments, so a program run at a new size loads no new one: a count that grows with the
/// sizes a loop meets is a loop that compiles per size.
pub fn libraries_loaded() -> usize {
    libraries().lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// Kernel libraries stay loaded for the life of the process: unloading one could unmap the
/// OpenMP runtime under its idle worker threads. Each path is loaded once.
fn library(path: &Path) -> Result<&'static libloading::Library, libloading::Error> {
    let mut libs = libraries().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(l) = libs.get(path) {
        return Ok(l);
    }
    // SAFETY: the library is one this module compiled from generated C; loading runs no
    // initializers of ours.
    let lib: &'static libloading::Library = Box::leak(Box::new(unsafe { libloading::Library::new(path) }?));
    libs.insert(path.to_path_buf(), lib);
    Ok(lib)
}

impl Loaded {
    /// Loads `strata_entry` from a shared object.
    pub fn open(path: &Path) -> Result<Loaded, CompileError> {
        Loaded::open_symbol(path, "strata_entry")
    }

    /// Loads the entry exported as `symbol` (see [`crate::emit_c::emit_many`]).
    pub fn open_symbol(path: &Path, symbol: &str) -> Result<Loaded, CompileError> {
        let lerr = |source| CompileError::Load { path: path.into(), source };
        let lib = library(path).map_err(lerr)?;
        // SAFETY: `strata_entry` has exactly this signature in every generated file.
        let name = format!("{symbol}\0");
        let entry = unsafe { lib.get::<EntryFn>(name.as_bytes()) }.map_err(lerr)?;
        let entry = *entry;
        // SAFETY: generated libraries define `strata_error_detail` with this signature; older
        // cached ones may lack it (then errors carry no detail).
        let detail = unsafe { lib.get::<DetailFn>(b"strata_error_detail\0") }.ok().map(|f| *f);
        // SAFETY: `<symbol>_some` has exactly this signature in every generated file.
        let some = unsafe { lib.get::<SomeFn>(format!("{symbol}_some\0").as_bytes()) }.ok().map(|f| *f);
        Ok(Loaded { entry, some, detail })
    }

    /// The bad value the last run on this thread's library met, if it recorded one.
    pub fn bad_value(&self) -> Option<BadValue> {
        let f = self.detail?;
        // SAFETY: the function returns a pointer to five `int64_t` of the library, alive for
        // the process (libraries are never unloaded).
        let d = unsafe { std::slice::from_raw_parts(f(), 5) };
        (d[4] != 0).then(|| BadValue {
            value: d[0],
            interval: strata_ir::Interval::new(d[1], d[2]),
            table: usize::try_from(d[3]).ok(),
        })
    }

    /// Runs the kernels on `buffers` (one pointer per program buffer, in order) with `threads`
    /// threads (0: the OpenMP default, all cores or `$OMP_NUM_THREADS`).
    ///
    /// # Safety
    /// Every pointer must point to a buffer of the element type and length its program buffer
    /// declares, valid (and, if written, exclusively borrowed) for the call.
    pub unsafe fn call(&self, buffers: &mut [*mut std::ffi::c_void], threads: usize) -> i32 {
        // SAFETY: guaranteed by the caller.
        unsafe { (self.entry)(buffers.as_mut_ptr(), threads.min(i32::MAX as usize) as i32, &crate::runtime::RUNTIME) }
    }

    /// Runs the kernels `run` marks (one flag per kernel, in order), as [`Self::call`] runs
    /// them all; `None` when the library has no such entry.
    ///
    /// # Safety
    /// As for [`Self::call`]; `run` has one entry per kernel.
    pub unsafe fn call_some(&self, buffers: &mut [*mut std::ffi::c_void], threads: usize, run: &[bool]) -> Option<i32> {
        let some = self.some?;
        let flags: Vec<u8> = run.iter().map(|&r| u8::from(r)).collect();
        let threads = threads.min(i32::MAX as usize) as i32;
        // SAFETY: guaranteed by the caller; `flags` has one byte per kernel.
        Some(unsafe { some(buffers.as_mut_ptr(), threads, &crate::runtime::RUNTIME, flags.as_ptr()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compilers_identity_is_asked_once_and_kept_by_its_file() {
        let dir = std::env::temp_dir().join(format!("strata-cc-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        // A stand-in compiler file: its key follows its path, size and modification time.
        let compiler = dir.join("mycc");
        std::fs::write(&compiler, "v1").unwrap();
        let key = compiler_file_key(compiler.to_str().unwrap()).unwrap();
        assert_eq!(compiler_file_key(compiler.to_str().unwrap()), Some(key));
        std::fs::write(&compiler, "version 2").unwrap();
        let changed = compiler_file_key(compiler.to_str().unwrap()).unwrap();
        assert_ne!(changed, key, "a compiler installed over the old one is asked again");
        assert_eq!(compiler_file_key(dir.join("absent").to_str().unwrap()), None);
        // The first process asks; the next finds the answer.
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Some("mycc 1.0".to_string())
        };
        assert_eq!(remembered_identity(&dir, key, ask).as_deref(), Some("mycc 1.0"));
        assert_eq!(remembered_identity(&dir, key, ask).as_deref(), Some("mycc 1.0"));
        assert_eq!(asked.get(), 1);
        // A compiler that did not run is asked again next time (nothing kept).
        assert_eq!(remembered_identity(&dir, changed, || None), None);
        assert_eq!(remembered_identity(&dir, changed, ask).as_deref(), Some("mycc 1.0"));
        assert_eq!(asked.get(), 2);
        // `cc` itself, found on $PATH, has a key; its kept identity is what it prints.
        if let Some(k) = compiler_file_key("cc") {
            let id = remembered_identity(&dir, k, || version_of("cc"));
            assert!(id.is_some_and(|id| !id.is_empty()));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_sweep_removes_old_temporaries_only() {
        let dir = std::env::temp_dir().join(format!("strata-sweep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let old = dir.join("kabc.so.1.2.tmp");
        let old_source = dir.join("kabc.1.2.c");
        let young = dir.join("kdef.so.1.3.tmp");
        let young_source = dir.join("kdef.1.3.c");
        // What a successful build keeps: its object, checksum and source.
        let kept = ["kabc.so", "kabc.so.sum", "kabc.c"].map(|f| dir.join(f));
        for f in [&old, &old_source, &young, &young_source].into_iter().chain(&kept) {
            std::fs::write(f, b"x").unwrap();
        }
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        for f in [&old, &old_source].into_iter().chain(&kept) {
            std::fs::File::options().write(true).open(f).unwrap().set_modified(hour_ago).unwrap();
        }
        sweep(&dir, std::time::Duration::from_secs(3600));
        assert!(!old.exists() && !old_source.exists());
        assert!(young.exists() && young_source.exists() && kept.iter().all(|f| f.exists()));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
