//! Recursive-descent parser for PTX modules as emitted by nvcc, NVRTC and clang (CUDA and OpenCL).
//!
//! Grammar followed (PTX ISA 9.x, chapters "Syntax", "State Spaces, Types, and Variables",
//! "Directives", "Instruction Statements"): module directives (`.version`, `.target`,
//! `.address_size`, `.file`, `.section`, `.pragma`), linkage, `.entry` / `.func` with parameter
//! lists and performance directives, `.reg` declarations with `<N>` ranges, state-space variables,
//! labels, guarded instructions with dotted modifiers and operands (registers, immediates,
//! `[addr+off]`, `{vectors}`, `(call lists)`, `%r|%p` pairs), and `.loc` debug positions.
//!
//! What it does NOT do: type checking, operand validation per opcode, or keeping debug sections
//! (they are skipped). It never panics and never stops at the first error: a statement it does
//! not understand is skipped up to its `;` with a diagnostic. Operand nesting is bounded
//! ([`MAX_NESTING`]); scopes are flattened without recursion; tokens are read on demand so that
//! memory stays proportional to what was understood.

use std::collections::VecDeque;
use std::sync::Arc;

use super::ast::*;
use super::classify::{self, Class};
use super::diag::{Diagnostic, Diagnostics, Severity};
use super::lexer::{Lexer, Tok, Token};

/// Deepest operand nesting accepted (`[{...}]` is 2).
pub const MAX_NESTING: u32 = 8;

/// Parses PTX text into a module and diagnostics.
pub fn parse(src: &str) -> (Module, Diagnostics) {
    let mut functions = Vec::new();
    let (mut module, diags) = parse_each(src, |_, f, _| functions.push(f));
    module.functions = functions;
    (module, diags)
}

/// Parses PTX text and hands each function to `sink` as soon as it is parsed, with the module
/// so far (directives and variables declared before it) and the diagnostics raised while
/// parsing it; the returned module has no functions. Memory then stays proportional to the
/// largest function instead of the whole module (`kerneltime analyze` streams this way).
pub fn parse_each(
    src: &str,
    mut sink: impl FnMut(&Module, Function, &[Diagnostic]),
) -> (Module, Diagnostics) {
    let mut p = Parser {
        lex: Lexer::new(src),
        peeked: VecDeque::new(),
        syms: std::collections::HashMap::default(),
        opcodes: std::collections::HashMap::default(),
        diags: Diagnostics::default(),
        last_loc: None,
    };
    let module = p.module(&mut sink);
    (module, p.diags)
}

/// Interned names kept across functions before the table is emptied: labels and most register
/// names are local to a function, so a module of many functions would otherwise keep every
/// one of them for the whole parse.
const MAX_INTERNED: usize = 1 << 16;

/// Parses bytes; invalid UTF-8 is replaced (and reported by the lexer as non-PTX characters).
pub fn parse_bytes(bytes: &[u8]) -> (Module, Diagnostics) {
    parse(&text_of(bytes))
}

/// Bytes as text: borrowed when they are UTF-8 (checked by the fast path of `str::from_utf8`),
/// with invalid sequences replaced by U+FFFD otherwise.
pub fn text_of(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// An interned opcode spelling: opcode, modifiers, class.
type OpcodeEntry = (Sym, Arc<[Sym]>, Class);

struct Parser<'a> {
    lex: Lexer<'a>,
    /// Interned spellings of opcodes, modifiers and operand names.
    syms: std::collections::HashMap<&'a str, Sym, BuildFx>,
    /// Interned opcode spellings (`ld.global.f32`): opcode, modifiers and class.
    opcodes: std::collections::HashMap<&'a str, OpcodeEntry, BuildFx>,
    peeked: VecDeque<Token<'a>>,
    diags: Diagnostics,
    last_loc: Option<SourceLoc>,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Dot(s) => format!("`.{s}`"),
        Tok::Int(v) => format!("`{v}`"),
        Tok::Float(v) => format!("`{v}`"),
        Tok::Str(_) => "a string".into(),
        Tok::Punct(c) => format!("`{}`", *c as char),
        Tok::Bad(what) => (*what).to_string(),
        Tok::Eof => "the end of the input".into(),
    }
}

const SPACES: &[&str] = &[
    "global",
    "const",
    "shared",
    "local",
    "param",
    "tex",
    "texref",
    "samplerref",
    "surfref",
];

/// A small fast hasher for short identifier keys (FxHash-style multiply-rotate), so that
/// interning does not dominate parsing time. Not resistant to adversarial collisions, which only
/// cost time, and the interner's size is bounded by the input.
#[derive(Default, Clone, Copy)]
pub struct FxHasher(u64);

impl FxHasher {
    /// Mixes one 64-bit word into the state.
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(w));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    /// The same value as `write` of the word's little-endian bytes, without the byte loop.
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// Builds [`FxHasher`]s.
pub type BuildFx = std::hash::BuildHasherDefault<FxHasher>;

