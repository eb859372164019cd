//! Headless Claude Code sessions that Taskkeeper launches and owns (design.md §7, claude-code.md
//! §10): `claude -p` speaking stream-json on its stdin and stdout. Such a session needs no
//! hooks and no terminal: Taskkeeper writes tasks and reminders to its stdin as user
//! messages, and its own event stream says when a turn starts and ends, which background
//! commands run, and what it said last.
//!
//! This module is the adapter for that stream. [`StreamJson`] is its protocol behind the one
//! interface every launched kind implements ([`crate::agents::launch::Headless`]), over
//! [`StreamEdges`], which translates the events into session edges (a pure function over the
//! events, tested on a recorded stream); here is how `claude -p` is started ([`launch()`], the
//! Claude Code adapter's launch). The shared runner (`agents::launched`) spawns and drives
//! the process and ends the session when it ends. Delivery itself goes through the one
//! ranked list in [`taskkeeper_core::delivery::ranked`] like every other method.
//!
//! Tools the project's settings do not allow are asked of the owner
//! (`--permission-prompt-tool stdio`): the session waits on the owner, the request is shown
//! with the session ([`crate::agents::permission::Permission`]), and the owner's answer goes back on stdin.
//!
//! The process gets the MCP server with three headers: the worker token (never the
//! owner's), `X-Taskkeeper-Session` and the session's proof, so its `task_update` calls are
//! that session's without a hook, and no argument can make them another's. The
//! configuration is a 0600 file, never an argument: a command line is readable by every user
//! of the machine. Its environment carries no token at all.

use std::path::{Path, PathBuf};

use serde_json::json;
use taskkeeper_core::Desk;
use taskkeeper_core::delivery;
use taskkeeper_core::session::SessionId;

mod stream;

pub use stream::{StreamEdges, StreamJson};

use crate::agents::headers;
use crate::agents::launch::{self, Launch, LaunchConfig, LaunchError, Spawn};

/// The variable that names another `claude` binary.
const PROGRAM_ENV: &str = "TASKKEEPER_CLAUDE";

/// The `claude` a launch runs: `TASKKEEPER_CLAUDE`, else `claude` on the PATH.
pub fn program_from_env() -> PathBuf {
    launch::program_from_env(PROGRAM_ENV, "claude")
}

/// How a headless Claude Code session `id` is launched at `desk` (the Claude Code adapter's
/// launch): `claude -p` speaking stream-json, with the session's id, the desk's note as
/// system prompt, and its MCP configuration in a private file (removed when it is gone).
pub(crate) fn launch(
    desk: &Desk,
    config: &LaunchConfig,
    id: &SessionId,
) -> Result<Launch, LaunchError> {
    let mcp = write_mcp_config(config, id)?;
    let mut args: Vec<String> = [
        "-p",
        "--verbose",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--session-id",
        id.as_str(),
        "--allowedTools",
        "mcp__taskkeeper",
        "--permission-prompt-tool",
        "stdio",
        "--append-system-prompt",
        &delivery::session_note(desk),
        "--mcp-config",
    ]
    .map(str::to_owned)
    .into();
    args.push(mcp.to_string_lossy().into_owned());
    Ok(Launch {
        spawn: Spawn {
            program: config.program.clone(),
            args,
            program_env: PROGRAM_ENV,
        },
        // The authoritative turn signals (claude-code.md §10).
        env: vec![("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS", "1".to_owned())],
        protocol: Box::new(StreamJson::default()),
        cleanup: Some(mcp),
    })
}

fn write_mcp_config(config: &LaunchConfig, id: &SessionId) -> Result<PathBuf, LaunchError> {
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

fn write_private(dir: &Path, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    // 0700 also when it was there already, made by someone less careful.
    crate::private::ensure_private_dir(dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(path)?, bytes)
}
