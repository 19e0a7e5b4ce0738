//! Hand-written lexer for PTX text: turns bytes into tokens with line and column.
//!
//! Tokens borrow from the input (no allocation per token) and are produced on demand, so a huge
//! input never becomes a huge token vector. The lexer knows nothing about PTX grammar beyond
//! the shape of words, numbers, strings and punctuation (PTX ISA, section "Syntax"); it never
//! fails: a byte it does not understand becomes an [`Tok::Bad`] token that the parser reports.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tok<'a> {
    /// An identifier: `ld`, `%r1`, `%tid.x`, `$L__BB0_3`, `_Z3fooi`.
    Ident(&'a str),
    /// A dotted word without its dot: `.reg` -> `reg`, `.shared::cta` -> `shared::cta`.
    Dot(&'a str),
    /// An integer literal (decimal, hex `0x`, octal `0`, binary `0b`, optional `U` suffix).
    Int(u64),
    /// A floating-point literal: decimal, or the hex forms `0f3F800000` / `0d3FF0000000000000`.
    Float(f64),
    /// A string literal without its quotes.
    Str(&'a str),
    /// One punctuation byte: `, ; : { } [ ] ( ) @ ! + - < > = | * / ~ & ^ ? %`.
    Punct(u8),
    /// A byte or literal that is not PTX; the string is a short description.
    Bad(&'static str),
    /// End of input.
    Eof,
}

/// A token with its 1-based position and whether whitespace or a comment preceded it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Token<'a> {
    pub tok: Tok<'a>,
    pub line: u32,
    pub col: u32,
    /// True when the token directly follows the previous one (no space or comment between).
    pub glued: bool,
    /// Byte range of the token in the source.
    pub start: usize,
    pub end: usize,
}

/// The lexer: an iterator of tokens ending with one [`Tok::Eof`] (repeated on further calls).
pub struct Lexer<'a> {
    src: &'a str,
    bytes: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b == b'%'
}

fn is_ident_cont(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

impl<'a> Lexer<'a> {
    /// A lexer over the whole text.
    pub fn new(src: &'a str) -> Self {
        Lexer {
            src,
            bytes: src.as_bytes(),
            pos: 0,
            line: 1,
            line_start: 0,
        }
    }

    fn col(&self, at: usize) -> u32 {
        // Columns count bytes; saturate on absurdly long lines.
        u32::try_from(at - self.line_start + 1).unwrap_or(u32::MAX)
    }

    /// Skips whitespace and comments; returns whether anything was skipped.
    fn skip_trivia(&mut self) -> bool {
        let start = self.pos;
        while self.pos < self.bytes.len() {
            let b = self.bytes[self.pos];
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.line = self.line.saturating_add(1);
                    self.line_start = self.pos;
                }
                b' ' | b'\t' | b'\r' | 0x0b | 0x0c => self.pos += 1,
                b'/' if self.bytes.get(self.pos + 1) == Some(&b'/') => {
                    while self.pos < self.bytes.len() && self.bytes[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'/' if self.bytes.get(self.pos + 1) == Some(&b'*') => {
                    self.pos += 2;
                    loop {
                        if self.pos >= self.bytes.len() {
                            break;
                        }
                        if self.bytes[self.pos] == b'*'
                            && self.bytes.get(self.pos + 1) == Some(&b'/')
                        {
                            self.pos += 2;
                            break;
                        }
                        if self.bytes[self.pos] == b'\n' {
                            self.line = self.line.saturating_add(1);
                            self.line_start = self.pos + 1;
                        }
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
        self.pos != start
    }

    /// The whole source text.
    pub fn source(&self) -> &'a str {
        self.src
    }

    /// The current line (1-based), useful for line-oriented directives such as `.loc`.
    pub fn line(&self) -> u32 {
        self.line
    }

    /// Skips the rest of the current line up to (not past) its newline, without making tokens.
    /// Returns false, having skipped nothing, when the rest holds a string or a block comment
    /// (which may hide a newline or a `;`); the caller then skips token by token.
    pub fn skip_rest_of_line(&mut self) -> bool {
        let rest = &self.bytes[self.pos..];
        let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
        let line = &rest[..end];
        if line.contains(&b'"') || line.windows(2).any(|w| w == b"/*") {
            return false;
        }
        self.pos += end;
        true
    }

    /// Produces the next token.
    pub fn next_token(&mut self) -> Token<'a> {
        let skipped = self.skip_trivia();
        let glued = !skipped;
        let start = self.pos;
        let line = self.line;
        let col = self.col(start);
        let tok = self.lex_at(start);
        Token {
            tok,
            line,
            col,
            glued,
            start,
            end: self.pos,
        }
    }

    fn take_while(&mut self, f: impl Fn(u8) -> bool) {
        while self.pos < self.bytes.len() && f(self.bytes[self.pos]) {
            self.pos += 1;
        }
    }

    fn lex_at(&mut self, start: usize) -> Tok<'a> {
        let Some(&b) = self.bytes.get(start) else {
            return Tok::Eof;
        };
        if is_ident_start(b) {
            self.pos += 1;
            self.take_while(is_ident_cont);
            // Special registers carry a component: `%tid.x`, `%ctaid.y`.
            if b == b'%' {
                while self.bytes.get(self.pos) == Some(&b'.')
                    && self
                        .bytes
                        .get(self.pos + 1)
                        .is_some_and(|c| c.is_ascii_alphabetic())
                {
                    self.pos += 1;
                    self.take_while(is_ident_cont);
                }
            }
            if self.pos == start + 1 && b == b'%' {
                return Tok::Punct(b'%');
            }
            return Tok::Ident(&self.src[start..self.pos]);
        }
        if b == b'.' {
            if self
                .bytes
                .get(start + 1)
                .is_some_and(|c| c.is_ascii_digit())
            {
                // Texture geometries are modifiers that start with a digit: `.1d`, `.2d`, `.3d`,
                // `.2dms` (PTX ISA 9.1, "Texture Instructions: tex", 9.7.10.3: `.geom = { .1d,
                // .2d, .3d, .a1d, .a2d, .cube, .acube, .2dms, .a2dms }`). Digits followed by a
                // letter that cannot continue a number make a modifier, not a literal.
                let mut end = start + 1;
                while self.bytes.get(end).is_some_and(|c| c.is_ascii_digit()) {
                    end += 1;
                }
                let next = self.bytes.get(end).copied().unwrap_or(0);
                let exponent = matches!(next, b'e' | b'E')
                    && self
                        .bytes
                        .get(end + 1)
                        .is_some_and(|c| c.is_ascii_digit() || *c == b'+' || *c == b'-');
                if (next.is_ascii_alphabetic() || next == b'_') && !exponent {
                    self.pos = start + 1;
                    self.take_while(is_ident_cont);
                    return Tok::Dot(&self.src[start + 1..self.pos]);
                }
                return self.lex_number(start);
            }
            self.pos += 1;
            let word_start = self.pos;
            loop {
                self.take_while(is_ident_cont);
                // `.shared::cta`, `.L2::cache_hint`
                if self.bytes.get(self.pos) == Some(&b':')
                    && self.bytes.get(self.pos + 1) == Some(&b':')
                    && self
                        .bytes
                        .get(self.pos + 2)
                        .is_some_and(|c| is_ident_cont(*c))
                {
                    self.pos += 2;
                    continue;
                }
                break;
            }
            if self.pos == word_start {
                return Tok::Bad("a lone `.`");
            }
            return Tok::Dot(&self.src[word_start..self.pos]);
        }
        if b.is_ascii_digit() {
            return self.lex_number(start);
        }
        if b == b'"' {
            self.pos += 1;
            while self.pos < self.bytes.len() {
                match self.bytes[self.pos] {
                    b'"' => {
                        let s = &self.src[start + 1..self.pos];
                        self.pos += 1;
                        return Tok::Str(s);
                    }
                    b'\\' => self.pos += 2,
                    b'\n' => break,
                    _ => self.pos += 1,
                }
            }
            self.pos = self.pos.min(self.bytes.len());
            return Tok::Bad("an unterminated string");
        }
        if b"(),;:{}[]@!+-<>=|*/~&^?".contains(&b) {
            self.pos += 1;
            return Tok::Punct(b);
        }
        // Skip one whole UTF-8 character so that positions stay on char boundaries.
        let len = self.src[start..].chars().next().map_or(1, char::len_utf8);
        self.pos += len;
        Tok::Bad("a character that is not PTX")
    }

    fn lex_number(&mut self, start: usize) -> Tok<'a> {
        let bytes = self.bytes;
        let at = |i: usize| bytes.get(i).copied().unwrap_or(0);
        if at(start) == b'0' && matches!(at(start + 1), b'f' | b'F' | b'd' | b'D') {
            let double = matches!(at(start + 1), b'd' | b'D');
            self.pos = start + 2;
            self.take_while(|c| c.is_ascii_hexdigit());
            let digits = &self.src[start + 2..self.pos];
            let want = if double { 16 } else { 8 };
            if digits.len() != want {
                return Tok::Bad("a hex float literal with the wrong number of digits");
            }
            return match u64::from_str_radix(digits, 16) {
                Ok(bits) if double => Tok::Float(f64::from_bits(bits)),
                Ok(bits) => Tok::Float(f64::from(f32::from_bits(bits as u32))),
                Err(_) => Tok::Bad("a malformed hex float literal"),
            };
        }
        if at(start) == b'0' && matches!(at(start + 1), b'x' | b'X' | b'b' | b'B') {
            let radix = if matches!(at(start + 1), b'x' | b'X') {
                16
            } else {
                2
            };
            self.pos = start + 2;
            self.take_while(|c| c.is_ascii_hexdigit());
            let digits = &self.src[start + 2..self.pos];
            if at(self.pos) == b'U' {
                self.pos += 1;
            }
            return match u64::from_str_radix(digits, radix) {
                Ok(v) => Tok::Int(v),
                Err(_) => Tok::Bad("a malformed or too large integer literal"),
            };
        }
        self.pos = start;
        self.take_while(|c| c.is_ascii_digit());
        let mut is_float = false;
        if at(self.pos) == b'.' && at(self.pos + 1).is_ascii_digit() {
            is_float = true;
            self.pos += 1;
            self.take_while(|c| c.is_ascii_digit());
        }
        if matches!(at(self.pos), b'e' | b'E')
            && (at(self.pos + 1).is_ascii_digit()
                || (matches!(at(self.pos + 1), b'+' | b'-') && at(self.pos + 2).is_ascii_digit()))
        {
            is_float = true;
            self.pos += 2;
            self.take_while(|c| c.is_ascii_digit());
        }
        let text = &self.src[start..self.pos];
        if is_float {
            return match text.parse::<f64>() {
                Ok(v) => Tok::Float(v),
                Err(_) => Tok::Bad("a malformed float literal"),
            };
        }
        if at(self.pos) == b'U' {
            self.pos += 1;
        }
        let (digits, radix) = if text.len() > 1 && text.starts_with('0') {
            (&text[1..], 8)
        } else {
            (text, 10)
        };
        match u64::from_str_radix(digits, radix) {
            Ok(v) => Tok::Int(v),
            Err(_) => Tok::Bad("a malformed or too large integer literal"),
        }
    }
}

impl<'a> Iterator for Lexer<'a> {
    type Item = Token<'a>;
    fn next(&mut self) -> Option<Token<'a>> {
        let t = self.next_token();
        if t.tok == Tok::Eof {
            None
        } else {
            Some(t)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok<'_>> {
        Lexer::new(s).map(|t| t.tok).collect()
    }

    #[test]
    fn words_numbers_and_punctuation() {
        assert_eq!(
            toks("ld.global.f32 %f1, [%rd2+1024]; // c"),
            vec![
                Tok::Ident("ld"),
                Tok::Dot("global"),
                Tok::Dot("f32"),
                Tok::Ident("%f1"),
                Tok::Punct(b','),
                Tok::Punct(b'['),
                Tok::Ident("%rd2"),
                Tok::Punct(b'+'),
                Tok::Int(1024),
                Tok::Punct(b']'),
                Tok::Punct(b';'),
            ]
        );
        // 0f3F800000 is the f32 bit pattern of 1.0; 0d4000000000000000 the f64 pattern of 2.0.
        assert_eq!(
            toks("0f3F800000 0d4000000000000000"),
            vec![Tok::Float(1.0), Tok::Float(2.0)]
        );
        assert_eq!(
            toks("0x1F 017 9.5 10U"),
            vec![Tok::Int(31), Tok::Int(15), Tok::Float(9.5), Tok::Int(10)]
        );
        // Texture geometries start with a digit; a float literal with an exponent does not.
        assert_eq!(
            toks("tex.2d.v4 tex.3d tld4.r.2d .2dms .5e3"),
            vec![
                Tok::Ident("tex"),
                Tok::Dot("2d"),
                Tok::Dot("v4"),
                Tok::Ident("tex"),
                Tok::Dot("3d"),
                Tok::Ident("tld4"),
                Tok::Dot("r"),
                Tok::Dot("2d"),
                Tok::Dot("2dms"),
                Tok::Float(500.0),
            ]
        );
        assert_eq!(
            toks("%tid.x st.shared::cta"),
            vec![
                Tok::Ident("%tid.x"),
                Tok::Ident("st"),
                Tok::Dot("shared::cta")
            ]
        );
    }

    #[test]
    fn positions_and_glue() {
        let v: Vec<Token> = Lexer::new("a\n  /* x\n */ b.c").collect();
        assert_eq!((v[0].line, v[0].col), (1, 1));
        assert_eq!((v[1].line, v[1].col, v[1].glued), (3, 5, false));
        assert_eq!((v[2].line, v[2].col, v[2].glued), (3, 6, true));
    }

    #[test]
    fn bad_input_becomes_bad_tokens() {
        assert!(matches!(toks("\"abc")[0], Tok::Bad(_)));
        assert!(matches!(toks("é")[0], Tok::Bad(_)));
        assert!(matches!(toks("99999999999999999999999")[0], Tok::Bad(_)));
    }
}
