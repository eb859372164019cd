//! The launched process itself: its private MCP configuration file, its stdin, the tail of
//! its stderr, and stopping it (stdin closed, then its process group killed after a grace).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;
use taskkeeper_core::session::SessionId;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

use super::{LaunchConfig, LaunchError, STOP_GRACE};
use crate::agents::headers;

#[cfg(unix)]
pub(crate) use nix::sys::signal::Signal;
/// Where there are no process groups to signal, the names stay for the callers.
#[cfg(not(unix))]
#[derive(Debug, Clone, Copy)]
pub(crate) enum Signal {
    SIGTERM,
    SIGKILL,
}

/// Signal the process group a launched session leads (it and its background commands);
/// a group that is gone already is fine.
pub(crate) fn kill_group(pid: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
    #[cfg(not(unix))]
    let _ = (pid, signal);
}

/// Close stdin (the session exits when it has finished), then kill the process group if it
/// is still there after the grace period.
pub(crate) async fn stop_child(
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

pub(crate) async fn write_stdin(
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
pub(crate) async fn keep_tail(err: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
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

pub(super) fn write_mcp_config(
    config: &LaunchConfig,
    id: &SessionId,
) -> Result<PathBuf, LaunchError> {
    let path = config.dir.join(format!("{id}.mcp.json"));
    let body = json!({"mcpServers": {"taskkeeper": {
        "type": "http",
        "url": format!("http://127.0.0.1:{}/mcp", config.port),
        "headers": {
            "Authorization": format!("Bearer {}", config.worker_token.as_str()),
            (headers::SESSION): id.as_str(),
            (headers::SESSION_PROOF): config.credentials.session_proof(id.as_str()),
        },
    }}});
    write_private(&config.dir, &path, body.to_string().as_bytes()).map_err(|source| {
        LaunchError::Config {
            path: path.clone(),
            source,
        }
    })?;
    Ok(path)
}

pub(super) fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // 0700 also when it was there already, made by someone less careful.
    crate::private::ensure_private_dir(dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(path)?, bytes)
}
