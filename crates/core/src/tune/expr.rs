//! The small part of Python that autotuning search spaces are written in: tuning-parameter value
//! lists (`"[32 * i for i in range(1, 32)]"`), restrictions (`"block_size_x*block_size_y<=1024"`)
//! and sizes (`"ProblemSize[0]*ProblemSize[1]"`).
//!
//! Supported: integers (arbitrary sign, 64-bit, overflow is an error), floats, strings, `True`
//! and `False`, lists and parenthesised tuples (both become lists), list comprehensions with
//! any number of `for` and `if` clauses, subscripts (negative indices count from the end),
//! `+ - * / // % **`, unary `+ - ~`, `& | ^ << >>`, comparison chains (`a < b <= c`, `==`,
//! `!=`, `in`, `not in`), `and`/`or`/`not` with Python's short-circuit and truthiness,
//! `x if c else y`, and the functions `range`, `len`, `max`, `min`, `abs`, `sum`, `int`, `float`.
//! Semantics follow Python 3: `/` always gives a float, `//` and `%` round toward negative
//! infinity, `int ** negative int` is a float, `True` counts as 1 in arithmetic.
//!
//! Names are resolved when an expression is compiled ([`Expr::compile`]) against the names the
//! caller binds, so a misspelt name is an error before anything is evaluated. Every error carries
//! the 1-based column where the problem is and says what was expected.
//!
//! What it does NOT do: lambdas, attribute access, dictionaries, sets, slices, `is`, `None`,
//! assignment, or any function beyond the list above.

use std::cmp::Ordering;
use std::fmt;

/// Longest list `range` or a comprehension may build (a guard against runaway inputs).
pub const MAX_LIST_LEN: usize = 10_000_000;

/// A value of the expression language.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
}

impl Value {
    /// Python's truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::List(l) => !l.is_empty(),
        }
    }

    /// The type name, as Python calls it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::List(_) => "list",
        }
    }

    /// The value as a float when it is a number (booleans count as 0 and 1).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The value as an integer when it is an int or a bool.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Bool(b) => Some(i64::from(*b)),
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The value as JSON (numbers stay numbers; a non-finite float becomes its text).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Int(i) => serde_json::Value::from(*i),
            Value::Float(f) => serde_json::Number::from_f64(*f)
                .map(serde_json::Value::Number)
                .unwrap_or_else(|| serde_json::Value::String(f.to_string())),
            Value::Str(s) => serde_json::Value::String(s.clone()),
            Value::List(l) => serde_json::Value::Array(l.iter().map(Value::to_json).collect()),
        }
    }
}

/// Python's `repr` of a float: always with a decimal point or an exponent.
fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if f == f.trunc() && f.abs() < 1e16 {
        return format!("{f:.1}");
    }
    let s = format!("{f}");
    if s.contains(['.', 'e', 'E']) {
        s
    } else {
        format!("{s}.0")
    }
}

impl fmt::Display for Value {
    /// Python's `str`: `True`, `3`, `0.5`, `abc`, `[1, 2]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(true) => f.write_str("True"),
            Value::Bool(false) => f.write_str("False"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => f.write_str(&float_repr(*x)),
            Value::Str(s) => f.write_str(s),
            Value::List(l) => {
                f.write_str("[")?;
                for (k, v) in l.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    match v {
                        Value::Str(s) => write!(f, "'{s}'")?,
                        _ => write!(f, "{v}")?,
                    }
                }
                f.write_str("]")
            }
        }
    }
}

/// A problem in an expression: the 1-based column (in characters) and what went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.column, self.message)
    }
}

type EResult<T> = std::result::Result<T, ExprError>;

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Int(i64),
    Float(f64),
    Str(String),
    Name(String),
    /// Operators and punctuation, by their text.
    Op(&'static str),
    End,
}

#[derive(Debug, Clone)]
struct Token {
    tok: Tok,
    /// 1-based column in characters.
    column: usize,
}

/// Lexes the number starting at `i`: decimal or `0x` integers, floats with a fraction and/or
/// an exponent, `_` between digits. Returns the token and the index after it.
fn lex_number(chars: &[char], start: usize) -> EResult<(Tok, usize)> {
    let digits = |mut i: usize, hex: bool| {
        while i < chars.len()
            && (chars[i] == '_'
                || if hex {
                    chars[i].is_ascii_hexdigit()
                } else {
                    chars[i].is_ascii_digit()
                })
        {
            i += 1;
        }
        i
    };
    let text = |a: usize, b: usize| {
        chars[a..b]
            .iter()
            .filter(|&&c| c != '_')
            .collect::<String>()
    };
    let bad = |end: usize| {
        let word: String = chars[start..end].iter().collect();
        ExprError {
            column: start + 1,
            message: format!("`{word}` is not a number"),
        }
    };
    let mut i = start;
    let hex = chars[i] == '0' && matches!(chars.get(i + 1), Some('x' | 'X'));
    let tok = if hex {
        i = digits(i + 2, true);
        i64::from_str_radix(&text(start + 2, i), 16)
            .map(Tok::Int)
            .map_err(|_| bad(i))?
    } else {
        i = digits(i, false);
        let mut float = false;
        if chars.get(i) == Some(&'.') {
            float = true;
            i = digits(i + 1, false);
        }
        if matches!(chars.get(i), Some('e' | 'E')) {
            let mut j = i + 1;
            if matches!(chars.get(j), Some('+' | '-')) {
                j += 1;
            }
            if chars.get(j).is_some_and(|d| d.is_ascii_digit()) {
                float = true;
                i = digits(j, false);
            }
        }
        let word = text(start, i);
        if float {
            word.parse().map(Tok::Float).map_err(|_| bad(i))?
        } else {
            word.parse().map(Tok::Int).map_err(|_| ExprError {
                column: start + 1,
                message: format!("`{word}` does not fit in a 64-bit integer"),
            })?
        }
    };
    if chars
        .get(i)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_')
    {
        let mut end = i;
        while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
            end += 1;
        }
        return Err(bad(end));
    }
    Ok((tok, i))
}

const OPERATORS: &[&str] = &[
    "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "+", "-", "*", "/", "%", "<", ">", "(", ")",
    "[", "]", ",", "&", "|", "^", "~", ":",
];

