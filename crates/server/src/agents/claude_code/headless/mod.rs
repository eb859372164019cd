//! Headless Claude Code sessions that Taskkeeper launches and owns (design.md §7, claude-code.md
//! §10): `claude -p` speaking stream-json on its stdin and stdout. Such a session needs no
//! hooks and no terminal: Taskkeeper writes tasks and reminders to its stdin as user
//! messages, and its own event stream says when a turn starts and ends, which background
//! commands run, and what it said last.
//!
//! This module is the adapter for that stream. [`StreamJson`] is its protocol behind the one
//! interface every launched kind implements ([`crate::agents::launched::Headless`]), over
//! [`StreamEdges`], which translates the events into [`Edge`]s (a pure function over the
//! events, tested on a recorded stream); here is how `claude -p` is started ([`launch`], the
//! Claude Code adapter's launch), and the registry of launched sessions ([`Launched`]); the
//! shared runner spawns and drives the process and ends the session when it ends. Delivery
//! itself goes through the one ranked list in [`taskkeeper_core::delivery::ranked`] like
//! every other method.
//!
//! Tools the project's settings do not allow are asked of the owner
//! (`--permission-prompt-tool stdio`): the session waits on the owner, the request is shown
//! with the session ([`Permission`]), and the owner's answer goes back on stdin.
//!
//! The process gets the MCP server with three headers: the worker token (never the
//! owner's), `X-Taskkeeper-Session` and the session's proof, so its `task_update` calls are
//! that session's without a hook, and no argument can make them another's. The
//! configuration is a 0600 file, never an argument: a command line is readable by every user
//! of the machine. Its environment carries no token at all.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskkeeper_core::delivery;
use taskkeeper_core::session::{Edge, Session, SessionId};
use taskkeeper_core::{AgentKind, Desk, StoreError};
use tokio::sync::{Notify, mpsc};

mod process;
mod stream;

use process::write_mcp_config;
pub(crate) use process::write_stdin;
pub(crate) use process::{Signal, keep_tail, kill_group, stop_child};
pub use stream::{INPUT_SHOWN, Permission, StreamEdges, StreamJson};

use crate::agents::adapter::Launch;
use crate::agents::launched::{Input, Launcher, Spawn};

/// How long a stopped session has to finish after its stdin closed before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Variables an agent process must not inherit: they would make the child think it is nested
/// in another session, or write into that session's inbox (claude-code.md §17).
pub(crate) const STRIPPED_ENV: [&str; 8] = [
    "CLAUDECODE",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_CODE_MESSAGING_SOCKET",
    "CLAUDE_CODE_MESSAGING_TOKEN",
    "CLAUDE_CODE_ENTRYPOINT",
    "CODEX_THREAD_ID",
    "TMUX",
    "TMUX_PANE",
];

/// What the daemon needs to launch sessions.
#[derive(Debug, Clone)]
pub struct LaunchConfig {
    /// The `claude` executable.
    pub program: PathBuf,
    /// The `codex` executable (`codex app-server`).
    pub codex: PathBuf,
    /// The `gemini` executable (`gemini --acp`).
    pub gemini: PathBuf,
    /// The daemon's port, for the MCP server's address.
    pub port: u16,
    /// The worker token and the session proofs, for the MCP server's headers.
    pub(crate) credentials: crate::http::auth::Credentials,
    pub(crate) worker_token: crate::token::Token,
    /// Where the per-session MCP configuration files go (private to the owner).
    pub dir: PathBuf,
}

/// The variable that names another `claude` binary.
const PROGRAM_ENV: &str = "TASKKEEPER_CLAUDE";

