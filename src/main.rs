//! The `kerneltime` binary: parse the command line, run, print the error chain, set the exit code.

mod cli;

fn main() {
    restore_default_sigpipe();
    let code = match cli::main() {
        Ok(()) => 0,
        Err(err) => {
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(s) = source {
                message.push_str(&format!(": {s}"));
                source = s.source();
            }
            // Messages quote user input (file names, fields, values): escape control characters,
            // keeping the message on one line.
            eprintln!("error: {}", kerneltime::error::escape_control(&message));
            if err.is_usage() {
                2
            } else {
                1
            }
        }
    };
    std::process::exit(code);
}

/// Lets `kerneltime ... | head` end quietly: with the default SIGPIPE action the process exits
/// when the reader goes away, instead of `println!` panicking on a broken pipe.
fn restore_default_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called once at start-up, before any other thread exists; resetting a signal's
    // disposition to its default has no other effect on the process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
