//! WebKit's helper processes on Linux, which the app ends itself where WebKit would keep them.
//!
//! WebKitGTK runs each page in a web process and all networking (our `tauri://` assets and
//! IPC included) in one network process per `WebContext`. The web process goes with its
//! webview; the network process stays as long as the `WebContext`, and Tauri keeps that for
//! the app's life on Linux (so that custom protocols, which WebKitGTK registers once per
//! context, keep working: tauri-runtime-wry, issue tauri#14626). With no webview left it holds
//! ~60 MB and serves nothing, so once the window's webview is destroyed the app ends it;
//! WebKit starts a new one with the next webview, as after a crash of it.
//!
//! Found by its parent (this process) and its program name in `/proc`; ended with SIGTERM.

use std::fs;

/// The network process's program, as WebKitGTK names it.
const NETWORK_PROCESS: &str = "WebKitNetworkProcess";
/// The web process's.
const WEB_PROCESS: &str = "WebKitWebProcess";

/// The pids of this process's children running `program`.
fn children_running(program: &str) -> Vec<i32> {
    let me = std::process::id().to_string();
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            // The fields after the command (in parentheses, which may hold spaces): state, ppid.
            let parent_is_me = fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let (_, rest) = stat.rsplit_once(')')?;
                    let mut fields = rest.split_whitespace();
                    let state = fields.next()?;
                    Some(state != "Z" && fields.next()? == me)
                })
                .unwrap_or(false);
            parent_is_me
                && fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|cmd| {
                    let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
                    argv0.ends_with(program.as_bytes())
                })
        })
        .collect()
}

/// Whether a web process of ours still runs (a webview is alive, or one is going away).
pub fn web_process_running() -> bool {
    !children_running(WEB_PROCESS).is_empty()
}

/// Ends the network process(es) of this app's WebKit; how many were signalled.
pub fn end_network_process() -> usize {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let mut ended = 0;
    for pid in children_running(NETWORK_PROCESS) {
        match kill(Pid::from_raw(pid), Signal::SIGTERM) {
            Ok(()) => ended += 1,
            Err(error) => tracing::debug!(pid, %error, "could not end WebKit's network process"),
        }
    }
    ended
}
