//! From library input names to command-line flags. The library names what to fix by its input
//! (`grid`, `args`, `t_p_us`, `param n`); the user typed flags. An error's input becomes the flag
//! of the command that ran when that command has one (`args` -> `--arg`, `threads_per_block` ->
//! `--threads-per-block`), and stays the input's name otherwise, so no message names a flag of
//! another command. A few inputs that messages name in backticks are rewritten the same way.

use std::collections::BTreeSet;

use clap::ArgMatches;
use kerneltime::error::Error;

/// Inputs whose flag is not `--` + the name with dashes.
const SPELLED: &[(&str, &str)] = &[("args", "arg"), ("t_p_us", "t-p"), ("t_m_cycles", "t-m")];

/// Inputs a message may name in backticks that read as flags, with what follows the flag.
const IN_MESSAGES: &[(&str, &str)] = &[
    ("args", ""),
    ("blocks", ""),
    ("calibration", ""),
    ("device", ""),
    ("elements", ""),
    ("format", ""),
    ("inputs", ""),
    ("kernel", ""),
    ("kernel_file", ""),
    ("max_points", ""),
    ("model", ""),
    ("name", ""),
    ("param", ""),
    ("resources", ""),
    ("resume", ""),
    ("t_m_cycles", " CYCLES"),
    ("t_p_us", " US"),
    ("test_fraction", ""),
    ("threads_per_block", ""),
];

/// The long flags of the subcommand (or nested subcommand) that `matches` ran.
pub fn of_subcommand(root: &clap::Command, matches: &ArgMatches) -> BTreeSet<String> {
    let mut cmd = root;
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        match cmd.find_subcommand(name) {
            Some(c) => cmd = c,
            None => break,
        }
        m = sub;
    }
    cmd.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// The flag an input stands for on this command, if the command has it.
fn flag(input: &str, flags: &BTreeSet<String>) -> Option<String> {
    let (head, rest) = match input.split_once(' ') {
        Some((h, r)) => (h, Some(r)),
        None => (input, None),
    };
    let long = SPELLED
        .iter()
        .find(|(i, _)| *i == head)
        .map_or_else(|| head.replace('_', "-"), |(_, f)| f.to_string());
    flags.contains(&long).then(|| match rest {
        Some(r) => format!("--{long} {r}"),
        None => format!("--{long}"),
    })
}

/// The error with its input named by the command's flag (see the module doc).
pub fn rename(err: Error, flags: &BTreeSet<String>) -> Error {
    let name_of = |name: String| flag(&name, flags).unwrap_or(name);
    let text = |mut message: String| {
        for (input, tail) in IN_MESSAGES {
            let quoted = format!("`{input}`");
            if message.contains(&quoted) {
                if let Some(f) = flag(input, flags) {
                    message = message.replace(&quoted, &format!("{f}{tail}"));
                }
            }
        }
        message
    };
    match err {
        Error::InvalidInput { name, message } => Error::InvalidInput {
            name: name_of(name),
            message: text(message),
        },
        Error::MissingInput { name, message } => Error::MissingInput {
            name: name_of(name),
            message: text(message),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn inputs_become_the_flags_the_command_has_and_only_those() {
        let f = flags(&["arg", "grid", "t-p", "threads-per-block", "param"]);
        let e = rename(Error::invalid("args", "x"), &f);
        assert_eq!(e.to_string(), "--arg: x");
        let e = rename(Error::invalid("param n", "x"), &f);
        assert_eq!(e.to_string(), "--param n: x");
        let e = rename(Error::missing("t_p_us", "give `t_p_us`"), &f);
        assert_eq!(e.to_string(), "missing input `--t-p`: give --t-p US");
        // A command without the flag keeps the input's name.
        let e = rename(Error::invalid("shared_memory_per_block", "too large"), &f);
        assert_eq!(e.to_string(), "shared_memory_per_block: too large");
        let e = rename(Error::invalid("grid", "give `device`"), &f);
        assert_eq!(e.to_string(), "--grid: give `device`");
    }
}