fn lex(text: &str) -> EResult<Vec<Token>> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |column: usize, message: String| ExprError { column, message };
    while i < chars.len() {
        let c = chars[i];
        let column = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()))
        {
            let (tok, next) = lex_number(&chars, i)?;
            out.push(Token { tok, column });
            i = next;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Name(chars[start..i].iter().collect()),
                column,
            });
            continue;
        }
        if c == '\'' || c == '"' {
            let quote = c;
            i += 1;
            let start = i;
            while i < chars.len() && chars[i] != quote {
                i += 1;
            }
            if i == chars.len() {
                return Err(err(
                    column,
                    format!("string opened with {quote} is not closed"),
                ));
            }
            out.push(Token {
                tok: Tok::Str(chars[start..i].iter().collect()),
                column,
            });
            i += 1;
            continue;
        }
        let rest: String = chars[i..chars.len().min(i + 2)].iter().collect();
        match OPERATORS.iter().find(|op| rest.starts_with(**op)) {
            Some(op) => {
                out.push(Token {
                    tok: Tok::Op(op),
                    column,
                });
                i += op.chars().count();
            }
            None => return Err(err(column, format!("unexpected character `{c}`"))),
        }
    }
    out.push(Token {
        tok: Tok::End,
        column: chars.len() + 1,
    });
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    In,
    NotIn,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum UnOp {
    Neg,
    Pos,
    Invert,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    Range,
    Len,
    Max,
    Min,
    Abs,
    Sum,
    Int,
    Float,
}

const BUILTINS: &[(&str, Builtin)] = &[
    ("range", Builtin::Range),
    ("len", Builtin::Len),
    ("max", Builtin::Max),
    ("min", Builtin::Min),
    ("abs", Builtin::Abs),
    ("sum", Builtin::Sum),
    ("int", Builtin::Int),
    ("float", Builtin::Float),
];

#[derive(Debug, Clone)]
enum Clause {
    For { var: Name, iter: Node },
    If(Node),
}

/// A name: as written until resolved, then its slot in the environment.
#[derive(Debug, Clone)]
struct Name {
    text: String,
    column: usize,
    slot: usize,
}

#[derive(Debug, Clone)]
enum Node {
    Const(Value),
    Var(Name),
    List(Vec<Node>),
    Comp {
        elem: Box<Node>,
        clauses: Vec<Clause>,
    },
    Unary(UnOp, Box<Node>, usize),
    Binary(BinOp, Box<Node>, Box<Node>, usize),
    Compare(Box<Node>, Vec<(CmpOp, Node, usize)>),
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    IfElse {
        then: Box<Node>,
        cond: Box<Node>,
        other: Box<Node>,
    },
    Call(Builtin, Vec<Node>, usize),
    Index(Box<Node>, Box<Node>, usize),
}

const KEYWORDS: &[&str] = &[
    "and", "or", "not", "in", "is", "for", "if", "else", "lambda", "None", "True", "False",
];

struct Parser {
    toks: Vec<Token>,
    at: usize,
    /// Nesting depth of the recursive descent (parentheses, unary operators, `not`).
    depth: usize,
}

/// Deepest nesting an expression may have: the published specs nest a handful of levels; a
/// bound keeps a hostile `((((...` from overflowing the stack.
const MAX_NESTING: usize = 64;

