//! `kerneltime completions SHELL` and `kerneltime man`: the shell completion script and the
//! roff man pages, both rendered from the same clap command the binary parses with
//! ([`super::help::command`]), so they list every command, flag and example.
//!
//! This module writes what clap_complete and clap_mangen render; it does not install anything
//! (where a script or page goes is the user's shell's and man's business: see the examples).

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use clap_complete::Shell;

use kerneltime::error::{Error, Result};

/// `kerneltime completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: Shell,
}

/// `kerneltime man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command (kerneltime.1, kerneltime-predict.1, ...) into this
    /// directory instead of printing the top-level page.
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
}

/// Prints the completion script of `args.shell` on stdout.
pub fn run_completions(args: &CompletionsArgs) -> Result<()> {
    let mut cmd = super::help::command();
    let mut out = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "kerneltime", &mut out);
    write_stdout(&out)
}

/// Prints the man page, or writes every command's page into `--out-dir`.
pub fn run_man(args: &ManArgs) -> Result<()> {
    let cmd = super::help::command();
    match &args.out_dir {
        Some(dir) => {
            let io = |e: std::io::Error| {
                Error::invalid(
                    "out_dir",
                    format!("cannot write into {}: {e}", dir.display()),
                )
            };
            std::fs::create_dir_all(dir).map_err(io)?;
            clap_mangen::generate_to(cmd, dir).map_err(io)?;
            println!("wrote the man pages into {}", dir.display());
            Ok(())
        }
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(cmd)
                .render(&mut out)
                .map_err(|e| Error::invalid("man", format!("cannot render: {e}")))?;
            write_stdout(&out)
        }
    }
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    std::io::stdout()
        .write_all(bytes)
        .map_err(|e| Error::invalid("stdout", format!("cannot write: {e}")))
}
