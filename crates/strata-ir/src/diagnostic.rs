//! Diagnostics as data: a code, a message, labelled spans and an optional fix.
//!
//! Libraries produce [`Diagnostic`]s; only the CLI renders them (with miette's graphical
//! handler). Messages follow rustc's style: lowercase, no final period, names and types in
//! backticks, and the smallest span that shows the cause.

use std::fmt;

use crate::span::Span;

/// A labelled source range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    /// Where.
    pub span: Span,
    /// What is there.
    pub text: String,
}

/// One error found in a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// A stable code naming the broken rule, e.g. `strata::verify::interval_not_covered`.
    pub code: &'static str,
    /// The cause in words.
    pub message: String,
    /// The primary location.
    pub primary: Label,
    /// Related locations.
    pub secondary: Vec<Label>,
    /// How to fix it, when a fix is known.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic with a primary label.
    pub fn new(code: &'static str, message: impl Into<String>, span: Span, label: impl Into<String>) -> Self {
        Diagnostic {
            code,
            message: message.into(),
            primary: Label { span, text: label.into() },
            secondary: Vec::new(),
            help: None,
        }
    }

    /// Adds a secondary label.
    pub fn with_label(mut self, span: Span, text: impl Into<String>) -> Self {
        if span != Span::UNKNOWN {
            self.secondary.push(Label { span, text: text.into() });
        }
        self
    }

    /// Adds a help line.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diagnostic {}

impl miette::Diagnostic for Diagnostic {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        Some(Box::new(self.code))
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help.as_ref().map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let primary = miette::LabeledSpan::new_primary_with_span(Some(self.primary.text.clone()), self.primary.span);
        let rest = self.secondary.iter().map(|l| miette::LabeledSpan::new_with_span(Some(l.text.clone()), l.span));
        Some(Box::new(std::iter::once(primary).chain(rest)))
    }
}
