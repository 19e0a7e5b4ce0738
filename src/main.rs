//! The `kerneltime` binary: parse the command line, run, print the error chain, set the exit code.

fn main() {
    let code = match kerneltime::cli::main() {
        Ok(()) => 0,
        Err(err) => {
            let mut message = err.to_string();
            let mut source = std::error::Error::source(&err);
            while let Some(s) = source {
                message.push_str(&format!(": {s}"));
                source = s.source();
            }
            eprintln!("error: {message}");
            if err.is_usage() {
                2
            } else {
                1
            }
        }
    };
    std::process::exit(code);
}
