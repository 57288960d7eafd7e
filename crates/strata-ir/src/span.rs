//! Byte ranges into a source file.

/// A half-open byte range `[start, end)` into the source text a module was parsed from.
///
/// Entities built by passes (not parsed) carry [`Span::UNKNOWN`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// The span of entities that have no source location.
    pub const UNKNOWN: Span = Span { start: 0, end: 0 };

    /// A span from byte offsets.
    pub fn new(start: usize, end: usize) -> Span {
        Span { start: start as u32, end: end.max(start) as u32 }
    }

    /// The smallest span covering both.
    pub fn join(self, other: Span) -> Span {
        if self == Span::UNKNOWN {
            return other;
        }
        if other == Span::UNKNOWN {
            return self;
        }
        Span { start: self.start.min(other.start), end: self.end.max(other.end) }
    }

    /// Length in bytes.
    pub fn len(self) -> usize {
        (self.end - self.start) as usize
    }

    /// Whether the span is empty.
    pub fn is_empty(self) -> bool {
        self.start == self.end
    }

    /// The 1-based line and column of the span's start in `source`.
    pub fn line_col(self, source: &str) -> (usize, usize) {
        let upto = &source[..(self.start as usize).min(source.len())];
        let line = upto.matches('\n').count() + 1;
        let col = upto.rfind('\n').map_or(upto.chars().count(), |p| upto[p + 1..].chars().count()) + 1;
        (line, col)
    }
}

impl From<Span> for miette::SourceSpan {
    fn from(s: Span) -> Self {
        miette::SourceSpan::new((s.start as usize).into(), s.len())
    }
}

/// Where an item or statement came from, and the comments written around it, so that `fmt`
/// keeps every comment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceInfo {
    /// The source range.
    pub span: Span,
    /// Whole-line comments just before it, without the `//`.
    pub leading: Vec<String>,
    /// Comments inside it or after it on its last line, without the `//`.
    pub trailing: Vec<String>,
}

impl SourceInfo {
    /// Source info with a span and no comments.
    pub fn at(span: Span) -> SourceInfo {
        SourceInfo { span, leading: Vec::new(), trailing: Vec::new() }
    }
}
