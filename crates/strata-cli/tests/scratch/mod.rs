//! A test's own directory under the system's temporary folder, removed with everything in it
//! when the test ends, passed or failed: a test run leaves nothing behind (a distributed test's
//! inputs and outputs run to tens of megabytes, and CI machines are shared by many runs).

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::Path;

/// A scratch directory named `strata-{tag}-…`; derefs to its path.
pub struct Scratch(tempfile::TempDir);

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<OsStr> for Scratch {
    fn as_ref(&self) -> &OsStr {
        self.0.path().as_os_str()
    }
}

/// A new, empty scratch directory for the test at hand.
pub fn scratch(tag: &str) -> Scratch {
    let dir = tempfile::Builder::new().prefix(&format!("strata-{tag}-")).tempdir().expect("a temporary directory");
    Scratch(dir)
}