impl Parser {
    fn peek(&self) -> &Tok {
        &self.toks[self.at].tok
    }
    fn column(&self) -> usize {
        self.toks[self.at].column
    }
    fn bump(&mut self) -> Token {
        let t = self.toks[self.at].clone();
        if self.at + 1 < self.toks.len() {
            self.at += 1;
        }
        t
    }
    fn is_op(&self, op: &str) -> bool {
        matches!(self.peek(), Tok::Op(o) if *o == op)
    }
    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Tok::Name(n) if n == kw)
    }
    fn eat_op(&mut self, op: &str) -> bool {
        let yes = self.is_op(op);
        if yes {
            self.bump();
        }
        yes
    }
    fn eat_kw(&mut self, kw: &str) -> bool {
        let yes = self.is_kw(kw);
        if yes {
            self.bump();
        }
        yes
    }
    fn describe(&self) -> String {
        match self.peek() {
            Tok::Int(i) => format!("`{i}`"),
            Tok::Float(f) => format!("`{}`", float_repr(*f)),
            Tok::Str(s) => format!("the string '{s}'"),
            Tok::Name(n) => format!("`{n}`"),
            Tok::Op(o) => format!("`{o}`"),
            Tok::End => "the end of the expression".into(),
        }
    }
    fn expected(&self, what: &str) -> ExprError {
        ExprError {
            column: self.column(),
            message: format!("expected {what}, found {}", self.describe()),
        }
    }
    fn expect_op(&mut self, op: &str, what: &str) -> EResult<()> {
        if self.eat_op(op) {
            Ok(())
        } else {
            Err(self.expected(what))
        }
    }

    fn expr(&mut self) -> EResult<Node> {
        if self.is_kw("lambda") {
            return Err(ExprError {
                column: self.column(),
                message: "lambda expressions are not supported".into(),
            });
        }
        let then = self.or_expr()?;
        if self.eat_kw("if") {
            let cond = self.or_expr()?;
            if !self.eat_kw("else") {
                return Err(self.expected("`else` of the conditional expression"));
            }
            let other = self.expr()?;
            return Ok(Node::IfElse {
                then: Box::new(then),
                cond: Box::new(cond),
                other: Box::new(other),
            });
        }
        Ok(then)
    }

    fn or_expr(&mut self) -> EResult<Node> {
        let first = self.and_expr()?;
        if !self.is_kw("or") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_kw("or") {
            items.push(self.and_expr()?);
        }
        Ok(Node::Or(items))
    }

    fn and_expr(&mut self) -> EResult<Node> {
        let first = self.not_expr()?;
        if !self.is_kw("and") {
            return Ok(first);
        }
        let mut items = vec![first];
        while self.eat_kw("and") {
            items.push(self.not_expr()?);
        }
        Ok(Node::And(items))
    }

    /// Runs `f` one nesting level deeper, or fails past [`MAX_NESTING`].
    fn nested<T>(&mut self, f: impl FnOnce(&mut Self) -> EResult<T>) -> EResult<T> {
        if self.depth >= MAX_NESTING {
            return Err(ExprError {
                column: self.column(),
                message: format!("the expression nests more than {MAX_NESTING} levels deep"),
            });
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    fn not_expr(&mut self) -> EResult<Node> {
        self.nested(|p| {
            if p.eat_kw("not") {
                return Ok(Node::Not(Box::new(p.not_expr()?)));
            }
            p.comparison()
        })
    }

    fn cmp_op(&mut self) -> EResult<Option<(CmpOp, usize)>> {
        let column = self.column();
        let op = match self.peek() {
            Tok::Op("<") => CmpOp::Lt,
            Tok::Op("<=") => CmpOp::Le,
            Tok::Op(">") => CmpOp::Gt,
            Tok::Op(">=") => CmpOp::Ge,
            Tok::Op("==") => CmpOp::Eq,
            Tok::Op("!=") => CmpOp::Ne,
            Tok::Name(n) if n == "in" => CmpOp::In,
            Tok::Name(n) if n == "is" => {
                return Err(ExprError {
                    column,
                    message: "`is` is not supported; compare values with `==`".into(),
                })
            }
            Tok::Name(n) if n == "not" => {
                self.bump();
                if !self.is_kw("in") {
                    return Err(self.expected("`in` after `not` in a comparison"));
                }
                self.bump();
                return Ok(Some((CmpOp::NotIn, column)));
            }
            _ => return Ok(None),
        };
        self.bump();
        Ok(Some((op, column)))
    }

    fn comparison(&mut self) -> EResult<Node> {
        let first = self.bit_or()?;
        let mut rest = Vec::new();
        while let Some((op, column)) = self.cmp_op()? {
            rest.push((op, self.bit_or()?, column));
        }
        if rest.is_empty() {
            Ok(first)
        } else {
            Ok(Node::Compare(Box::new(first), rest))
        }
    }

    fn binary_level(
        &mut self,
        ops: &[(&str, BinOp)],
        next: fn(&mut Self) -> EResult<Node>,
    ) -> EResult<Node> {
        let mut left = next(self)?;
        'outer: loop {
            for (text, op) in ops {
                if self.is_op(text) {
                    let column = self.column();
                    self.bump();
                    let right = next(self)?;
                    left = Node::Binary(*op, Box::new(left), Box::new(right), column);
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }

    fn bit_or(&mut self) -> EResult<Node> {
        self.binary_level(&[("|", BinOp::BitOr)], Self::bit_xor)
    }
    fn bit_xor(&mut self) -> EResult<Node> {
        self.binary_level(&[("^", BinOp::BitXor)], Self::bit_and)
    }
    fn bit_and(&mut self) -> EResult<Node> {
        self.binary_level(&[("&", BinOp::BitAnd)], Self::shift)
    }
    fn shift(&mut self) -> EResult<Node> {
        self.binary_level(&[("<<", BinOp::Shl), (">>", BinOp::Shr)], Self::arith)
    }
    fn arith(&mut self) -> EResult<Node> {
        self.binary_level(&[("+", BinOp::Add), ("-", BinOp::Sub)], Self::term)
    }
    fn term(&mut self) -> EResult<Node> {
        self.binary_level(
            &[
                ("*", BinOp::Mul),
                ("//", BinOp::FloorDiv),
                ("/", BinOp::Div),
                ("%", BinOp::Mod),
            ],
            Self::factor,
        )
    }

    fn factor(&mut self) -> EResult<Node> {
        self.nested(Self::factor_inner)
    }

    fn factor_inner(&mut self) -> EResult<Node> {
        let column = self.column();
        let op = if self.eat_op("-") {
            Some(UnOp::Neg)
        } else if self.eat_op("+") {
            Some(UnOp::Pos)
        } else if self.eat_op("~") {
            Some(UnOp::Invert)
        } else {
            None
        };
        match op {
            Some(op) => Ok(Node::Unary(op, Box::new(self.factor()?), column)),
            None => self.power(),
        }
    }

    fn power(&mut self) -> EResult<Node> {
        let base = self.primary()?;
        if self.is_op("**") {
            let column = self.column();
            self.bump();
            // Right-associative, and the exponent may carry a sign: 2 ** -1.
            let exp = self.factor()?;
            return Ok(Node::Binary(
                BinOp::Pow,
                Box::new(base),
                Box::new(exp),
                column,
            ));
        }
        Ok(base)
    }

    fn primary(&mut self) -> EResult<Node> {
        let mut node = self.atom()?;
        loop {
            if self.is_op("(") {
                let column = self.column();
                let Node::Var(name) = &node else {
                    return Err(ExprError {
                        column,
                        message: "only the functions range, len, max, min, abs, sum, int and float can be called".into(),
                    });
                };
                let Some((_, b)) = BUILTINS.iter().find(|(n, _)| *n == name.text) else {
                    return Err(ExprError {
                        column: name.column,
                        message: format!(
                            "unknown function `{}`; the functions are range, len, max, min, abs, sum, int and float",
                            name.text
                        ),
                    });
                };
                let call_column = name.column;
                self.bump();
                let mut args = Vec::new();
                if !self.is_op(")") {
                    loop {
                        args.push(self.expr()?);
                        if !self.eat_op(",") || self.is_op(")") {
                            break;
                        }
                    }
                }
                self.expect_op(")", "`,` or `)` in the argument list")?;
                node = Node::Call(*b, args, call_column);
            } else if self.is_op("[") {
                let column = self.column();
                self.bump();
                if self.is_op(":") {
                    return Err(ExprError {
                        column: self.column(),
                        message: "slices are not supported".into(),
                    });
                }
                let index = self.expr()?;
                if self.is_op(":") {
                    return Err(ExprError {
                        column: self.column(),
                        message: "slices are not supported".into(),
                    });
                }
                self.expect_op("]", "`]` after the index")?;
                node = Node::Index(Box::new(node), Box::new(index), column);
            } else {
                return Ok(node);
            }
        }
    }

    fn atom(&mut self) -> EResult<Node> {
        let column = self.column();
        match self.peek().clone() {
            Tok::Int(i) => {
                self.bump();
                Ok(Node::Const(Value::Int(i)))
            }
            Tok::Float(f) => {
                self.bump();
                Ok(Node::Const(Value::Float(f)))
            }
            Tok::Str(s) => {
                self.bump();
                let mut s = s;
                // Adjacent string literals concatenate.
                while let Tok::Str(more) = self.peek().clone() {
                    self.bump();
                    s.push_str(&more);
                }
                Ok(Node::Const(Value::Str(s)))
            }
            Tok::Name(n) => match n.as_str() {
                "True" => {
                    self.bump();
                    Ok(Node::Const(Value::Bool(true)))
                }
                "False" => {
                    self.bump();
                    Ok(Node::Const(Value::Bool(false)))
                }
                "None" => Err(ExprError {
                    column,
                    message: "`None` is not supported".into(),
                }),
                kw if KEYWORDS.contains(&kw) => Err(self.expected("a value")),
                _ => {
                    self.bump();
                    Ok(Node::Var(Name {
                        text: n,
                        column,
                        slot: usize::MAX,
                    }))
                }
            },
            Tok::Op("(") => {
                self.bump();
                if self.eat_op(")") {
                    return Ok(Node::List(Vec::new()));
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    return Err(ExprError {
                        column: self.column(),
                        message: "generator expressions are not supported; write a list comprehension in [ ]".into(),
                    });
                }
                if !self.is_op(",") {
                    self.expect_op(")", "`)`")?;
                    return Ok(first);
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.is_op(")") {
                        break;
                    }
                    items.push(self.expr()?);
                }
                self.expect_op(")", "`,` or `)` in the tuple")?;
                Ok(Node::List(items))
            }
            Tok::Op("[") => {
                self.bump();
                if self.eat_op("]") {
                    return Ok(Node::List(Vec::new()));
                }
                let first = self.expr()?;
                if self.is_kw("for") {
                    let clauses = self.comp_clauses()?;
                    self.expect_op("]", "`]` closing the list comprehension")?;
                    return Ok(Node::Comp {
                        elem: Box::new(first),
                        clauses,
                    });
                }
                let mut items = vec![first];
                while self.eat_op(",") {
                    if self.is_op("]") {
                        break;
                    }
                    items.push(self.expr()?);
                }
                self.expect_op("]", "`,` or `]` in the list")?;
                Ok(Node::List(items))
            }
            _ => Err(self.expected("a value")),
        }
    }

    fn comp_clauses(&mut self) -> EResult<Vec<Clause>> {
        let mut clauses = Vec::new();
        loop {
            if self.eat_kw("for") {
                let column = self.column();
                let var = match self.peek().clone() {
                    Tok::Name(n) if !KEYWORDS.contains(&n.as_str()) => {
                        self.bump();
                        n
                    }
                    _ => return Err(self.expected("a variable name after `for`")),
                };
                if !self.eat_kw("in") {
                    return Err(self.expected("`in` after the comprehension variable"));
                }
                let iter = self.or_expr()?;
                clauses.push(Clause::For {
                    var: Name {
                        text: var,
                        column,
                        slot: usize::MAX,
                    },
                    iter,
                });
            } else if self.eat_kw("if") {
                clauses.push(Clause::If(self.or_expr()?));
            } else {
                return Ok(clauses);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Name resolution

fn resolve(node: &mut Node, scope: &mut Vec<String>, globals: usize) -> EResult<()> {
    match node {
        Node::Const(_) => Ok(()),
        Node::Var(name) => match scope.iter().rposition(|s| *s == name.text) {
            Some(slot) => {
                name.slot = slot;
                Ok(())
            }
            None => {
                let known: Vec<&str> = scope[..globals].iter().map(String::as_str).collect();
                let hint = if BUILTINS.iter().any(|(n, _)| *n == name.text) {
                    format!("`{}` is a function; call it with ( )", name.text)
                } else if known.is_empty() {
                    format!("unknown name `{}`; no names are defined here", name.text)
                } else {
                    format!(
                        "unknown name `{}`; known names: {}",
                        name.text,
                        known.join(", ")
                    )
                };
                Err(ExprError {
                    column: name.column,
                    message: hint,
                })
            }
        },
        Node::List(items) | Node::And(items) | Node::Or(items) | Node::Call(_, items, _) => items
            .iter_mut()
            .try_for_each(|n| resolve(n, scope, globals)),
        Node::Comp { elem, clauses } => {
            let depth = scope.len();
            for c in clauses.iter_mut() {
                match c {
                    Clause::For { var, iter } => {
                        resolve(iter, scope, globals)?;
                        var.slot = scope.len();
                        scope.push(var.text.clone());
                    }
                    Clause::If(cond) => resolve(cond, scope, globals)?,
                }
            }
            let r = resolve(elem, scope, globals);
            scope.truncate(depth);
            r
        }
        Node::Unary(_, a, _) | Node::Not(a) => resolve(a, scope, globals),
        Node::Binary(_, a, b, _) | Node::Index(a, b, _) => {
            resolve(a, scope, globals)?;
            resolve(b, scope, globals)
        }
        Node::Compare(first, rest) => {
            resolve(first, scope, globals)?;
            rest.iter_mut()
                .try_for_each(|(_, n, _)| resolve(n, scope, globals))
        }
        Node::IfElse { then, cond, other } => {
            resolve(then, scope, globals)?;
            resolve(cond, scope, globals)?;
            resolve(other, scope, globals)
        }
    }
}

fn collect_globals(node: &Node, globals: usize, out: &mut Vec<usize>) {
    let mut push = |slot: usize| {
        if slot < globals && !out.contains(&slot) {
            out.push(slot);
        }
    };
    match node {
        Node::Const(_) => {}
        Node::Var(n) => push(n.slot),
        Node::List(items) | Node::And(items) | Node::Or(items) | Node::Call(_, items, _) => {
            items.iter().for_each(|n| collect_globals(n, globals, out))
        }
        Node::Comp { elem, clauses } => {
            for c in clauses {
                match c {
                    Clause::For { iter, .. } => collect_globals(iter, globals, out),
                    Clause::If(cond) => collect_globals(cond, globals, out),
                }
            }
            collect_globals(elem, globals, out);
        }
        Node::Unary(_, a, _) | Node::Not(a) => collect_globals(a, globals, out),
        Node::Binary(_, a, b, _) | Node::Index(a, b, _) => {
            collect_globals(a, globals, out);
            collect_globals(b, globals, out);
        }
        Node::Compare(first, rest) => {
            collect_globals(first, globals, out);
            rest.iter()
                .for_each(|(_, n, _)| collect_globals(n, globals, out));
        }
        Node::IfElse { then, cond, other } => {
            collect_globals(then, globals, out);
            collect_globals(cond, globals, out);
            collect_globals(other, globals, out);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Compiled expressions and evaluation

/// A parsed expression whose names are bound to positions of the environment it is
/// evaluated in.
#[derive(Debug, Clone)]
pub struct Expr {
    root: Node,
    globals: usize,
    /// The global slots the expression reads, in order of first use.
    used: Vec<usize>,
}

impl Expr {
    /// Parses `text` with `names` as the only free names (slot k is `names[k]`).
    pub fn compile(text: &str, names: &[&str]) -> EResult<Expr> {
        let toks = lex(text)?;
        let mut p = Parser {
            toks,
            at: 0,
            depth: 0,
        };
        let mut root = p.expr()?;
        if p.peek() != &Tok::End {
            return Err(p.expected("an operator or the end of the expression"));
        }
        let mut scope: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        resolve(&mut root, &mut scope, names.len())?;
        let mut used = Vec::new();
        collect_globals(&root, names.len(), &mut used);
        Ok(Expr {
            root,
            globals: names.len(),
            used,
        })
    }

    /// The positions of the names the expression reads.
    pub fn uses(&self) -> &[usize] {
        &self.used
    }

    /// Evaluates with `env[k]` as the value of `names[k]` of [`Expr::compile`].
    pub fn eval(&self, env: &[Value]) -> EResult<Value> {
        if env.len() < self.globals {
            return Err(ExprError {
                column: 1,
                message: format!("{} values bound for {} names", env.len(), self.globals),
            });
        }
        let mut frame: Vec<Value> = env[..self.globals].to_vec();
        eval(&self.root, &mut frame)
    }

    /// Evaluates an expression without free names.
    pub fn eval_constant(text: &str) -> EResult<Value> {
        Expr::compile(text, &[])?.eval(&[])
    }
}

fn type_error(column: usize, message: String) -> ExprError {
    ExprError { column, message }
}

fn eval(node: &Node, env: &mut Vec<Value>) -> EResult<Value> {
    match node {
        Node::Const(v) => Ok(v.clone()),
        Node::Var(n) => Ok(env[n.slot].clone()),
        Node::List(items) => items
            .iter()
            .map(|n| eval(n, env))
            .collect::<EResult<Vec<_>>>()
            .map(Value::List),
        Node::Comp { elem, clauses } => {
            let mut out = Vec::new();
            comprehension(elem, clauses, env, &mut out)?;
            Ok(Value::List(out))
        }
        Node::Unary(op, a, column) => unary(*op, eval(a, env)?, *column),
        Node::Not(a) => Ok(Value::Bool(!eval(a, env)?.truthy())),
        Node::Binary(op, a, b, column) => {
            let a = eval(a, env)?;
            let b = eval(b, env)?;
            binary(*op, &a, &b, *column)
        }
        Node::Compare(first, rest) => {
            let mut left = eval(first, env)?;
            for (op, n, column) in rest {
                let right = eval(n, env)?;
                if !compare(*op, &left, &right, *column)? {
                    return Ok(Value::Bool(false));
                }
                left = right;
            }
            Ok(Value::Bool(true))
        }
        Node::And(items) => {
            let mut v = Value::Bool(true);
            for n in items {
                v = eval(n, env)?;
                if !v.truthy() {
                    return Ok(v);
                }
            }
            Ok(v)
        }
        Node::Or(items) => {
            let mut v = Value::Bool(false);
            for n in items {
                v = eval(n, env)?;
                if v.truthy() {
                    return Ok(v);
                }
            }
            Ok(v)
        }
        Node::IfElse { then, cond, other } => {
            if eval(cond, env)?.truthy() {
                eval(then, env)
            } else {
                eval(other, env)
            }
        }
        Node::Call(b, args, column) => {
            let args = args
                .iter()
                .map(|n| eval(n, env))
                .collect::<EResult<Vec<_>>>()?;
            call(*b, args, *column)
        }
        Node::Index(a, i, column) => {
            let a = eval(a, env)?;
            let i = eval(i, env)?;
            index(&a, &i, *column)
        }
    }
}

fn comprehension(
    elem: &Node,
    clauses: &[Clause],
    env: &mut Vec<Value>,
    out: &mut Vec<Value>,
) -> EResult<()> {
    let Some((first, rest)) = clauses.split_first() else {
        if out.len() >= MAX_LIST_LEN {
            return Err(type_error(
                1,
                format!("the list comprehension builds more than {MAX_LIST_LEN} values"),
            ));
        }
        out.push(eval(elem, env)?);
        return Ok(());
    };
    match first {
        Clause::If(cond) => {
            if eval(cond, env)?.truthy() {
                comprehension(elem, rest, env, out)?;
            }
            Ok(())
        }
        Clause::For { var, iter } => {
            let items = match eval(iter, env)? {
                Value::List(l) => l,
                Value::Str(s) => s.chars().map(|c| Value::Str(c.to_string())).collect(),
                other => {
                    return Err(type_error(
                        var.column,
                        format!("cannot iterate over a {}", other.type_name()),
                    ))
                }
            };
            for item in items {
                if env.len() <= var.slot {
                    env.resize(var.slot + 1, Value::Int(0));
                }
                env[var.slot] = item;
                comprehension(elem, rest, env, out)?;
            }
            Ok(())
        }
    }
}

fn overflow(column: usize) -> ExprError {
    type_error(
        column,
        "integer overflow (results must fit in 64 bits)".into(),
    )
}

fn unary(op: UnOp, a: Value, column: usize) -> EResult<Value> {
    match (op, &a) {
        (UnOp::Pos, Value::Float(_) | Value::Int(_)) => Ok(a),
        (UnOp::Pos, Value::Bool(b)) => Ok(Value::Int(i64::from(*b))),
        (UnOp::Neg, Value::Float(f)) => Ok(Value::Float(-f)),
        (UnOp::Neg | UnOp::Invert, Value::Int(_) | Value::Bool(_)) => {
            let i = a.as_i64().unwrap_or(0);
            if op == UnOp::Neg {
                i.checked_neg()
                    .map(Value::Int)
                    .ok_or_else(|| overflow(column))
            } else {
                Ok(Value::Int(!i))
            }
        }
        _ => Err(type_error(
            column,
            format!(
                "bad operand type for unary {}: {}",
                match op {
                    UnOp::Neg => "-",
                    UnOp::Pos => "+",
                    UnOp::Invert => "~",
                },
                a.type_name()
            ),
        )),
    }
}

fn op_text(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "+",
        BinOp::Sub => "-",
        BinOp::Mul => "*",
        BinOp::Div => "/",
        BinOp::FloorDiv => "//",
        BinOp::Mod => "%",
        BinOp::Pow => "**",
        BinOp::BitAnd => "&",
        BinOp::BitOr => "|",
        BinOp::BitXor => "^",
        BinOp::Shl => "<<",
        BinOp::Shr => ">>",
    }
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Bool(_) | Value::Int(_) | Value::Float(_))
}

fn repeat<T: Clone>(items: &[T], times: i64, column: usize) -> EResult<Vec<T>> {
    let n = usize::try_from(times.max(0)).unwrap_or(usize::MAX);
    if items.len().saturating_mul(n) > MAX_LIST_LEN {
        return Err(type_error(
            column,
            format!("the repeated list would hold more than {MAX_LIST_LEN} values"),
        ));
    }
    Ok((0..n).flat_map(|_| items.iter().cloned()).collect())
}

fn binary(op: BinOp, a: &Value, b: &Value, column: usize) -> EResult<Value> {
    let unsupported = || {
        type_error(
            column,
            format!(
                "unsupported operand types for {}: {} and {}",
                op_text(op),
                a.type_name(),
                b.type_name()
            ),
        )
    };
    // Sequences first.
    match (op, a, b) {
        (BinOp::Add, Value::List(x), Value::List(y)) => {
            let mut v = x.clone();
            v.extend(y.iter().cloned());
            return Ok(Value::List(v));
        }
        (BinOp::Add, Value::Str(x), Value::Str(y)) => return Ok(Value::Str(format!("{x}{y}"))),
        (BinOp::Mul, Value::List(l), n @ (Value::Int(_) | Value::Bool(_)))
        | (BinOp::Mul, n @ (Value::Int(_) | Value::Bool(_)), Value::List(l)) => {
            return Ok(Value::List(repeat(l, n.as_i64().unwrap_or(0), column)?));
        }
        (BinOp::Mul, Value::Str(s), n @ (Value::Int(_) | Value::Bool(_)))
        | (BinOp::Mul, n @ (Value::Int(_) | Value::Bool(_)), Value::Str(s)) => {
            let chars: Vec<char> = s.chars().collect();
            return Ok(Value::Str(
                repeat(&chars, n.as_i64().unwrap_or(0), column)?
                    .into_iter()
                    .collect(),
            ));
        }
        _ => {}
    }
    if !is_number(a) || !is_number(b) {
        return Err(unsupported());
    }
    let zero_division = || type_error(column, "division by zero".into());
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        return match op {
            BinOp::Add => x
                .checked_add(y)
                .map(Value::Int)
                .ok_or_else(|| overflow(column)),
            BinOp::Sub => x
                .checked_sub(y)
                .map(Value::Int)
                .ok_or_else(|| overflow(column)),
            BinOp::Mul => x
                .checked_mul(y)
                .map(Value::Int)
                .ok_or_else(|| overflow(column)),
            BinOp::Div => {
                if y == 0 {
                    Err(zero_division())
                } else {
                    Ok(Value::Float(x as f64 / y as f64))
                }
            }
            BinOp::FloorDiv | BinOp::Mod => {
                if y == 0 {
                    return Err(zero_division());
                }
                let (mut q, mut r) = (
                    x.checked_div(y).ok_or_else(|| overflow(column))?,
                    x.checked_rem(y).ok_or_else(|| overflow(column))?,
                );
                if r != 0 && ((r < 0) != (y < 0)) {
                    q -= 1;
                    r += y;
                }
                Ok(Value::Int(if op == BinOp::FloorDiv { q } else { r }))
            }
            BinOp::Pow => {
                if y < 0 {
                    if x == 0 {
                        return Err(type_error(
                            column,
                            "0 cannot be raised to a negative power".into(),
                        ));
                    }
                    Ok(Value::Float((x as f64).powf(y as f64)))
                } else {
                    u32::try_from(y)
                        .ok()
                        .and_then(|e| x.checked_pow(e))
                        .map(Value::Int)
                        .ok_or_else(|| overflow(column))
                }
            }
            BinOp::BitAnd => Ok(Value::Int(x & y)),
            BinOp::BitOr => Ok(Value::Int(x | y)),
            BinOp::BitXor => Ok(Value::Int(x ^ y)),
            BinOp::Shl | BinOp::Shr => {
                if y < 0 {
                    return Err(type_error(column, "negative shift count".into()));
                }
                if op == BinOp::Shr {
                    Ok(Value::Int(if y >= 64 { x >> 63 } else { x >> y }))
                } else {
                    u32::try_from(y)
                        .ok()
                        .filter(|&s| s < 64)
                        .and_then(|s| x.checked_mul(1i64 << s))
                        .map(Value::Int)
                        .ok_or_else(|| overflow(column))
                }
            }
        };
    }
    let (x, y) = (a.as_f64().unwrap_or(0.0), b.as_f64().unwrap_or(0.0));
    let v = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div | BinOp::FloorDiv | BinOp::Mod if y == 0.0 => return Err(zero_division()),
        BinOp::Div => x / y,
        BinOp::FloorDiv => (x / y).floor(),
        BinOp::Mod => x - y * (x / y).floor(),
        BinOp::Pow => {
            if x == 0.0 && y < 0.0 {
                return Err(type_error(
                    column,
                    "0.0 cannot be raised to a negative power".into(),
                ));
            }
            x.powf(y)
        }
        _ => return Err(unsupported()),
    };
    Ok(Value::Float(v))
}

/// Python's ordering of two values, when they can be ordered.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.cmp(y)),
        (Value::List(x), Value::List(y)) => {
            for (p, q) in x.iter().zip(y) {
                match order(p, q)? {
                    Ordering::Equal => continue,
                    o => return Some(o),
                }
            }
            Some(x.len().cmp(&y.len()))
        }
        _ => match (a.as_i64(), b.as_i64()) {
            (Some(x), Some(y)) => Some(x.cmp(&y)),
            _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
        },
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        _ => order(a, b) == Some(Ordering::Equal),
    }
}

fn compare(op: CmpOp, a: &Value, b: &Value, column: usize) -> EResult<bool> {
    match op {
        CmpOp::Eq => Ok(equal(a, b)),
        CmpOp::Ne => Ok(!equal(a, b)),
        CmpOp::In | CmpOp::NotIn => {
            let found = match (a, b) {
                (_, Value::List(l)) => l.iter().any(|x| equal(a, x)),
                (Value::Str(x), Value::Str(y)) => y.contains(x.as_str()),
                _ => {
                    return Err(type_error(
                        column,
                        format!(
                            "`in` needs a list or a string on its right, got {}",
                            b.type_name()
                        ),
                    ))
                }
            };
            Ok(found == (op == CmpOp::In))
        }
        _ => {
            let o = order(a, b).ok_or_else(|| {
                type_error(
                    column,
                    format!("cannot order {} and {}", a.type_name(), b.type_name()),
                )
            })?;
            Ok(match op {
                CmpOp::Lt => o == Ordering::Less,
                CmpOp::Le => o != Ordering::Greater,
                CmpOp::Gt => o == Ordering::Greater,
                _ => o != Ordering::Less,
            })
        }
    }
}

fn index(a: &Value, i: &Value, column: usize) -> EResult<Value> {
    let Some(k) = i.as_i64() else {
        return Err(type_error(
            column,
            format!("indices must be integers, not {}", i.type_name()),
        ));
    };
    let items: Vec<Value> = match a {
        Value::List(l) => l.clone(),
        Value::Str(s) => s.chars().map(|c| Value::Str(c.to_string())).collect(),
        _ => {
            return Err(type_error(
                column,
                format!("a {} cannot be indexed", a.type_name()),
            ))
        }
    };
    let n = items.len() as i64;
    let at = if k < 0 { k + n } else { k };
    if at < 0 || at >= n {
        return Err(type_error(
            column,
            format!(
                "index {k} is out of range for a {} of length {n}",
                a.type_name()
            ),
        ));
    }
    Ok(items[at as usize].clone())
}

fn call(b: Builtin, args: Vec<Value>, column: usize) -> EResult<Value> {
    let name = BUILTINS
        .iter()
        .find(|(_, x)| *x == b)
        .map_or("?", |(n, _)| *n);
    let arity = |lo: usize, hi: usize| -> EResult<()> {
        if args.len() < lo || args.len() > hi {
            let want = if lo == hi {
                format!("{lo}")
            } else {
                format!("{lo} to {hi}")
            };
            return Err(type_error(
                column,
                format!("{name}() takes {want} arguments, got {}", args.len()),
            ));
        }
        Ok(())
    };
    match b {
        Builtin::Range => {
            arity(1, 3)?;
            let ints = args
                .iter()
                .map(|v| {
                    v.as_i64().ok_or_else(|| {
                        type_error(
                            column,
                            format!("range() needs integers, got {}", v.type_name()),
                        )
                    })
                })
                .collect::<EResult<Vec<i64>>>()?;
            let (start, stop, step) = match ints.as_slice() {
                [stop] => (0, *stop, 1),
                [start, stop] => (*start, *stop, 1),
                [start, stop, step] => (*start, *stop, *step),
                _ => unreachable!("arity checked"),
            };
            if step == 0 {
                return Err(type_error(column, "range() step must not be zero".into()));
            }
            let span = if step > 0 {
                (i128::from(stop) - i128::from(start)).max(0)
            } else {
                (i128::from(start) - i128::from(stop)).max(0)
            };
            let len =
                (span + i128::from(step.unsigned_abs()) - 1) / i128::from(step.unsigned_abs());
            if len > MAX_LIST_LEN as i128 {
                return Err(type_error(
                    column,
                    format!("range() of more than {MAX_LIST_LEN} values"),
                ));
            }
            Ok(Value::List(
                (0..len as i64)
                    .map(|k| Value::Int(start + k * step))
                    .collect(),
            ))
        }
        Builtin::Len => {
            arity(1, 1)?;
            match &args[0] {
                Value::List(l) => Ok(Value::Int(l.len() as i64)),
                Value::Str(s) => Ok(Value::Int(s.chars().count() as i64)),
                v => Err(type_error(
                    column,
                    format!("a {} has no len()", v.type_name()),
                )),
            }
        }
        Builtin::Max | Builtin::Min => {
            let items = match args.as_slice() {
                [] => {
                    return Err(type_error(
                        column,
                        format!("{name}() needs at least one argument"),
                    ))
                }
                [Value::List(l)] => l.clone(),
                [v] => {
                    return Err(type_error(
                        column,
                        format!(
                            "{name}() of one {} (give a list or several values)",
                            v.type_name()
                        ),
                    ))
                }
                many => many.to_vec(),
            };
            let mut best = items
                .first()
                .cloned()
                .ok_or_else(|| type_error(column, format!("{name}() of an empty list")))?;
            for v in &items[1..] {
                let o = order(v, &best).ok_or_else(|| {
                    type_error(
                        column,
                        format!(
                            "{name}() cannot order {} and {}",
                            v.type_name(),
                            best.type_name()
                        ),
                    )
                })?;
                let better = if b == Builtin::Max {
                    o == Ordering::Greater
                } else {
                    o == Ordering::Less
                };
                if better {
                    best = v.clone();
                }
            }
            Ok(best)
        }
        Builtin::Abs => {
            arity(1, 1)?;
            match &args[0] {
                Value::Float(f) => Ok(Value::Float(f.abs())),
                v @ (Value::Int(_) | Value::Bool(_)) => v
                    .as_i64()
                    .and_then(i64::checked_abs)
                    .map(Value::Int)
                    .ok_or_else(|| overflow(column)),
                v => Err(type_error(
                    column,
                    format!("bad operand type for abs(): {}", v.type_name()),
                )),
            }
        }
        Builtin::Sum => {
            arity(1, 2)?;
            let Value::List(items) = &args[0] else {
                return Err(type_error(
                    column,
                    format!("sum() needs a list, got {}", args[0].type_name()),
                ));
            };
            let mut total = args.get(1).cloned().unwrap_or(Value::Int(0));
            for v in items {
                total = binary(BinOp::Add, &total, v, column)?;
            }
            Ok(total)
        }
        Builtin::Int => {
            arity(1, 1)?;
            match &args[0] {
                Value::Float(f) if f.is_finite() && f.abs() < 9.2e18 => {
                    Ok(Value::Int(f.trunc() as i64))
                }
                Value::Str(s) => s
                    .trim()
                    .parse()
                    .map(Value::Int)
                    .map_err(|_| type_error(column, format!("int() cannot read '{s}'"))),
                v => v
                    .as_i64()
                    .map(Value::Int)
                    .ok_or_else(|| type_error(column, format!("int() of {}", v.type_name()))),
            }
        }
        Builtin::Float => {
            arity(1, 1)?;
            match &args[0] {
                Value::Str(s) => s
                    .trim()
                    .parse()
                    .map(Value::Float)
                    .map_err(|_| type_error(column, format!("float() cannot read '{s}'"))),
                v => v
                    .as_f64()
                    .map(Value::Float)
                    .ok_or_else(|| type_error(column, format!("float() of {}", v.type_name()))),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(text: &str) -> Value {
        Expr::eval_constant(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }
    fn ints(v: &[i64]) -> Value {
        Value::List(v.iter().map(|&i| Value::Int(i)).collect())
    }
    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(err(&deep).message.contains("nests more than 64 levels"));
        assert!(err(&"-".repeat(100_000))
            .message
            .contains("nests more than"));
        assert!(err(&"not ".repeat(100_000))
            .message
            .contains("nests more than"));
        let fine = format!("{}1{}", "(".repeat(20), ")".repeat(20));
        assert_eq!(Expr::eval_constant(&fine).unwrap(), Value::Int(1));
    }

    fn err(text: &str) -> ExprError {
        match Expr::eval_constant(text) {
            Ok(v) => panic!("{text} gave {v}, expected an error"),
            Err(e) => e,
        }
    }

    #[test]
    fn the_value_lists_of_the_published_specs() {
        // pnpoly.json: 32, 64, ..., 992 (31 values).
        let v = c("[32 * i for i in range(1, 32)]");
        let Value::List(l) = &v else { panic!() };
        assert_eq!(l.len(), 31);
        assert_eq!(l[0], Value::Int(32));
        assert_eq!(l[30], Value::Int(992));
        // pnpoly.json: [1] + [2, 4, ..., 20].
        assert_eq!(
            c("[1] + [2 * i for i in range(1, 11)]"),
            ints(&[1, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20])
        );
        assert_eq!(c("[1, 2, 4, 8, 16, 32]"), ints(&[1, 2, 4, 8, 16, 32]));
        assert_eq!(c("[15]"), ints(&[15]));
    }

    #[test]
    fn arithmetic_follows_python() {
        assert_eq!(c("7 // 2"), Value::Int(3));
        assert_eq!(c("-7 // 2"), Value::Int(-4)); // floor, not truncation
        assert_eq!(c("7 // -2"), Value::Int(-4));
        assert_eq!(c("-7 % 3"), Value::Int(2)); // sign of the divisor
        assert_eq!(c("7 % -3"), Value::Int(-2));
        assert_eq!(c("7 / 2"), Value::Float(3.5));
        assert_eq!(c("6 / 3"), Value::Float(2.0)); // `/` is always a float
        assert_eq!(c("2 ** 10"), Value::Int(1024));
        assert_eq!(c("2 ** 3 ** 2"), Value::Int(512)); // right-associative
        assert_eq!(c("-2 ** 2"), Value::Int(-4)); // ** binds tighter than unary minus
        assert_eq!(c("2 ** -1"), Value::Float(0.5));
        assert_eq!(c("1 + 2 * 3 - 4"), Value::Int(3));
        assert_eq!(c("(1 + 2) * 3"), Value::Int(9));
        assert_eq!(c("7.5 // 2"), Value::Float(3.0));
        assert_eq!(c("-7.5 % 2"), Value::Float(0.5));
        assert_eq!(c("True + 1"), Value::Int(2));
        assert_eq!(c("1 << 4 | 1"), Value::Int(17));
        assert_eq!(c("6 & 3 ^ 1"), Value::Int(3)); // & before ^
        assert_eq!(c("1e3"), Value::Float(1000.0));
        assert_eq!(c("2.5e-1 * 4"), Value::Float(1.0));
        assert_eq!(c("0x10"), Value::Int(16));
    }

    #[test]
    fn comparisons_chain_and_logic_short_circuits() {
        assert_eq!(c("1 < 2 <= 2"), Value::Bool(true));
        assert_eq!(c("1 < 2 > 3"), Value::Bool(false));
        assert_eq!(c("3 == 3.0"), Value::Bool(true));
        assert_eq!(c("2 in [1, 2]"), Value::Bool(true));
        assert_eq!(c("2 not in [1, 2]"), Value::Bool(false));
        assert_eq!(c("not 1 == 2"), Value::Bool(true));
        // `and`/`or` return an operand, and never evaluate the right side when not needed.
        assert_eq!(c("0 or 5"), Value::Int(5));
        assert_eq!(c("3 and 0"), Value::Int(0));
        assert_eq!(c("0 and 1 / 0"), Value::Int(0));
        assert_eq!(c("1 or 1 / 0"), Value::Int(1));
        assert_eq!(c("1 if 2 > 1 else 1 / 0"), Value::Int(1));
        assert_eq!(c("'ab' < 'b'"), Value::Bool(true));
        assert_eq!(c("[1, 2] < [1, 3]"), Value::Bool(true));
    }

    #[test]
    fn functions_and_comprehensions() {
        assert_eq!(c("max([3, 9, 2])"), Value::Int(9));
        assert_eq!(c("min(4, 2.5)"), Value::Float(2.5));
        assert_eq!(c("len(range(0, 10, 3))"), Value::Int(4)); // 0 3 6 9
        assert_eq!(c("range(5, 0, -2)"), ints(&[5, 3, 1]));
        assert_eq!(c("range(3, 1)"), ints(&[]));
        assert_eq!(c("sum([1, 2, 3])"), Value::Int(6));
        assert_eq!(c("abs(-3)"), Value::Int(3));
        assert_eq!(c("int(7.9)"), Value::Int(7));
        assert_eq!(c("float(2)"), Value::Float(2.0));
        assert_eq!(
            c("[i * j for i in range(1, 3) for j in [10, 100] if i * j != 20]"),
            ints(&[10, 100, 200])
        );
        assert_eq!(
            c("[2 ** k for k in range(5) if k % 2 == 0]"),
            ints(&[1, 4, 16])
        );
        assert_eq!(c("(1, 2)[-1]"), Value::Int(2));
        assert_eq!(c("[x for x in [1, 2]][0]"), Value::Int(1));
    }

    #[test]
    fn names_are_bound_and_reported() {
        let e = Expr::compile(
            "block_size_x*block_size_y>=64",
            &["block_size_x", "block_size_y"],
        )
        .unwrap();
        assert_eq!(e.uses(), &[0, 1]);
        assert_eq!(
            e.eval(&[Value::Int(8), Value::Int(8)]).unwrap(),
            Value::Bool(true)
        );
        assert_eq!(
            e.eval(&[Value::Int(8), Value::Int(4)]).unwrap(),
            Value::Bool(false)
        );
        let e = Expr::compile(
            "(ProblemSize[0]+max(filter_width)-1) * (ProblemSize[1]+max(filter_height)-1)",
            &["ProblemSize", "filter_width", "filter_height"],
        )
        .unwrap();
        let v = e
            .eval(&[ints(&[4096, 4096]), ints(&[15]), ints(&[15])])
            .unwrap();
        assert_eq!(v, Value::Int(4110 * 4110));
        // A comprehension variable shadows nothing outside it.
        let e = Expr::compile("[n for n in range(3)][-1] + n", &["n"]).unwrap();
        assert_eq!(e.eval(&[Value::Int(10)]).unwrap(), Value::Int(12));
    }

    #[test]
    fn errors_say_where_and_what() {
        let e = Expr::compile("[32 * i for i in rang(1, 32)]", &[]).unwrap_err();
        assert_eq!(e.column, 18);
        assert!(e.message.contains("unknown function `rang`"), "{e}");
        let e = Expr::compile("tile_x * 2", &["tile_size_x"]).unwrap_err();
        assert_eq!(e.column, 1);
        assert!(
            e.message.contains("unknown name `tile_x`") && e.message.contains("tile_size_x"),
            "{e}"
        );
        let e = err("[1, 2");
        assert_eq!(e.column, 6);
        assert!(e.message.contains("expected `,` or `]`"), "{e}");
        let e = err("1 +");
        assert_eq!(e.column, 4);
        assert!(e.message.contains("expected a value"), "{e}");
        let e = err("4 // (2 - 2)");
        assert_eq!(e.column, 3);
        assert_eq!(e.message, "division by zero");
        let e = err("1 2");
        assert_eq!(e.column, 3);
        assert!(e.message.contains("expected an operator"), "{e}");
        let e = err("2 ** 64");
        assert!(e.message.contains("overflow"), "{e}");
        let e = err("[1] * 'a'");
        assert!(e.message.contains("unsupported operand types for *"), "{e}");
        let e = err("'a' < 1");
        assert!(e.message.contains("cannot order str and int"), "{e}");
        let e = err("[1, 2][2]");
        assert!(e.message.contains("out of range"), "{e}");
        let e = err("range(1, 2, 0)");
        assert!(e.message.contains("step must not be zero"), "{e}");
        let e = err("max([])");
        assert!(e.message.contains("empty"), "{e}");
        let e = err("x + 1");
        assert!(e.message.contains("unknown name `x`"), "{e}");
        let e = err("1 is 1");
        assert!(e.message.contains("`is` is not supported"), "{e}");
        let e = err("$");
        assert_eq!(e.column, 1);
        let e = err("'abc");
        assert!(e.message.contains("not closed"), "{e}");
        let e = err("range(10**8)");
        assert!(e.message.contains("more than"), "{e}");
    }

    #[test]
    fn values_print_as_python_does() {
        assert_eq!(c("2.0").to_string(), "2.0");
        assert_eq!(c("0.1").to_string(), "0.1");
        assert_eq!(c("True").to_string(), "True");
        assert_eq!(c("[1, 'a']").to_string(), "[1, 'a']");
    }
}