impl LaunchConfig {
    /// `TASKKEEPER_CLAUDE`, else `claude` on the PATH.
    pub fn program_from_env() -> PathBuf {
        crate::agents::launched::program_from_env(PROGRAM_ENV, "claude")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "desk {desk} is a {agent} desk; Taskkeeper launches headless sessions for {kinds} desks (re-add the desk with --agent to name its agent)"
    )]
    NotHeadless {
        desk: String,
        agent: AgentKind,
        /// The kinds it does launch, as a sentence names them.
        kinds: String,
    },
    #[error("desk {desk}'s directory {dir} does not exist; create it or re-add the desk")]
    NoDirectory { desk: String, dir: PathBuf },
    #[error("cannot start {program}: {source}; install {agent}, or point {env} at its binary")]
    SpawnAgent {
        program: PathBuf,
        agent: &'static str,
        env: &'static str,
        source: std::io::Error,
    },
    #[error("cannot write the session's MCP configuration {path}: {source}")]
    Config {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "session {0} was not launched by this Taskkeeper (or has ended): a session started elsewhere is stopped or answered where it runs"
    )]
    NotLaunched(String),
    #[error(
        "this daemon cannot launch sessions now (it is stopping, or has no launch configuration)"
    )]
    Unavailable,
    #[error("session {0} has no permission request waiting")]
    NothingAsked(String),
    #[error(
        "session {session} now asks something else (request {asked}, not {answered}); look again before answering"
    )]
    AskedSomethingElse {
        session: String,
        asked: String,
        answered: String,
    },
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

/// The sessions this process launched: their stdin, and how to stop them.
#[derive(Debug, Default)]
pub(crate) struct Launched {
    running: Mutex<HashMap<SessionId, Handle>>,
    /// The permission request each session waits on the owner for.
    asked: Mutex<HashMap<SessionId, Permission>>,
    /// The processes' lifecycle tasks, awaited at shutdown.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

#[derive(Debug, Clone)]
struct Handle {
    /// What goes to the driver of the session's stdin ([`crate::agents::launched`]).
    input: mpsc::UnboundedSender<Input>,
    stop: Arc<Notify>,
}

impl Launched {
    pub(crate) fn holds(&self, id: &SessionId) -> bool {
        crate::sessions::lock(&self.running).contains_key(id)
    }

    /// Queue `text` as a task for the session's protocol; false when its stdin is gone.
    pub(crate) fn send(&self, id: &SessionId, text: &str) -> bool {
        self.send_input(id, Input::Task(text.to_owned()))
    }

    /// Hold a launched session: what it is given goes to `input`, its driver.
    pub(crate) fn hold(
        &self,
        id: SessionId,
        input: mpsc::UnboundedSender<Input>,
        stop: Arc<Notify>,
    ) {
        crate::sessions::lock(&self.running).insert(id, Handle { input, stop });
    }

    /// The session asks the owner to allow a tool.
    pub(crate) fn ask(&self, id: &SessionId, permission: Permission) {
        crate::sessions::lock(&self.asked).insert(id.clone(), permission);
    }

    /// The session withdrew request `request_id`: true when it was the one it waited on.
    pub(crate) fn withdraw(&self, id: &SessionId, request_id: &str) -> bool {
        let mut asked = crate::sessions::lock(&self.asked);
        let ours = asked.get(id).is_some_and(|p| p.request_id == request_id);
        if ours {
            asked.remove(id);
        }
        ours
    }

    /// Forget what a session that is gone asked.
    pub(crate) fn forget_asked(&self, id: &SessionId) {
        crate::sessions::lock(&self.asked).remove(id);
    }

    /// A launched process's lifecycle, awaited at shutdown.
    pub(crate) fn track(&self, task: tokio::task::JoinHandle<()>) {
        crate::sessions::lock(&self.tasks).push(task);
    }

    /// Forget a session whose process is gone (its input closes).
    pub(crate) fn release(&self, id: &SessionId) {
        crate::sessions::lock(&self.running).remove(id);
    }

    fn send_input(&self, id: &SessionId, input: Input) -> bool {
        crate::sessions::lock(&self.running)
            .get(id)
            .is_some_and(|h| h.input.send(input).is_ok())
    }

