//! What the CLI prints, and the one way it prints it. Two things can go wrong on the way
//! out, and this module is where both are kept from happening:
//!
//! - Words that are not the binary's own reach the owner's terminal: an asker's request, a
//!   worker's summary, a path, a name, a message the daemon sent back. Askers are other
//!   people's agents, and a terminal obeys what it is sent (an escape sequence sets its
//!   title or its clipboard, a bare carriage return overwrites a line, a bidi override
//!   reverses one). [`say!`] (stdout) and [`tell!`] (stderr) write their format string as it
//!   is and every argument through [`Shown`], which shows it with
//!   [`taskkeeper_core::terminal::visible`]: every character a terminal acts on written as
//!   its escape, every line after the first indented under where the argument began (at
//!   least [`MIN_INDENT`]), so no line of it can pass for one of Taskkeeper's. The format
//!   string must be a literal that names no variable inside it (`{name}`), which a
//!   compile-time check refuses: a value can only come in as an argument, and every
//!   argument is shown. `--json` goes through [`json`] instead, which writes those
//!   characters as `\uXXXX` escapes (serde_json leaves C1, DEL and the bidi controls raw).
//! - The reader goes away before it has read everything (`taskkeeper status --json |
//!   grep -q x`, `| head`): then the tool ends quietly, as any Unix tool does, instead of
//!   panicking on the closed pipe, which is what `println!` does (Rust ignores SIGPIPE, so
//!   the write fails with EPIPE).
//!
//! clippy refuses `println!`, `print!`, `eprintln!`, `eprint!`, `dbg!`, `std::io::stdout`
//! and `std::io::stderr` in this crate (its `clippy.toml`); only this module writes, and
//! the hook helper, whose output is an agent's input, not a terminal's.

#![expect(
    clippy::disallowed_methods,
    reason = "the one place the CLI's output is written"
)]

use std::cell::Cell;
use std::fmt::{self, Write as _};
use std::io::Write as _;

use taskkeeper_core::terminal::{acts_on_terminal, visible};

/// Print one line on stdout (like `println!`): the format string as it is, every argument
/// [`Shown`]; a closed stdout ends the process quietly.
macro_rules! say {
    () => {
        $crate::out::line($crate::out::To::Stdout, format_args!(""))
    };
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        const {
            assert!(
                $crate::out::own_format($fmt),
                "say! and tell! take every value as an argument after the format string, never inside it"
            )
        };
        $crate::out::line(
            $crate::out::To::Stdout,
            format_args!($fmt $(, $crate::out::Shown(&$arg))*),
        )
    }};
}
pub(crate) use say;

/// Print one line on stderr (like `eprintln!`), as [`say!`] does on stdout.
macro_rules! tell {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        const {
            assert!(
                $crate::out::own_format($fmt),
                "say! and tell! take every value as an argument after the format string, never inside it"
            )
        };
        $crate::out::line(
            $crate::out::To::Stderr,
            format_args!($fmt $(, $crate::out::Shown(&$arg))*),
        )
    }};
}
pub(crate) use tell;

/// Where a line goes.
#[derive(Clone, Copy)]
pub enum To {
    Stdout,
    Stderr,
}

/// The least a continuation line of an argument is indented: deeper than the lines the
/// CLI starts at the left edge, so that none of them can be forged by outside text.
pub const MIN_INDENT: usize = 4;

thread_local! {
    /// The column the line being formatted has reached: where the next argument begins.
    static COLUMN: Cell<usize> = const { Cell::new(0) };
}

/// An argument of [`say!`] or [`tell!`]: shown with [`visible`], every line after its
/// first starting at the column where it began (at least [`MIN_INDENT`]). Width, alignment
/// and `#` apply as they would to the value itself.
pub struct Shown<'a, T: ?Sized>(pub &'a T);

impl<T: fmt::Display + ?Sized> fmt::Display for Shown<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if f.alternate() {
            format!("{:#}", self.0)
        } else {
            self.0.to_string()
        };
        let indent = " ".repeat(COLUMN.get().max(MIN_INDENT));
        f.pad(&visible(&text, &indent))
    }
}

/// Whether a format string of [`say!`] or [`tell!`] takes its values only as arguments:
/// every `{…}` in it is `{}`, `{N}` or `{:spec}` (or `{N:spec}`), never `{name}`, which
/// would print a variable as it is. Also refused: a control character other than `\n` in
/// it, so the format string cannot drive the terminal either. Run at compile time.
pub const fn own_format(fmt: &str) -> bool {
    let b = fmt.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if (c < b' ' && c != b'\n') || c == 0x7f {
            return false;
        }
        if c == b'{' {
            if i + 1 < b.len() && b[i + 1] == b'{' {
                i += 2;
                continue;
            }
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i >= b.len() || (b[i] != b'}' && b[i] != b':') {
                return false;
            }
            // A width or precision taken from a named value (`{:w$}`) names a variable too.
            while i < b.len() && b[i] != b'}' {
                if b[i] == b'$' && !b[i - 1].is_ascii_digit() {
                    return false;
                }
                i += 1;
            }
        }
        i += 1;
    }
    true
}

