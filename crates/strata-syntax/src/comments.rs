//! Attaches comments to the items and statements around them, so `fmt` loses none.

use strata_ir::{SourceInfo, Span};

use crate::lexer::Comment;

/// Hands out the lexer's comments in source order.
pub(crate) struct CommentCursor {
    comments: Vec<Comment>,
    next: usize,
    newlines: Vec<usize>,
}

impl CommentCursor {
    pub(crate) fn new(src: &str, comments: Vec<Comment>) -> Self {
        let newlines = src.match_indices('\n').map(|(i, _)| i).collect();
        CommentCursor { comments, next: 0, newlines }
    }

    fn line_end(&self, offset: usize) -> usize {
        let i = self.newlines.partition_point(|&n| n < offset);
        self.newlines.get(i).copied().unwrap_or(usize::MAX)
    }

    /// Takes every remaining comment that starts before `offset`.
    pub(crate) fn before(&mut self, offset: usize) -> Vec<String> {
        let mut out = Vec::new();
        while let Some(c) = self.comments.get(self.next) {
            if c.offset >= offset {
                break;
            }
            out.push(c.text.clone());
            self.next += 1;
        }
        out
    }

    /// Source info for a construct spanning `span`: the comments before it become leading, the
    /// ones inside it or on its last line trailing.
    pub(crate) fn info(&mut self, span: Span) -> SourceInfo {
        let leading = self.before(span.start as usize);
        let end = self.line_end(span.end as usize);
        let trailing = self.before(end);
        SourceInfo { span, leading, trailing }
    }

    /// Every comment not taken yet.
    pub(crate) fn rest(&mut self) -> Vec<String> {
        self.before(usize::MAX)
    }
}