    /// What the session asks the owner to allow, if anything.
    pub(crate) fn asked(&self, id: &SessionId) -> Option<Permission> {
        crate::sessions::lock(&self.asked).get(id).cloned()
    }
}

/// Delivery writes to what the launcher holds.
impl crate::delivery::Stdins for Launched {
    fn holds(&self, id: &SessionId) -> bool {
        Launched::holds(self, id)
    }

    fn send(&self, id: &SessionId, text: &str) -> bool {
        Launched::send(self, id, text)
    }
}

impl Launcher {
    /// Stop a session this daemon launched: its stdin closes (it finishes the message it is on
    /// and exits), and it is killed if it has not exited after a grace period.
    pub async fn stop_launched(&self, id: &SessionId) -> Result<(), LaunchError> {
        let handle = crate::sessions::lock(&self.launched().running).remove(id);
        match handle {
            Some(h) => {
                h.stop.notify_one();
                Ok(())
            }
            None => Err(LaunchError::NotLaunched(id.to_string())),
        }
    }

    /// At shutdown: stop every launched session and wait (briefly) until they are gone.
    pub(crate) async fn stop_all_launched(&self) {
        let handles: Vec<Handle> = crate::sessions::lock(&self.launched().running)
            .drain()
            .map(|(_, h)| h)
            .collect();
        for h in handles {
            h.stop.notify_one();
        }
        let tasks: Vec<_> = crate::sessions::lock(&self.launched().tasks)
            .drain(..)
            .collect();
        for t in tasks {
            // The grace, and time to record the end.
            let _ = tokio::time::timeout(STOP_GRACE + Duration::from_secs(5), t).await;
        }
    }

    /// Sessions launched by an earlier run of the daemon died with it (their stdin was its):
    /// end them.
    pub(crate) async fn end_orphaned_headless(&self) -> Result<(), StoreError> {
        let orphans: Vec<Session> = self
            .sessions()
            .tasks()
            .session_store()
            .list(None)
            .await?
            .into_iter()
            .filter(|s| s.reach.headless && s.is_live() && !self.launched().holds(&s.id))
            .collect();
        for s in orphans {
            tracing::info!(session = %s.id, "a headless session of an earlier run ended with it");
            // Its desk's tasks wait on the owner no more (`Sessions::edges`).
            self.sessions().edge(&s.id, Edge::Ended).await?;
        }
        Ok(())
    }

    /// The owner's answer to what a launched session asks: allowed, or denied with a message
    /// the model reads.
    pub async fn answer_permission(
        &self,
        id: &SessionId,
        allow: bool,
        message: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<(), LaunchError> {
        if !self.launched().holds(id) {
            return Err(LaunchError::NotLaunched(id.to_string()));
        }
        let permission = {
            let mut asked = crate::sessions::lock(&self.launched().asked);
            let current = asked
                .get(id)
                .ok_or_else(|| LaunchError::NothingAsked(id.to_string()))?;
            if let Some(answered) = request_id
                && answered != current.request_id
            {
                return Err(LaunchError::AskedSomethingElse {
                    session: id.to_string(),
                    asked: current.request_id.clone(),
                    answered: answered.to_owned(),
                });
            }
            asked
                .remove(id)
                .ok_or_else(|| LaunchError::NothingAsked(id.to_string()))?
        };
        // Answered, the turn goes on; the desk's tasks wait on the owner no more
        // (`Sessions::edges`). Recorded before the answer goes, so what the session asks next
        // (an agent that asked several things at once) is marked after it, not before.
        self.sessions().edge(id, Edge::ToolActivity).await?;
        if !self.launched().send_input(
            id,
            Input::Answer {
                request_id: permission.request_id.clone(),
                line: permission.answer(allow, message),
                allow,
                message: message.map(str::to_owned),
            },
        ) {
            return Err(LaunchError::NotLaunched(id.to_string()));
        }
        tracing::info!(session = %id, tool = %permission.tool, allow, "the owner answered a permission request");
        Ok(())
    }
}
