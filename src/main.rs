//! The `kerneltime` binary: parse the command line, run, print the error chain, set the exit code.

mod cli;

fn main() {
    restore_default_sigpipe();
    report_stdout_failures();
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

/// A failed write to standard output (a full disk, a closed file) is an I/O error like any
/// other: one line and exit code 1, not a panic with a backtrace. `println!` panics on such a
/// failure; this hook turns exactly that panic into the documented error.
fn report_stdout_failures() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(cause) = payload.strip_prefix("failed printing to stdout: ") {
            eprintln!("error: cannot write to standard output: {cause}");
            std::process::exit(1);
        }
        default(info);
    }));
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
