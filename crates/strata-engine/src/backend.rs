//! Which backend runs an entry.

/// Which backend runs an entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Native code where the entry compiles and a C compiler is installed, else the reference
    /// interpreter (with a notice saying why).
    #[default]
    Auto,
    /// The reference interpreter.
    Interp,
    /// Native code only: an entry it does not compile is an error.
    Native,
}

impl Backend {
    /// `auto` (or empty), `interp` or `native`.
    ///
    /// # Errors
    /// Any other name, in a message listing the choices.
    pub fn parse(name: &str) -> Result<Backend, String> {
        match name {
            "auto" | "" => Ok(Backend::Auto),
            "interp" => Ok(Backend::Interp),
            "native" => Ok(Backend::Native),
            other => Err(format!("unknown backend `{other}` (expected `auto`, `interp` or `native`)")),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Backend::Auto => "auto",
            Backend::Interp => "interp",
            Backend::Native => "native",
        })
    }
}
