//! The PTX frontend never panics and stays bounded on bad input: arbitrary bytes, mutated and
//! truncated fixtures, binary data, deep nesting and a 100 MB input (property tests plus a few
//! generated inputs; sizes kept small enough for a quick debug-build run).

use kerneltime::ptx::analysis::analyze_function;
use kerneltime::ptx::diag::MAX_DIAGNOSTICS;
use kerneltime::ptx::parse_bytes;
use kerneltime::ptx::program::MemoryDurations;
use proptest::prelude::*;

const FIXTURE: &str = include_str!("../fixtures/ptx/basics.nvcc-sm75.ptx");
const FIXTURE_CLANG: &str = include_str!("../fixtures/ptx/registration.clang14-sm61.ptx");

/// Parses and runs every later pass on every function.
fn run_all(bytes: &[u8]) -> usize {
    let (m, d) = parse_bytes(bytes);
    assert!(d.items.len() <= MAX_DIAGNOSTICS);
    let durations = MemoryDurations {
        load_cycles: 1.0,
        store_cycles: 1.0,
    };
    for f in &m.functions {
        let a = analyze_function(f, durations);
        assert!(a.basic_blocks >= 1);
    }
    m.functions.len()
}

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize, usize),
    Insert(usize, Vec<u8>),
    Duplicate(usize, usize),
    Truncate(usize),
    Flip(usize, u8),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..64).prop_map(|(a, n)| Mutation::Delete(a, n)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(a, v)| Mutation::Insert(a, v)),
        (any::<usize>(), 0usize..200).prop_map(|(a, n)| Mutation::Duplicate(a, n)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), any::<u8>()).prop_map(|(a, b)| Mutation::Flip(a, b)),
    ]
}

fn mutate(src: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut v = src.as_bytes().to_vec();
    for m in muts {
        if v.is_empty() {
            break;
        }
        let len = v.len();
        match m {
            Mutation::Delete(a, n) => {
                let a = a % len;
                let b = (a + n).min(len);
                v.drain(a..b);
            }
            Mutation::Insert(a, bytes) => {
                let a = a % (len + 1);
                v.splice(a..a, bytes.iter().copied());
            }
            Mutation::Duplicate(a, n) => {
                let a = a % len;
                let b = (a + n).min(len);
                let piece = v[a..b].to_vec();
                v.splice(b..b, piece);
            }
            Mutation::Truncate(a) => v.truncate(a % len),
            Mutation::Flip(a, b) => {
                let a = a % len;
                v[a] = *b;
            }
        }
    }
    v
}

/// Pieces of PTX that, shuffled, make nearly-valid modules (labels, branches, nesting).
const WORDS: &[&str] = &[
    ".entry",
    ".func",
    "{",
    "}",
    ";",
    "@%p1",
    "bra",
    "L1:",
    "L1",
    "[",
    "]",
    "(",
    ")",
    ",",
    "%r1",
    ".reg",
    ".b32",
    "<",
    "4",
    "add.s32",
    "setp.lt.s32",
    ".loc",
    "\n",
    "ret",
    ".param",
    "k",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        run_all(&bytes);
    }

    #[test]
    fn ptx_like_tokens_never_panic(words in proptest::collection::vec(proptest::sample::select(WORDS), 0..300)) {
        run_all(words.join(" ").as_bytes());
    }

    #[test]
    fn mutated_fixtures_never_panic(muts in proptest::collection::vec(mutation(), 1..8), which in any::<bool>()) {
        let src = if which { FIXTURE } else { FIXTURE_CLANG };
        run_all(&mutate(src, &muts));
    }
}

#[test]
fn every_truncation_of_a_fixture_is_handled() {
    let bytes = FIXTURE.as_bytes();
    for cut in (0..bytes.len()).step_by(97) {
        run_all(&bytes[..cut]);
    }
}

#[test]
fn binary_input_gives_diagnostics() {
    // A deterministic pseudo-random megabyte (xorshift).
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let (m, d) = parse_bytes(&bytes);
    assert!(m.functions.is_empty() || d.has_errors());
    assert!(d.has_errors());
    assert!(d.items.len() <= MAX_DIAGNOSTICS);
}

#[test]
fn a_100_mb_input_is_handled_with_bounded_diagnostics() {
    // 100 MB of text: one huge word every 1 MiB line break, then a stray brace. Cheap to lex in
    // a debug build, and it must neither panic nor keep more than MAX_DIAGNOSTICS messages.
    let mut text = Vec::with_capacity(100 << 20);
    while text.len() < 100 << 20 {
        text.extend(std::iter::repeat_n(b'x', (1 << 20) - 1));
        text.push(b'\n');
    }
    text.extend_from_slice(b"}");
    let (m, d) = parse_bytes(&text);
    assert!(m.functions.is_empty());
    assert!(d.has_errors());
    assert!(d.items.len() <= MAX_DIAGNOSTICS);
}

#[test]
fn many_bad_statements_cap_the_diagnostics() {
    let text = "garbage;\n".repeat(50_000);
    let (_, d) = parse_bytes(text.as_bytes());
    assert_eq!(d.items.len(), MAX_DIAGNOSTICS);
    assert_eq!(d.dropped, 50_000 - MAX_DIAGNOSTICS as u64);
}
