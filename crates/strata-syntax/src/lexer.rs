//! The lexer: source text to tokens, with comments collected on the side.

use strata_ir::{Diagnostic, Span};

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// A bare word; may contain `.` after its first character (`array.sort`).
    Ident(String),
    /// `%name`
    Value(String),
    /// `@name`
    Global(String),
    /// `!name`
    Alias(String),
    /// An unsigned integer (the parser applies a sign and checks the 64-bit range).
    Int(u64),
    /// An unsigned float.
    Float(f64),
    /// `"text"`
    Str(String),
    /// `4x8x`: the dimension prefix of a positional tensor shorthand.
    Shape(Vec<u64>),
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// `[`
    LBracket,
    /// `]`
    RBracket,
    /// `{`
    LBrace,
    /// `}`
    RBrace,
    /// `<`
    Lt,
    /// `>`
    Gt,
    /// `,`
    Comma,
    /// `:`
    Colon,
    /// `=`
    Eq,
    /// `->`
    Arrow,
    /// `<-`
    Assign,
    /// `?`
    Question,
    /// `-`
    Minus,
    /// `+`
    Plus,
    /// `*`
    Star,
    /// Input the lexer could not read (already reported).
    Error,
    /// End of input.
    Eof,
}

impl Tok {
    /// How the token is described in messages.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("`{s}`"),
            Tok::Value(s) => format!("`%{s}`"),
            Tok::Global(s) => format!("`@{s}`"),
            Tok::Alias(s) => format!("`!{s}`"),
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(x) => format!("`{x:?}`"),
            Tok::Str(s) => format!("{s:?}"),
            Tok::Shape(d) => format!("`{}x`", d.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x")),
            Tok::LParen => "`(`".into(),
            Tok::RParen => "`)`".into(),
            Tok::LBracket => "`[`".into(),
            Tok::RBracket => "`]`".into(),
            Tok::LBrace => "`{`".into(),
            Tok::RBrace => "`}`".into(),
            Tok::Lt => "`<`".into(),
            Tok::Gt => "`>`".into(),
            Tok::Comma => "`,`".into(),
            Tok::Colon => "`:`".into(),
            Tok::Eq => "`=`".into(),
            Tok::Arrow => "`->`".into(),
            Tok::Assign => "`<-`".into(),
            Tok::Question => "`?`".into(),
            Tok::Minus => "`-`".into(),
            Tok::Plus => "`+`".into(),
            Tok::Star => "`*`".into(),
            Tok::Error => "invalid input".into(),
            Tok::Eof => "end of file".into(),
        }
    }
}

/// A token with its span and whether it is the first on its line.
#[derive(Clone, Debug)]
pub struct Token {
    /// The kind.
    pub tok: Tok,
    /// Where.
    pub span: Span,
    /// First token of its line (used for error recovery).
    pub line_start: bool,
}

/// A `//` comment: its text after the slashes, its offset, and whether code precedes it on the
/// line.
#[derive(Clone, Debug)]
pub struct Comment {
    /// Text after `//`.
    pub text: String,
    /// Byte offset of the `//`.
    pub offset: usize,
    /// Whether the comment stands alone on its line.
    pub own_line: bool,
}

/// Splits `src` into tokens and comments; lexical errors are collected and lexing goes on.
pub fn lex(src: &str) -> (Vec<Token>, Vec<Comment>, Vec<Diagnostic>) {
    let mut lx = Lexer {
        src,
        bytes: src.as_bytes(),
        pos: 0,
        tokens: Vec::new(),
        comments: Vec::new(),
        errors: Vec::new(),
        line_has_token: false,
    };
    lx.run();
    (lx.tokens, lx.comments, lx.errors)
}

struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    tokens: Vec<Token>,
    comments: Vec<Comment>,
    errors: Vec<Diagnostic>,
    line_has_token: bool,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_continue(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Lexer<'_> {
    fn peek(&self, k: usize) -> Option<u8> {
        self.bytes.get(self.pos + k).copied()
    }

    fn push(&mut self, tok: Tok, start: usize) {
        let line_start = !self.line_has_token;
        self.line_has_token = true;
        self.tokens.push(Token { tok, span: Span::new(start, self.pos), line_start });
    }

    /// Reports an error and leaves a [`Tok::Error`] token in its place, so the parser stays
    /// quiet about the same spot.
    fn error(&mut self, code: &'static str, message: String, start: usize, label: &str) {
        let span = Span::new(start, self.pos.max(start + 1).min(self.src.len().max(start)));
        self.errors.push(Diagnostic::new(code, message, span, label));
        let line_start = !self.line_has_token;
        self.line_has_token = true;
        self.tokens.push(Token { tok: Tok::Error, span, line_start });
    }

    fn word(&mut self, dots: bool) -> String {
        let start = self.pos;
        while let Some(b) = self.peek(0) {
            let continues = is_ident_continue(b) || (dots && b == b'.' && self.peek(1).is_some_and(is_ident_start));
            if !continues {
                break;
            }
            self.pos += 1;
        }
        self.src[start..self.pos].to_string()
    }

    fn run(&mut self) {
        while self.pos < self.bytes.len() {
            let start = self.pos;
            let b = self.bytes[self.pos];
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.line_has_token = false;
                }
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'/' if self.peek(1) == Some(b'/') => {
                    let end = self.src[self.pos..].find('\n').map_or(self.src.len(), |i| self.pos + i);
                    self.comments.push(Comment {
                        text: self.src[self.pos + 2..end].trim_end().to_string(),
                        offset: self.pos,
                        own_line: !self.line_has_token,
                    });
                    self.pos = end;
                }
                b'%' | b'@' | b'!' => {
                    self.pos += 1;
                    let name = self.word(false);
                    if name.is_empty() {
                        let what = match b {
                            b'%' => "value",
                            b'@' => "function or ring",
                            _ => "type alias",
                        };
                        self.error(
                            "strata::parse::invalid_token",
                            format!("expected a {what} name after `{}`", b as char),
                            start,
                            "name missing here",
                        );
                        continue;
                    }
                    let tok = match b {
                        b'%' => Tok::Value(name),
                        b'@' => Tok::Global(name),
                        _ => Tok::Alias(name),
                    };
                    self.push(tok, start);
                }
                b'"' => self.string(start),
                b'0'..=b'9' => self.number(start),
                _ if is_ident_start(b) => {
                    let w = self.word(true);
                    self.push(Tok::Ident(w), start);
                }
                _ => {
                    let (tok, len) = match (b, self.peek(1)) {
                        (b'-', Some(b'>')) => (Tok::Arrow, 2),
                        (b'<', Some(b'-')) => (Tok::Assign, 2),
                        (b'(', _) => (Tok::LParen, 1),
                        (b')', _) => (Tok::RParen, 1),
                        (b'[', _) => (Tok::LBracket, 1),
                        (b']', _) => (Tok::RBracket, 1),
                        (b'{', _) => (Tok::LBrace, 1),
                        (b'}', _) => (Tok::RBrace, 1),
                        (b'<', _) => (Tok::Lt, 1),
                        (b'>', _) => (Tok::Gt, 1),
                        (b',', _) => (Tok::Comma, 1),
                        (b':', _) => (Tok::Colon, 1),
                        (b'=', _) => (Tok::Eq, 1),
                        (b'?', _) => (Tok::Question, 1),
                        (b'-', _) => (Tok::Minus, 1),
                        (b'+', _) => (Tok::Plus, 1),
                        (b'*', _) => (Tok::Star, 1),
                        _ => {
                            let ch = self.src[self.pos..].chars().next().unwrap_or('?');
                            self.pos += ch.len_utf8();
                            self.error(
                                "strata::parse::invalid_token",
                                format!("unexpected character `{}`", ch.escape_debug()),
                                start,
                                "not part of the Strata syntax",
                            );
                            continue;
                        }
                    };
                    self.pos += len;
                    self.push(tok, start);
                }
            }
        }
        let end = self.src.len();
        self.tokens.push(Token { tok: Tok::Eof, span: Span::new(end, end), line_start: true });
    }

    fn string(&mut self, start: usize) {
        self.pos += 1;
        let mut text = String::new();
        loop {
            match self.src[self.pos..].chars().next() {
                None | Some('\n') => {
                    self.error(
                        "strata::parse::unterminated_string",
                        "unterminated string literal".into(),
                        start,
                        "string starts here",
                    );
                    return;
                }
                Some('"') => {
                    self.pos += 1;
                    break;
                }
                Some('\\') => {
                    self.pos += 1;
                    match self.src[self.pos..].chars().next() {
                        Some(c @ ('"' | '\\')) => {
                            text.push(c);
                            self.pos += 1;
                        }
                        Some('n') => {
                            text.push('\n');
                            self.pos += 1;
                        }
                        _ => {
                            self.error(
                                "strata::parse::invalid_token",
                                "unknown escape in string literal".into(),
                                self.pos - 1,
                                "only `\\\"`, `\\\\` and `\\n` are escapes",
                            );
                        }
                    }
                }
                Some(c) => {
                    text.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        self.push(Tok::Str(text), start);
    }

    fn digits(&mut self) -> &str {
        let s = self.pos;
        while self.peek(0).is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
        &self.src[s..self.pos]
    }

    /// Where a shape's `x` separator at the cursor ends: an `x` right after the digits, or one
    /// after spaces that is itself followed by a space or `!` (so `4 x tensor`, `8 x !Tile`).
    fn shape_x(&self) -> Option<usize> {
        if self.peek(0) == Some(b'x') {
            return Some(self.pos + 1);
        }
        let bytes = self.src.as_bytes();
        let mut i = self.pos;
        while i < bytes.len() && bytes[i] == b' ' {
            i += 1;
        }
        (i > self.pos && bytes.get(i) == Some(&b'x') && matches!(bytes.get(i + 1), Some(b' ' | b'!'))).then_some(i + 1)
    }

    fn number(&mut self, start: usize) {
        let first = self.digits().to_string();
        // Shape prefix: `4x8x…` (an `x` right after digits), also spaced as seed 001 writes it:
        // `4x8 x tensor<…>`.
        if let Some(after) = self.shape_x() {
            let mut dims = vec![first];
            self.pos = after;
            loop {
                let save = self.pos;
                let d = self.digits().to_string();
                if let Some(after) = self.shape_x().filter(|_| !d.is_empty()) {
                    dims.push(d);
                    self.pos = after;
                } else {
                    self.pos = save;
                    break;
                }
            }
            let mut parsed = Vec::new();
            for d in dims {
                match d.parse::<u64>() {
                    Ok(v) => parsed.push(v),
                    Err(_) => {
                        self.error(
                            "strata::parse::invalid_number",
                            format!("extent `{d}` is too large"),
                            start,
                            "in this shape",
                        );
                        return;
                    }
                }
            }
            self.push(Tok::Shape(parsed), start);
            return;
        }
        let mut is_float = false;
        if self.peek(0) == Some(b'.') && self.peek(1).is_some_and(|b| b.is_ascii_digit()) {
            is_float = true;
            self.pos += 1;
            self.digits();
        }
        if matches!(self.peek(0), Some(b'e' | b'E')) {
            let save = self.pos;
            self.pos += 1;
            if matches!(self.peek(0), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits().is_empty() {
                self.pos = save;
            } else {
                is_float = true;
            }
        }
        if self.peek(0).is_some_and(is_ident_start) {
            let w = self.word(false);
            self.error(
                "strata::parse::invalid_number",
                format!("invalid suffix `{w}` on a number"),
                start,
                "number ends here",
            );
            return;
        }
        let text = &self.src[start..self.pos];
        if is_float {
            match text.parse::<f64>() {
                Ok(x) if x.is_finite() => self.push(Tok::Float(x), start),
                _ => self.error(
                    "strata::parse::invalid_number",
                    format!("float literal `{text}` is out of range"),
                    start,
                    "write `inf` for infinity",
                ),
            }
        } else {
            match text.parse::<u64>() {
                Ok(v) => self.push(Tok::Int(v), start),
                Err(_) => self.error(
                    "strata::parse::invalid_number",
                    format!("integer literal `{text}` does not fit in 64 bits"),
                    start,
                    "too large",
                ),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<Tok> {
        let (t, _, e) = lex(src);
        assert!(e.is_empty(), "{e:?}");
        t.into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn lexes_shapes_and_types() {
        assert_eq!(
            kinds("tensor<4x8xf32>"),
            vec![
                Tok::Ident("tensor".into()),
                Tok::Lt,
                Tok::Shape(vec![4, 8]),
                Tok::Ident("f32".into()),
                Tok::Gt,
                Tok::Eof
            ]
        );
        assert_eq!(kinds("4x8x tensor")[0], Tok::Shape(vec![4, 8]));
        // Seed 001's spelling of a tensor of tensors.
        assert_eq!(kinds("4x8 x tensor<32x32xf32>")[..2], [Tok::Shape(vec![4, 8]), Tok::Ident("tensor".into())]);
        assert_eq!(kinds("2 x !Tile")[0], Tok::Shape(vec![2]));
    }

    #[test]
    fn lexes_numbers_and_arrows() {
        assert_eq!(
            kinds("-1 2.5 1e3 -> <- 7"),
            vec![
                Tok::Minus,
                Tok::Int(1),
                Tok::Float(2.5),
                Tok::Float(1000.0),
                Tok::Arrow,
                Tok::Assign,
                Tok::Int(7),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn collects_comments() {
        let (t, c, _) = lex("// head\n%x // tail\n");
        assert_eq!(t.len(), 2);
        assert_eq!(c.len(), 2);
        assert!(c[0].own_line && !c[1].own_line);
        assert_eq!(c[1].text, " tail");
    }

    #[test]
    fn reports_bad_characters_and_goes_on() {
        let (t, _, e) = lex("%a $ %b");
        assert_eq!(e.len(), 1);
        let kinds: Vec<Tok> = t.into_iter().map(|t| t.tok).collect();
        assert_eq!(kinds, vec![Tok::Value("a".into()), Tok::Error, Tok::Value("b".into()), Tok::Eof]);
    }
}
