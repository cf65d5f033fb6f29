//! Writing to stdout and stderr without panicking: a reader that goes away (`cheng … | head`)
//! closes the pipe, and cheng then stops writing and exits quietly, as Unix filters do.

use crate::Exit;
use std::io::{ErrorKind, Write};

/// Writes `text` to stdout. A closed pipe is not an error (nobody is left to read); any other
/// write error is reported on stderr and turns the exit status into 1.
pub fn print(text: &str) -> Exit {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Exit::Ok,
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Exit::Ok,
        Err(e) => {
            crate::complain(format!("cannot write to standard output: {e}"));
            Exit::Failed
        }
    }
}

/// Writes `text` to stderr, ignoring errors: with stderr closed there is nowhere left to say so.
pub fn eprint(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
}

/// `eprintln!` that never panics (see [`eprint`]).
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::eprint(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use errln;

/// `println!` that never panics (see [`print`]); evaluates to the [`Exit`] of the write.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::print(&format!("{}\n", format_args!($($arg)*)))
    };
}
pub(crate) use outln;
