//! Attaches comments (and single blank lines) to the items and statements around them, so
//! `fmt` loses no comment and keeps the author's paragraphs.
//!
//! A blank line is recorded as the marker [`BLANK`] among a construct's leading comments.

use strata_ir::{SourceInfo, Span};

use crate::lexer::Comment;

/// The marker for a blank line in [`SourceInfo::leading`]; comment text never contains `\n`.
pub const BLANK: &str = "\n";

/// Hands out the lexer's comments in source order.
pub(crate) struct CommentCursor {
    src: String,
    comments: Vec<Comment>,
    next: usize,
    newlines: Vec<usize>,
    /// End of the last construct or comment handed out.
    last_end: usize,
}

impl CommentCursor {
    pub(crate) fn new(src: &str, comments: Vec<Comment>) -> Self {
        let newlines = src.match_indices('\n').map(|(i, _)| i).collect();
        CommentCursor { src: src.to_string(), comments, next: 0, newlines, last_end: 0 }
    }

    fn line_end(&self, offset: usize) -> usize {
        let i = self.newlines.partition_point(|&n| n < offset);
        self.newlines.get(i).copied().unwrap_or(usize::MAX)
    }

    fn blank_between(&self, a: usize, b: usize) -> bool {
        let (a, b) = (a.min(self.src.len()), b.min(self.src.len()));
        if a >= b || self.last_end == 0 {
            return false;
        }
        let gap = &self.src[a..b];
        let mut lines = gap.split('\n');
        lines.next();
        let mut rest: Vec<&str> = lines.collect();
        rest.pop();
        rest.iter().any(|l| l.trim().is_empty())
    }

    /// Takes every remaining comment that starts before `offset`, with blank-line markers.
    fn take_before(&mut self, offset: usize, blanks: bool) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(c) = self.comments.get(self.next) {
            if c.offset >= offset {
                break;
            }
            if blanks && self.blank_between(self.last_end, c.offset) {
                out.push(BLANK.to_string());
            }
            out.push(c.text.clone());
            self.last_end = self.line_end(c.offset);
            self.next += 1;
        }
        out
    }

    /// Takes every remaining comment that starts before `offset`.
    pub(crate) fn before(&mut self, offset: usize) -> Vec<String> {
        let out = self.take_before(offset, true);
        out.into_iter().filter(|c| c != BLANK).collect()
    }

    /// Source info for a construct spanning `span`: the comments before it become leading, the
    /// ones inside it or on its last line trailing.
    pub(crate) fn info(&mut self, span: Span) -> SourceInfo {
        let mut leading = self.take_before(span.start as usize, true);
        if self.blank_between(self.last_end, span.start as usize) {
            leading.push(BLANK.to_string());
        }
        let end = self.line_end(span.end as usize);
        let trailing = self.take_before(end, false);
        self.last_end = end.min(self.src.len());
        SourceInfo { span, leading, trailing }
    }

    /// Every comment not taken yet.
    pub(crate) fn rest(&mut self) -> Vec<String> {
        self.before(usize::MAX)
    }
}
