//! The launched process itself, whatever its kind: the environment it must not inherit, its
//! stdin, the tail of its stderr, and stopping it (stdin closed, then its process group
//! killed after a grace).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

/// How long a stopped session has to finish after its stdin closed before it is killed.
pub(super) const STOP_GRACE: Duration = Duration::from_secs(10);

/// Variables an agent process must not inherit: they would make the child think it is nested
/// in another session, or write into that session's inbox (claude-code.md §17).
pub(super) const STRIPPED_ENV: [&str; 8] = [
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "CLAUDE_CODE_MESSAGING_TOKEN",
    "CLAUDE_CODE_ENTRYPOINT",
    "CODEX_THREAD_ID",
    "TMUX",
    "TMUX_PANE",
];

#[cfg(unix)]
pub(super) use nix::sys::signal::Signal;
/// Where there are no process groups to signal, the names stay for the callers.
#[cfg(not(unix))]
#[derive(Debug, Clone, Copy)]
pub(super) enum Signal {
    SIGTERM,
    SIGKILL,
}

/// Signal the process group a launched session leads (it and its background commands);
/// a group that is gone already is fine.
pub(super) fn kill_group(pid: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
    #[cfg(not(unix))]
    let _ = (pid, signal);
}

/// Close stdin (the session exits when it has finished), then kill the process group if it
/// is still there after the grace period.
pub(super) async fn stop_child(
    child: &mut tokio::process::Child,
) -> std::io::Result<std::process::ExitStatus> {
    // The writer task holds stdin; its sender is gone, so it closes stdin now.
    match tokio::time::timeout(STOP_GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            kill_group(child.id(), Signal::SIGKILL);
            let _ = child.start_kill();
            child.wait().await
        }
    }
}

pub(super) async fn write_stdin(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::UnboundedReceiver<String>,
) {
    while let Some(line) = rx.recv().await {
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            return;
        }
    }
    // Dropping stdin closes it: the session finishes and exits.
}

/// Keep the last few KiB of what the process wrote to stderr, for the log when it fails.
pub(super) async fn keep_tail(err: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
    let mut lines = BufReader::new(err).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut t = crate::sessions::lock(&tail);
        t.push_str(&line);
        t.push('\n');
        if t.len() > 4096 {
            let cut = t.len() - 4096;
            let cut = (cut..t.len()).find(|i| t.is_char_boundary(*i)).unwrap_or(0);
            t.drain(..cut);
        }
    }
}