/// What a line is formatted into, keeping [`COLUMN`].
struct Line(String);

impl fmt::Write for Line {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0.push_str(s);
        match s.rfind('\n') {
            Some(at) => COLUMN.set(s[at + 1..].chars().count()),
            None => COLUMN.set(COLUMN.get() + s.chars().count()),
        }
        Ok(())
    }
}

/// Format and write one line; the macros' end. See the module doc for what happens when
/// nobody reads.
pub fn line(to: To, args: fmt::Arguments<'_>) {
    COLUMN.set(0);
    let mut text = Line(String::new());
    // Writing into a String fails only when a value's own Display fails; print what came.
    let _ = text.write_fmt(args);
    text.0.push('\n');
    write(to, &text.0);
}

/// Print `value` as pretty JSON on stdout (`--json`), every character a terminal acts on
/// escaped as `\uXXXX`.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    let mut text = json_safe(&serde_json::to_string_pretty(value)?);
    text.push('\n');
    write(To::Stdout, &text);
    Ok(())
}

/// Print `value` as one line of JSON on stdout (`watch --json`), as [`json`] does.
pub fn json_line<T: serde::Serialize + ?Sized>(value: &T) -> anyhow::Result<()> {
    let mut text = json_safe(&serde_json::to_string(value)?);
    text.push('\n');
    write(To::Stdout, &text);
    Ok(())
}

/// Serialized JSON with every character that [`acts_on_terminal`] written as a `\uXXXX`
/// escape. Outside its strings JSON holds only ASCII punctuation and spaces, so such a
/// character is always inside a string, where the escape means the same character: the
/// JSON reads back the same. (Every such character is in the Basic Multilingual Plane:
/// one escape each.)
fn json_safe(serialized: &str) -> String {
    let mut out = String::with_capacity(serialized.len());
    for c in serialized.chars() {
        if acts_on_terminal(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

fn write(to: To, text: &str) {
    match to {
        To::Stdout => {
            let mut out = std::io::stdout().lock();
            let written = out.write_all(text.as_bytes()).and_then(|()| out.flush());
            if let Err(e) = written {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    std::process::exit(0);
                }
                write(
                    To::Stderr,
                    &format!(
                        "taskkeeper: cannot write to stdout: {}\n",
                        visible(&e.to_string(), "")
                    ),
                );
                std::process::exit(1);
            }
        }
        // Nothing is left to tell when stderr itself cannot be written.
        To::Stderr => {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(text.as_bytes()).and_then(|()| err.flush());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_format_string_takes_values_only_as_arguments() {
        for ok in [
            "",
            "{}",
            "{} and {}",
            "{:<20}|{:>5}",
            "{0} {1:?}",
            "{{name}}",
            "a\nb {}",
            "{:#}",
            "{:1$}",
        ] {
            assert!(own_format(ok), "{ok}");
        }
        for refused in [
            "{name}", "x {a:?}", "{:w$}", "{:.p$}", "a\x1bb", "a\rb", "{",
        ] {
            assert!(!own_format(refused), "{refused}");
        }
    }

    /// An argument's lines stay under where it began; its control characters are shown.
    #[test]
    fn an_argument_is_shown_and_keeps_its_lines_under_its_label() {
        let mut text = Line(String::new());
        COLUMN.set(0);
        let words = "Fix it\r\nstate    completed\r\x1b]0;owned\x07";
        text.write_fmt(format_args!("words  {}\n{}", Shown(&words), Shown(&"a\nb")))
            .unwrap();
        assert_eq!(
            text.0,
            "words  Fix it\n       state    completed\\u{d}\\u{1b}]0;owned\\u{7}\na\n    b"
        );
    }

    #[test]
    fn json_keeps_no_character_a_terminal_acts_on_and_reads_back_the_same() {
        let value = serde_json::json!({"t": "a\u{1b}b\u{9b}c\u{202e}d\u{7f}e\u{85}f\n\u{2069}"});
        let text = json_safe(&serde_json::to_string_pretty(&value).unwrap());
        assert!(!text.chars().any(acts_on_terminal), "{text}");
        assert!(
            text.contains("\\u009b") && text.contains("\\u202e"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
