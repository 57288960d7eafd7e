//! Rendering diagnostics as text: `name:line:col: error: message`, then the source line with
//! the labelled span underlined, and help (miette's graphical report). The `strata` command and
//! the Python package print diagnostics the same way through this crate, and entry signatures
//! ([`signature`]).

#![deny(missing_docs)]

use std::fmt::Write as _;

pub mod signature;

use miette::{GraphicalReportHandler, GraphicalTheme, NamedSource};
use strata_ir::Diagnostic;

/// Renders diagnostics for `source` (named `name`) as text: `name:line:col`, the source line
/// with the labelled span underlined, the message, and help; ANSI colors with `color`.
pub fn render(name: &str, source: &str, diagnostics: &[Diagnostic], color: bool) -> String {
    let theme = if color { GraphicalTheme::unicode() } else { GraphicalTheme::unicode_nocolor() };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100).with_context_lines(1);
    let mut out = String::new();
    for d in diagnostics {
        let (line, col) = d.primary.span.line_col(source);
        let report = miette::Report::new(d.clone()).with_source_code(NamedSource::new(name, source.to_string()));
        let _ = writeln!(out, "{name}:{line}:{col}: error: {}", d.message);
        if handler.render_report(&mut out, report.as_ref()).is_err() {
            let _ = writeln!(out, "  [{}] {}", d.code, d.message);
        }
    }
    out
}
