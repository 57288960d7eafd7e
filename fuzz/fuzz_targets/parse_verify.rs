//! Any UTF-8 input: parsing and verification return diagnostics, never panic, and whatever
//! parses prints to text that parses again.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(src) = std::str::from_utf8(data) else { return };
    if let Ok(module) = strata_syntax::parse(src) {
        let printed = module.to_string();
        assert!(strata_syntax::parse(&printed).is_ok(), "printed module does not parse:\n{printed}");
        let _ = strata_verify::verify(&module);
    }
});
