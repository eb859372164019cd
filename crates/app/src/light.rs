//! The environment GTK and WebKit start with on Linux, chosen so the app in the tray stays
//! light (issue 13). They read it once, at start, so the app sets it by starting itself again
//! (`exec`, the same process id) before anything else runs; a variable the user set already is
//! left as it is, and a marker variable stops the second start from doing it again.
//!
//! * `GDK_GL=disable`: on X11, GTK 3 probes OpenGL while it opens the display, to pick its
//!   visuals, which loads the OpenGL driver into the process for good (with Mesa's software
//!   driver, LLVM: 42 MiB of the 126 MiB the app held hidden, never opened). The app draws
//!   nothing with GTK's OpenGL.
//! * `WEBKIT_DISABLE_COMPOSITING_MODE=1`: WebKit draws the page without OpenGL compositing.
//!   The window is a short list; measured, its web process held 170 MiB instead of 229 MiB,
//!   and with GTK's OpenGL off, compositing would copy each frame back through the CPU anyway.
//!
//! Setting variables inside the running process instead is unsound once threads exist (and
//! `unsafe`, which the workspace forbids); an `exec` at the top of `main` has no such problem.

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::process::Command;

/// Set on the second start: the environment is in place.
const MARK: &str = "TASKKEEPER_APP_LIGHT";

/// What GTK and WebKit are started with, unless the user set them.
const LIGHT: [(&str, &str); 2] = [
    ("GDK_GL", "disable"),
    ("WEBKIT_DISABLE_COMPOSITING_MODE", "1"),
];

/// The variables the second start needs that are not set yet (none once restarted).
fn missing(get: impl Fn(&str) -> Option<OsString>) -> Vec<(&'static str, &'static str)> {
    if get(MARK).is_some() {
        return Vec::new();
    }
    LIGHT
        .into_iter()
        .filter(|(name, _)| get(name).is_none())
        .collect()
}

/// Starts this program again in place with the light environment. Returns only when there
/// was nothing to do (`None`) or the `exec` failed (the error; the app goes on as it is).
pub fn restart_lighter() -> Option<std::io::Error> {
    let env = missing(|name| std::env::var_os(name));
    if env.is_empty() {
        return None;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => return Some(error),
    };
    let mut args = std::env::args_os();
    let mut command = Command::new(exe);
    if let Some(arg0) = args.next() {
        command.arg0(arg0);
    }
    command.args(args).env(MARK, "1").envs(env);
    Some(command.exec())
}