impl<'a> Parser<'a> {
    fn sym(&mut self, s: &'a str) -> Sym {
        if let Some(x) = self.syms.get(s) {
            return x.clone();
        }
        let x = Sym::new(s);
        self.syms.insert(s, x.clone());
        x
    }

    fn peek_n(&mut self, n: usize) -> Token<'a> {
        while self.peeked.len() <= n {
            let t = self.lex.next_token();
            self.peeked.push_back(t);
        }
        self.peeked[n]
    }

    fn peek(&mut self) -> Token<'a> {
        self.peek_n(0)
    }

    fn bump(&mut self) -> Token<'a> {
        let t = self.peek();
        if t.tok != Tok::Eof {
            self.peeked.pop_front();
        }
        t
    }

    /// The name that starts at the identifier token `first` (already consumed), extended over the
    /// dotted words glued to it. PTX identifiers cannot contain `.` (PTX ISA 9.1, section
    /// "Identifiers", 4.4: `identifier: [a-zA-Z]{followsym}* | {[_$%]{followsym}+`,
    /// `followsym: [a-zA-Z0-9_$]`), but two real shapes glue words to a name: vector elements
    /// (`V.x`, `V.r`; section "Vectors as Operands", 6.4.3) and the function names of old LLVM
    /// releases (`foo.bar`, with parameters `foo.bar_param_0`). Both are kept whole here; the
    /// emulator decides what a dotted name refers to.
    fn glued_name(&mut self, first: Token<'a>) -> &'a str {
        let mut end = first.end;
        while let (Tok::Dot(_), true) = (self.peek().tok, self.peek().glued) {
            end = self.bump().end;
        }
        &self.lex.source()[first.start..end]
    }

    fn is_punct(&mut self, c: u8) -> bool {
        self.peek().tok == Tok::Punct(c)
    }

    fn eat_punct(&mut self, c: u8) -> bool {
        if self.is_punct(c) {
            self.bump();
            true
        } else {
            false
        }
    }

    fn error_at(&mut self, t: Token, message: impl Into<String>) {
        self.diags.push(Severity::Error, t.line, t.col, message);
    }

    fn unexpected(&mut self, what: &str) {
        let t = self.peek();
        let msg = format!("expected {what}, found {}", describe(&t.tok));
        self.error_at(t, msg);
    }

    /// Skips to the end of the current statement: past the next `;` at brace depth 0, or up to
    /// (not past) an unmatched `}`.
    fn skip_statement(&mut self) {
        let mut depth = 0u64;
        loop {
            match self.peek().tok {
                Tok::Eof => return,
                Tok::Punct(b'{') => depth += 1,
                Tok::Punct(b'}') => {
                    if depth == 0 {
                        return;
                    }
                    depth -= 1;
                }
                Tok::Punct(b';') if depth == 0 => {
                    self.bump();
                    return;
                }
                _ => {}
            }
            self.bump();
        }
    }

    /// Skips a `{ ... }` block starting at the current `{` (if any), braces balanced.
    fn skip_block(&mut self) {
        if !self.eat_punct(b'{') {
            return;
        }
        let mut depth = 1u64;
        while depth > 0 {
            match self.bump().tok {
                Tok::Eof => return,
                Tok::Punct(b'{') => depth += 1,
                Tok::Punct(b'}') => depth -= 1,
                _ => {}
            }
        }
    }

    /// Skips the remaining tokens on the line of `line`.
    fn skip_line(&mut self, line: u32) {
        // Nothing read ahead: skip the raw bytes (a `.loc` line is a fifth of nvcc's output).
        if self.peeked.is_empty() && self.lex.line() == line && self.lex.skip_rest_of_line() {
            return;
        }
        while self.peek().line == line && self.peek().tok != Tok::Eof {
            self.bump();
        }
    }

    fn expect_semicolon(&mut self) {
        if !self.eat_punct(b';') {
            self.unexpected("`;`");
            self.skip_statement();
        }
    }

    fn int(&mut self, what: &str) -> Option<u64> {
        match self.peek().tok {
            Tok::Int(v) => {
                self.bump();
                Some(v)
            }
            _ => {
                self.unexpected(what);
                None
            }
        }
    }

    /// Comma-separated integers (`.maxntid 256, 1, 1`).
    fn int_list(&mut self) -> Vec<u64> {
        let mut out = Vec::new();
        while let Tok::Int(v) = self.peek().tok {
            self.bump();
            out.push(v);
            if !self.eat_punct(b',') {
                break;
            }
        }
        out
    }

    fn module(&mut self, sink: &mut dyn FnMut(&Module, Function, &[Diagnostic])) -> Module {
        let mut m = Module::default();
        let mut linkage = String::new();
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Eof => break,
                Tok::Punct(b';') => {
                    self.bump();
                }
                Tok::Dot("version") => {
                    self.bump();
                    match self.bump().tok {
                        Tok::Float(v) => m.version = Some(format!("{v}")),
                        Tok::Int(v) => m.version = Some(v.to_string()),
                        other => {
                            let msg =
                                format!("expected a version number, found {}", describe(&other));
                            self.error_at(t, msg);
                        }
                    }
                }
                Tok::Dot("target") => {
                    self.bump();
                    while let Tok::Ident(s) = self.peek().tok {
                        self.bump();
                        m.target.push(s.to_string());
                        if !self.eat_punct(b',') {
                            break;
                        }
                    }
                    if m.target.is_empty() {
                        self.unexpected("a target name such as `sm_80`");
                    }
                }
                Tok::Dot("address_size") => {
                    self.bump();
                    m.address_size = self.int("an address size").map(|v| v as u32);
                }
                Tok::Dot("file") => {
                    self.bump();
                    let idx = self.int("a file index");
                    if let Tok::Str(name) = self.peek().tok {
                        self.bump();
                        if let Some(i) = idx {
                            m.files.push((i, name.to_string()));
                        }
                    } else {
                        self.unexpected("a file name");
                    }
                    // Optional `, timestamp, size`.
                    while self.eat_punct(b',') {
                        self.bump();
                    }
                }
                Tok::Dot("section") => {
                    self.bump();
                    while !matches!(
                        self.peek().tok,
                        Tok::Punct(b'{') | Tok::Eof | Tok::Punct(b';')
                    ) {
                        self.bump();
                    }
                    self.skip_block();
                }
                Tok::Dot("pragma") => {
                    self.bump();
                    if let Tok::Str(s) = self.peek().tok {
                        self.bump();
                        m.pragmas.push(s.to_string());
                    }
                    self.expect_semicolon();
                }
                Tok::Dot("loc") => {
                    self.bump();
                    self.skip_line(t.line);
                }
                Tok::Dot(l @ ("visible" | "extern" | "weak" | "common")) => {
                    self.bump();
                    linkage = l.to_string();
                    continue;
                }
                Tok::Dot("entry") | Tok::Dot("func") => {
                    let first_diag = self.diags.items.len();
                    let f = self.function(std::mem::take(&mut linkage));
                    if self.syms.len() > MAX_INTERNED {
                        self.syms.clear();
                    }
                    sink(&m, f, &self.diags.items[first_diag..]);
                }
                Tok::Dot(s) if SPACES.contains(&s) => {
                    let vars = self.variable(std::mem::take(&mut linkage));
                    m.variables.extend(vars);
                }
                Tok::Dot(s) => {
                    let msg = format!("unknown module directive `.{s}` skipped");
                    self.diags.push(Severity::Warning, t.line, t.col, msg);
                    self.bump();
                    self.skip_statement();
                }
                _ => {
                    let msg = format!("expected a directive, found {}", describe(&t.tok));
                    self.error_at(t, msg);
                    self.bump();
                    self.skip_statement();
                }
            }
            linkage.clear();
        }
        m
    }

    /// `.param .u64 .ptr .global .align 1 name[16]` (also `.reg .b32 name` and `.reg .v2 .u32
    /// name` in `.func` lists: PTX ISA 9.1, "Kernel and Function Directives: .func", 11.2.2,
    /// and "Function Declarations and Definitions", 7.1: parameters in the `.reg` or `.param`
    /// state space, scalars or vectors).
    fn param(&mut self) -> Option<Param> {
        let mut p = Param::default();
        let mut after_ptr = false;
        while let Tok::Dot(d) = self.peek().tok {
            self.bump();
            match d {
                "param" => {}
                "reg" => p.is_reg = true,
                "v2" => p.vector = Some(2),
                "v4" => p.vector = Some(4),
                "v8" => p.vector = Some(8),
                "align" => p.align = self.int("an alignment"),
                "ptr" => after_ptr = true,
                s if after_ptr && SPACES.contains(&s) => p.ptr_space = Some(s.to_string()),
                s => p.ty = s.to_string(),
            }
        }
        match self.peek().tok {
            Tok::Ident(_) => {
                let t = self.bump();
                p.name = self.glued_name(t).to_string();
            }
            // Quoted like the function's name (`"f.g_param_0"`).
            Tok::Str(n) => {
                self.bump();
                p.name = n.to_string();
            }
            _ => {
                self.unexpected("a parameter name");
                return None;
            }
        }
        if self.eat_punct(b'[') {
            p.array = match self.peek().tok {
                Tok::Int(v) => {
                    self.bump();
                    Some(v)
                }
                _ => Some(0),
            };
            if !self.eat_punct(b']') {
                self.unexpected("`]`");
            }
        }
        Some(p)
    }

    /// `( param, param, ... )`; returns None after reporting a malformed list.
    fn param_list(&mut self) -> Vec<Param> {
        let mut out = Vec::new();
        if !self.eat_punct(b'(') {
            return out;
        }
        if self.eat_punct(b')') {
            return out;
        }
        loop {
            match self.param() {
                Some(p) => out.push(p),
                None => {
                    // Recover: skip to the closing parenthesis.
                    while !matches!(
                        self.peek().tok,
                        Tok::Punct(b')') | Tok::Punct(b'{') | Tok::Punct(b';') | Tok::Eof
                    ) {
                        self.bump();
                    }
                    self.eat_punct(b')');
                    return out;
                }
            }
            if self.eat_punct(b',') {
                continue;
            }
            if !self.eat_punct(b')') {
                self.unexpected("`,` or `)` in a parameter list");
            }
            return out;
        }
    }

    fn function(&mut self, linkage: String) -> Function {
        let kw = self.bump();
        let mut f = Function {
            is_entry: kw.tok == Tok::Dot("entry"),
            linkage,
            line: kw.line,
            ..Function::default()
        };
        if !f.is_entry && self.is_punct(b'(') {
            f.returns = self.param_list();
        }
        // A name as PTX spells it (`_Z3fooPf`, `%1`), with glued dotted words (`foo.bar`, old
        // LLVM), or quoted (`"foo.bar"`, as LLVM's assembly printer quotes a symbol that is not
        // a plain identifier); the quotes are not part of the name.
        match self.peek().tok {
            Tok::Ident(_) => {
                let t = self.bump();
                f.name = self.glued_name(t).to_string();
            }
            Tok::Str(n) => {
                self.bump();
                f.name = n.to_string();
            }
            _ => self.unexpected("a function name"),
        }
        if self.is_punct(b'(') {
            f.params = self.param_list();
        }
        // Performance directives, then a body or `;`.
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Dot("maxntid") => {
                    self.bump();
                    f.performance.maxntid = self.int_list();
                }
                Tok::Dot("reqntid") => {
                    self.bump();
                    f.performance.reqntid = self.int_list();
                }
                Tok::Dot("minnctapersm") => {
                    self.bump();
                    f.performance.minnctapersm = self.int_list().first().copied();
                }
                Tok::Dot("maxnreg") => {
                    self.bump();
                    f.performance.maxnreg = self.int_list().first().copied();
                }
                Tok::Dot("pragma") => {
                    self.bump();
                    if let Tok::Str(s) = self.peek().tok {
                        self.bump();
                        f.performance.other.push(format!("pragma {s}"));
                    }
                    self.eat_punct(b';');
                }
                Tok::Dot(other) => {
                    self.bump();
                    f.performance.other.push(other.to_string());
                    self.int_list();
                }
                Tok::Punct(b';') => {
                    self.bump();
                    return f;
                }
                Tok::Punct(b'{') => {
                    self.bump();
                    f.has_body = true;
                    self.body(&mut f);
                    return f;
                }
                _ => {
                    self.unexpected("a function body `{` or `;`");
                    self.skip_statement();
                    return f;
                }
            }
        }
    }

    fn body(&mut self, f: &mut Function) {
        let mut depth = 1u64;
        loop {
            let t = self.peek();
            match t.tok {
                Tok::Eof => {
                    let msg = format!("the body of `{}` is not closed by `}}`", f.name);
                    self.error_at(t, msg);
                    return;
                }
                Tok::Punct(b'{') => {
                    self.bump();
                    depth += 1;
                }
                Tok::Punct(b'}') => {
                    self.bump();
                    depth -= 1;
                    if depth == 0 {
                        return;
                    }
                }
                Tok::Punct(b';') => {
                    self.bump();
                }
                Tok::Dot("reg") => self.reg_decl(f),
                Tok::Dot(s) if SPACES.contains(&s) => {
                    let vars = self.variable(String::new());
                    f.variables.extend(vars);
                }
                Tok::Dot("extern") | Tok::Dot("visible") | Tok::Dot("weak") => {
                    self.bump();
                    if let Tok::Dot(s) = self.peek().tok {
                        if SPACES.contains(&s) {
                            let vars = self.variable(String::new());
                            f.variables.extend(vars);
                            continue;
                        }
                    }
                    self.skip_statement();
                }
                Tok::Dot("loc") => self.loc(),
                Tok::Dot("pragma") => {
                    self.bump();
                    if let Tok::Str(s) = self.peek().tok {
                        self.bump();
                        f.body.push(Statement::Pragma {
                            text: s.to_string(),
                            line: t.line,
                        });
                    } else {
                        self.unexpected("a pragma string");
                    }
                    self.expect_semicolon();
                }
                Tok::Dot("callprototype") => {
                    self.bump();
                    self.skip_statement();
                }
                Tok::Dot(s) => {
                    let msg = format!("unknown directive `.{s}` in a function body skipped");
                    self.diags.push(Severity::Warning, t.line, t.col, msg);
                    self.bump();
                    self.skip_statement();
                }
                Tok::Ident(name) if self.peek_n(1).tok == Tok::Punct(b':') => {
                    self.bump();
                    self.bump();
                    f.body.push(Statement::Label {
                        name: name.to_string(),
                        line: t.line,
                    });
                }
                Tok::Ident(_) | Tok::Punct(b'@') => {
                    if let Some(i) = self.instruction() {
                        f.body.push(Statement::Instr(i));
                    }
                }
                _ => {
                    let msg = format!("expected an instruction, found {}", describe(&t.tok));
                    self.error_at(t, msg);
                    self.bump();
                    self.skip_statement();
                }
            }
        }
    }

    /// `.loc file line col [, function_name X, inlined_at f l c]` (ends at the end of the line).
    fn loc(&mut self) {
        let kw = self.bump();
        let mut nums = [0u64; 3];
        let mut n = 0;
        while n < 3 && self.peek().line == kw.line {
            if let Tok::Int(v) = self.peek().tok {
                self.bump();
                nums[n] = v;
                n += 1;
            } else {
                break;
            }
        }
        if n == 3 {
            self.last_loc = Some(SourceLoc {
                file: nums[0],
                line: nums[1],
                col: nums[2],
            });
        } else {
            self.diags.push(
                Severity::Warning,
                kw.line,
                kw.col,
                "`.loc` needs three numbers",
            );
        }
        self.skip_line(kw.line);
    }

    /// `.reg .b32 %r<39>, %x;`
    fn reg_decl(&mut self, f: &mut Function) {
        self.bump();
        let mut ty = String::new();
        let mut vector = None;
        while let Tok::Dot(d) = self.peek().tok {
            self.bump();
            match d {
                "v2" => vector = Some(2),
                "v4" => vector = Some(4),
                "v8" => vector = Some(8),
                "align" => {
                    self.int("an alignment");
                }
                s => ty = s.to_string(),
            }
        }
        loop {
            let first = self.peek();
            let Tok::Ident(_) = first.tok else {
                self.unexpected("a register name");
                self.skip_statement();
                return;
            };
            self.bump();
            let name = self.glued_name(first);
            let mut count = None;
            if self.eat_punct(b'<') {
                count = self.int("a register count");
                if !self.eat_punct(b'>') {
                    self.unexpected("`>`");
                    self.skip_statement();
                    return;
                }
            }
            f.registers.push(RegisterDecl {
                name: name.to_string(),
                ty: ty.clone(),
                count,
                vector,
            });
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.expect_semicolon();
    }

    /// `.shared .align 4 .b8 name[1024];` possibly with an initializer (skipped).
    fn variable(&mut self, linkage: String) -> Vec<Variable> {
        let kw = self.bump();
        let space = match kw.tok {
            Tok::Dot(s) => s.to_string(),
            _ => String::new(),
        };
        let mut ty = String::new();
        let mut align = None;
        while let Tok::Dot(d) = self.peek().tok {
            self.bump();
            match d {
                "align" => align = self.int("an alignment"),
                "v2" | "v4" | "v8" | "ptr" | "attribute" => {}
                s => ty = s.to_string(),
            }
        }
        let mut out = Vec::new();
        loop {
            let first = self.peek();
            let Tok::Ident(_) = first.tok else {
                self.unexpected("a variable name");
                self.skip_statement();
                return out;
            };
            self.bump();
            let name = self.glued_name(first);
            let mut dims = Vec::new();
            while self.eat_punct(b'[') {
                let d = match self.peek().tok {
                    Tok::Int(v) => {
                        self.bump();
                        v
                    }
                    _ => 0,
                };
                dims.push(d);
                if !self.eat_punct(b']') {
                    self.unexpected("`]`");
                    self.skip_statement();
                    return out;
                }
            }
            out.push(Variable {
                space: space.clone(),
                name: name.to_string(),
                ty: ty.clone(),
                align,
                dims,
                linkage: linkage.clone(),
                line: kw.line,
            });
            if self.is_punct(b'=') {
                // Initializer values are not kept.
                self.skip_statement();
                return out;
            }
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.expect_semicolon();
        out
    }

    fn instruction(&mut self) -> Option<Instruction> {
        let start = self.peek();
        let mut guard = None;
        if self.eat_punct(b'@') {
            let negated = self.eat_punct(b'!');
            match self.peek().tok {
                Tok::Ident(r) => {
                    self.bump();
                    guard = Some(Guard {
                        reg: self.sym(r),
                        negated,
                    });
                }
                _ => {
                    self.unexpected("a predicate register after `@`");
                    self.skip_statement();
                    return None;
                }
            }
        }
        let op = self.peek();
        let Tok::Ident(_) = op.tok else {
            self.unexpected("an opcode");
            self.skip_statement();
            return None;
        };
        self.bump();
        let mut end = op.end;
        while let (Tok::Dot(_), true) = (self.peek().tok, self.peek().glued) {
            end = self.bump().end;
        }
        let spelling = &self.lex.source()[op.start..end];
        let (opcode, modifiers, class) = match self.opcodes.get(spelling) {
            Some(e) => e.clone(),
            None => {
                let mut parts = spelling.split('.');
                let opcode = Sym::new(parts.next().unwrap_or(""));
                let modifiers: Arc<[Sym]> = parts.map(|m| self.sym(m)).collect();
                let class = classify::classify_parts(&opcode, &modifiers);
                let e = (opcode, modifiers, class);
                self.opcodes.insert(spelling, e.clone());
                e
            }
        };
        let mut operands = Vec::new();
        if !self.is_punct(b';') {
            loop {
                match self.operand(0) {
                    Some(o) => operands.push(o),
                    None => {
                        self.skip_statement();
                        return None;
                    }
                }
                if !self.eat_punct(b',') {
                    break;
                }
            }
        }
        if !self.eat_punct(b';') {
            self.unexpected("`,` or `;` after an operand");
            self.skip_statement();
            return None;
        }
        if class == Class::Unknown {
            let msg = format!("unknown opcode `{opcode}` (classified as unknown)");
            self.diags.push(Severity::Warning, op.line, op.col, msg);
        }
        Some(Instruction {
            guard,
            opcode,
            modifiers,
            class,
            operands,
            line: start.line,
            col: start.col,
            loc: self.last_loc,
        })
    }

    fn operand_list(&mut self, close: u8, depth: u32) -> Option<Vec<Operand>> {
        let mut out = Vec::new();
        if self.eat_punct(close) {
            return Some(out);
        }
        loop {
            out.push(self.operand(depth + 1)?);
            if self.eat_punct(b',') {
                continue;
            }
            if self.eat_punct(close) {
                return Some(out);
            }
            self.unexpected(&format!("`,` or `{}`", close as char));
            return None;
        }
    }

    fn operand(&mut self, depth: u32) -> Option<Operand> {
        if depth > MAX_NESTING {
            let t = self.peek();
            self.error_at(
                t,
                format!("operands nested deeper than {MAX_NESTING} levels"),
            );
            return None;
        }
        let t = self.peek();
        match t.tok {
            Tok::Ident(_) => {
                self.bump();
                let n = self.glued_name(t);
                if n == "_" {
                    return Some(Operand::Sink);
                }
                let name = Operand::Name(self.sym(n));
                if self.eat_punct(b'|') {
                    let second = self.operand(depth + 1)?;
                    return Some(Operand::Pair(Box::new(name), Box::new(second)));
                }
                if matches!(self.peek().tok, Tok::Punct(b'+') | Tok::Punct(b'-')) {
                    if let (Tok::Punct(sign), Tok::Int(v)) = (self.peek().tok, self.peek_n(1).tok) {
                        self.bump();
                        self.bump();
                        return Some(Operand::Expr(format!("{n}{}{v}", sign as char)));
                    }
                }
                Some(name)
            }
            // A quoted symbol (a call target or function address named as the declaration
            // quoted it).
            Tok::Str(n) => {
                self.bump();
                Some(Operand::Name(self.sym(n)))
            }
            Tok::Int(v) => {
                self.bump();
                Some(Operand::Int(v as i64))
            }
            Tok::Float(v) => {
                self.bump();
                Some(Operand::Float(v))
            }
            Tok::Punct(b'-') => {
                self.bump();
                match self.bump().tok {
                    Tok::Int(v) => Some(Operand::Int((v as i64).wrapping_neg())),
                    Tok::Float(v) => Some(Operand::Float(-v)),
                    Tok::Ident(n) => Some(Operand::Expr(format!("-{n}"))),
                    other => {
                        let msg =
                            format!("expected a number after `-`, found {}", describe(&other));
                        self.error_at(t, msg);
                        None
                    }
                }
            }
            Tok::Punct(b'!') => {
                self.bump();
                let inner = self.operand(depth + 1)?;
                Some(Operand::Not(Box::new(inner)))
            }
            Tok::Punct(b'{') => {
                self.bump();
                self.operand_list(b'}', depth).map(Operand::Vector)
            }
            Tok::Punct(b'(') => {
                self.bump();
                self.operand_list(b')', depth).map(Operand::List)
            }
            Tok::Punct(b'[') => {
                self.bump();
                self.address(depth)
            }
            _ => {
                self.unexpected("an operand");
                None
            }
        }
    }

    /// The inside of `[...]`: `base`, `base+off`, `base+-off`, `off`, or `base, {coords}`.
    fn address(&mut self, depth: u32) -> Option<Operand> {
        let mut base = None;
        let mut offset: i64 = 0;
        let mut extra = Vec::new();
        if let Tok::Ident(_) = self.peek().tok {
            let t = self.bump();
            let n = self.glued_name(t);
            base = Some(self.sym(n));
        }
        loop {
            match self.peek().tok {
                Tok::Punct(b']') => {
                    self.bump();
                    return Some(Operand::Address {
                        base,
                        offset,
                        extra,
                    });
                }
                Tok::Punct(s @ (b'+' | b'-')) => {
                    self.bump();
                    let mut negative = s == b'-';
                    if self.eat_punct(b'-') {
                        negative = !negative;
                    }
                    match self.peek().tok {
                        Tok::Int(v) => {
                            self.bump();
                            let v = v as i64;
                            offset =
                                offset.wrapping_add(if negative { v.wrapping_neg() } else { v });
                        }
                        _ => extra.push(self.operand(depth + 1)?),
                    }
                }
                Tok::Int(v) if base.is_none() && extra.is_empty() => {
                    self.bump();
                    offset = v as i64;
                }
                Tok::Punct(b',') => {
                    self.bump();
                    extra.push(self.operand(depth + 1)?);
                }
                Tok::Punct(b';') | Tok::Eof => {
                    self.unexpected("`]`");
                    return None;
                }
                _ => extra.push(self.operand(depth + 1)?),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
.version 9.5
.target sm_75
.address_size 64
.file 1 "k.cu"
.global .align 4 .b8 table[12] = {1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0};
.extern .func (.param .b32 func_retval0) vprintf(.param .b64 vprintf_param_0, .param .b64 vprintf_param_1);
.visible .entry k(
	.param .u64 k_param_0,
	.param .u32 k_param_1,
	.param .align 8 .b8 k_param_2[16]
)
.maxntid 256, 1, 1
.minnctapersm 2
{
	.reg .pred 	%p<3>;
	.reg .b32 	%r<10>, %extra;
	.shared .align 4 .b8 buf[1024];
	.loc	1 7 3
	mov.u32 	%r1, %tid.x;
	@!%p1 bra 	$L__BB0_2;
	ld.global.nc.v2.f32 	{%f1, _}, [%rd2+-8];
$L__BB0_2:
	.pragma "nounroll";
	shfl.sync.down.b32 	%r34|%p3, %r29, 16, 31, -1;
	{ // callseq 0, 0
	.param .b32 param0;
	call.uni (retval0), _Z6helperff, (param0, param1);
	}
	frobnicate.x %r1;
	ret;
}
"#;

    #[test]
    fn parses_a_small_module() {
        let (m, d) = parse(SMALL);
        assert_eq!(d.error_count(), 0, "{:?}", d.items);
        assert_eq!(m.version.as_deref(), Some("9.5"));
        assert_eq!(m.target, vec!["sm_75"]);
        assert_eq!(m.address_size, Some(64));
        assert_eq!(m.files, vec![(1, "k.cu".to_string())]);
        assert_eq!(m.variables.len(), 1);
        assert_eq!(m.variables[0].size_bytes(), Some(12));
        assert_eq!(m.functions.len(), 2);
        assert!(!m.functions[0].has_body);
        let k = &m.functions[1];
        assert!(k.is_entry && k.has_body);
        assert_eq!(k.linkage, "visible");
        assert_eq!(k.params.len(), 3);
        assert_eq!(k.params[2].array, Some(16));
        assert_eq!(k.performance.maxntid, vec![256, 1, 1]);
        assert_eq!(k.performance.minnctapersm, Some(2));
        assert_eq!(k.registers.len(), 3);
        assert_eq!(k.registers[1].count, Some(10));
        assert_eq!(k.variables.len(), 2); // buf and the call's param0
        let ins: Vec<&Instruction> = k.instructions().collect();
        assert_eq!(ins.len(), 7);
        assert_eq!(
            ins[0].loc,
            Some(SourceLoc {
                file: 1,
                line: 7,
                col: 3
            })
        );
        assert_eq!(ins[0].operands[1], Operand::Name("%tid.x".into()));
        assert_eq!(
            ins[1].guard,
            Some(Guard {
                reg: "%p1".into(),
                negated: true
            })
        );
        assert_eq!(*ins[2].modifiers, ["global", "nc", "v2", "f32"]);
        assert_eq!(
            ins[2].operands[1],
            Operand::Address {
                base: Some("%rd2".into()),
                offset: -8,
                extra: vec![]
            }
        );
        assert!(matches!(ins[3].operands[0], Operand::Pair(..)));
        assert_eq!(ins[3].operands[4], Operand::Int(-1));
        assert!(matches!(&ins[4].operands[2], Operand::List(v) if v.len() == 2));
        assert!(k
            .body
            .iter()
            .any(|s| matches!(s, Statement::Pragma { text, .. } if text == "nounroll")));
        // The unknown opcode is kept and reported with its position.
        assert_eq!(ins[5].opcode, "frobnicate");
        assert!(d
            .items
            .iter()
            .any(|x| x.message.contains("frobnicate") && x.line == 30));
    }

    /// Shapes public PTX uses that are legal but unusual: registers without `%`, vector
    /// elements, texture geometries, a kernel named `%1`, dotted and quoted function names.
    #[test]
    fn parses_the_unusual_shapes_of_real_projects() {
        let src = r#"
.version 6.5
.target sm_60
.address_size 64
.global .texref tex_ref;
.func (.reg .v2 .u32 out) old.llvm.name(.param .u64 old.llvm.name_param_0)
{
    .reg .u64 p;
    ld.param.u64 p, [old.llvm.name_param_0];
    mov.u32 out.x, 1;
    mov.u32 out.y, out.x;
    ret;
}
.func "quoted.fn"(.param .b32 "quoted.fn_param_0")
{
    ret;
}
.visible .entry %1(.param .align 8 .b8 agg[16])
{
    .reg .v4 .f32 V;
    .reg .f32 a, b;
    .reg .u32 r;
    ld.param.u32 r, [agg+4];
    tex.2d.v4.f32.f32 {a, b, V.z, V.w}, [tex_ref, {a, b}];
    mov.f32 a, V.r;
    call (V), old.llvm.name, (r);
    call.uni "quoted.fn", ();
    ret;
}
"#;
        let (m, d) = parse(src);
        assert!(!d.has_errors(), "{:?}", d.items);
        let names: Vec<&str> = m.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["old.llvm.name", "quoted.fn", "%1"]);
        assert_eq!(m.functions[1].params[0].name, "quoted.fn_param_0");
        assert_eq!(m.functions[0].params[0].name, "old.llvm.name_param_0");
        let k = &m.functions[2];
        assert!(k.is_entry);
        assert_eq!(
            (k.params[0].ty.as_str(), k.params[0].array),
            ("b8", Some(16))
        );
        assert_eq!(k.params[0].align, Some(8));
        let ins: Vec<&Instruction> = k.instructions().collect();
        assert_eq!(
            ins[0].operands[1],
            Operand::Address {
                base: Some("agg".into()),
                offset: 4,
                extra: vec![]
            }
        );
        assert_eq!(*ins[1].modifiers, ["2d", "v4", "f32", "f32"]);
        assert_eq!(ins[1].class, Class::Load(classify::Space::Texture));
        let Operand::Vector(dst) = &ins[1].operands[0] else {
            panic!("tex destination is a vector: {:?}", ins[1].operands[0]);
        };
        assert_eq!(dst[2], Operand::Name("V.z".into()));
        let Operand::Address { base, extra, .. } = &ins[1].operands[1] else {
            panic!("tex source is an address");
        };
        assert_eq!(base.as_deref(), Some("tex_ref"));
        assert_eq!(
            extra[0],
            Operand::Vector(vec![Operand::Name("a".into()), Operand::Name("b".into())])
        );
        assert_eq!(ins[2].operands[1], Operand::Name("V.r".into()));
        assert_eq!(ins[3].operands[1], Operand::Name("old.llvm.name".into()));
        assert_eq!(ins[4].operands[0], Operand::Name("quoted.fn".into()));
        let f = &m.functions[0];
        assert!(f.returns[0].is_reg && !f.params[0].is_reg);
        assert_eq!(
            (f.returns[0].ty.as_str(), f.returns[0].vector),
            ("u32", Some(2))
        );
        let fi: Vec<&Instruction> = f.instructions().collect();
        assert_eq!(fi[1].operands[0], Operand::Name("out.x".into()));
    }

    #[test]
    fn parse_each_hands_out_the_functions_parse_collects() {
        let (whole, d) = parse(SMALL);
        let mut seen = Vec::new();
        let mut own_diags = Vec::new();
        let (rest, d2) = parse_each(SMALL, |m, f, fd| {
            // The module so far: directives and variables before the function.
            assert_eq!(m.version.as_deref(), Some("9.5"));
            seen.push(f);
            own_diags.push(fd.to_vec());
        });
        assert_eq!(seen, whole.functions);
        assert!(rest.functions.is_empty());
        assert_eq!((rest.variables.len(), d2.items.len()), (1, d.items.len()));
        // The unknown opcode's warning belongs to the kernel that holds it.
        assert!(own_diags[0].is_empty());
        assert!(own_diags[1]
            .iter()
            .any(|x| x.message.contains("frobnicate")));
    }

    #[test]
    fn loc_lines_are_skipped_whole() {
        // `.loc` with trailing inlining info, and one whose rest hides a block comment that
        // spans lines: both leave the next line's instruction intact.
        let src = ".entry k() {\n.loc 1 2 3, function_name $L__info_string0, inlined_at 1 4 5\n mov.u32 %r1, 1;\n.loc 1 6 7 /* a\n b */ ret;\n}\n";
        let (m, d) = parse(src);
        assert!(!d.has_errors(), "{:?}", d.items);
        let ins: Vec<&Instruction> = m.functions[0].instructions().collect();
        assert_eq!(ins.len(), 2);
        assert_eq!(ins[0].loc.map(|l| l.line), Some(2));
        assert_eq!((ins[1].opcode.as_str(), ins[1].line), ("ret", 5));
    }

    #[test]
    fn recovers_and_reports_positions() {
        let src = ".version 9.5\n.entry k()\n{\n add.s32 %r1, , 3;\n ret;\n}\n";
        let (m, d) = parse(src);
        assert_eq!(m.functions[0].instructions().count(), 1);
        let e = &d.items[0];
        assert_eq!((e.line, e.col), (4, 15));
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let src = format!(".entry k() {{ mov.b32 %r1, {}; }}", "{".repeat(100_000));
        let (_, d) = parse(&src);
        assert!(d.has_errors());
    }
}
