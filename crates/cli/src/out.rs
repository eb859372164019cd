//! What the CLI prints on stdout. A command-line tool's reader may go away before it has
//! read everything (`taskkeeper status --json | grep -q x`, `| head`): then the tool ends
//! quietly, as any Unix tool does, instead of panicking on the closed pipe, which is what
//! `println!` does (Rust ignores SIGPIPE, so the write fails with EPIPE). Every line the CLI
//! prints goes through [`say!`]; clippy refuses `println!` in this crate.

use std::io::Write as _;

/// Print one line on stdout (like `println!`); a closed stdout ends the process quietly.
macro_rules! say {
    () => {
        $crate::out::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}
pub(crate) use say;

/// Write one line; see the module doc for what happens when nobody reads.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(args)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("taskkeeper: cannot write to stdout: {e}");
        std::process::exit(1);
    }
}
