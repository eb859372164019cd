//! Headless Claude Code sessions that Taskkeeper launches and owns (design.md §7, claude-code.md
//! §10): `claude -p` speaking stream-json on its stdin and stdout. Such a session needs no
//! hooks and no terminal: Taskkeeper writes tasks and reminders to its stdin as user
//! messages, and its own event stream says when a turn starts and ends, which background
//! commands run, and what it said last.
//!
//! This module is the adapter for that stream. [`StreamEdges`] translates the events into
//! [`Edge`]s (a pure function over the events, tested on a recorded stream); the rest spawns the
//! process, pipes its streams and ends the session when the process ends. Delivery itself goes
//! through the one ranked list in [`taskkeeper_core::delivery::ranked`] like every other method.
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
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_core::delivery;
use taskkeeper_core::session::{Edge, Reach, Session, SessionId, TurnOrigin};
use taskkeeper_core::{AgentKind, StoreError, Timestamp};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::sync::{Notify, mpsc};

#[cfg(unix)]
use nix::sys::signal::Signal;
/// Where there are no process groups to signal, the names stay for the callers.
#[cfg(not(unix))]
#[derive(Debug, Clone, Copy)]
enum Signal {
    SIGTERM,
    SIGKILL,
}

use crate::sessions::Sessions;

/// The header naming the calling session on MCP requests of a launched session.
pub const SESSION_HEADER: &str = "x-taskkeeper-session";
/// The header carrying that session's proof (see [`crate::http::auth`]).
pub const SESSION_PROOF_HEADER: &str = "x-taskkeeper-session-proof";

/// How long a stopped session has to finish after its stdin closed before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// Variables an agent process must not inherit: they would make the child think it is nested
/// in another session, or write into that session's inbox (claude-code.md §17).
const STRIPPED_ENV: [&str; 8] = [
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
    /// The daemon's port, for the MCP server's address.
    pub port: u16,
    /// The worker token and the session proofs, for the MCP server's headers.
    pub(crate) credentials: crate::http::auth::Credentials,
    pub(crate) worker_token: crate::token::Token,
    /// Where the per-session MCP configuration files go (private to the owner).
    pub dir: PathBuf,
}

impl LaunchConfig {
    /// `TASKKEEPER_CLAUDE`, else `claude` on the PATH.
    pub fn program_from_env() -> PathBuf {
        std::env::var_os("TASKKEEPER_CLAUDE")
            .filter(|p| !p.is_empty())
            .map_or_else(|| PathBuf::from("claude"), PathBuf::from)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(
        "desk {desk} is a {agent} desk; Taskkeeper launches headless sessions for claude-code desks only"
    )]
    NotClaudeCode { desk: String, agent: AgentKind },
    #[error("desk {desk}'s directory {dir} does not exist; create it or re-add the desk")]
    NoDirectory { desk: String, dir: PathBuf },
    #[error(
        "cannot start {program}: {source}; install Claude Code, or point TASKKEEPER_CLAUDE at its binary"
    )]
    Spawn {
        program: PathBuf,
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

/// A tool a launched session asks the owner to allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    /// The session's id for the request; the answer names it.
    pub request_id: String,
    pub tool: String,
    pub description: Option<String>,
    /// The tool's input as JSON text (cut to [`INPUT_SHOWN`] characters).
    pub input: String,
    /// The input as asked, for the answer (`updatedInput` repeats it).
    full_input: Value,
}

/// How much of a tool's input a permission request shows.
pub const INPUT_SHOWN: usize = 2000;

impl Permission {
    /// The permission request in a `can_use_tool` control request, if it is one.
    fn from_control(event: &Value) -> Option<Permission> {
        let request = event.get("request")?;
        if request.get("subtype")?.as_str()? != "can_use_tool" {
            return None;
        }
        let full_input = request.get("input").cloned().unwrap_or_else(|| json!({}));
        let text = full_input.to_string();
        let input = if text.chars().count() > INPUT_SHOWN {
            let mut cut: String = text.chars().take(INPUT_SHOWN).collect();
            cut.push('…');
            cut
        } else {
            text
        };
        Some(Permission {
            request_id: event.get("request_id")?.as_str()?.to_owned(),
            tool: request.get("tool_name")?.as_str()?.to_owned(),
            description: request
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            input,
            full_input,
        })
    }

    /// The line that answers it on the session's stdin.
    fn answer(&self, allow: bool, message: Option<&str>) -> String {
        let response = if allow {
            json!({"behavior": "allow", "updatedInput": self.full_input})
        } else {
            json!({"behavior": "deny",
                   "message": message.filter(|m| !m.trim().is_empty()).unwrap_or("The owner did not allow this.")})
        };
        control_response(&self.request_id, response)
    }
}

/// A successful answer to a control request, as one line.
fn control_response(request_id: &str, response: Value) -> String {
    let mut line = json!({"type": "control_response", "response": {
        "subtype": "success", "request_id": request_id, "response": response}})
    .to_string();
    line.push('\n');
    line
}

/// An answer refusing a control request Taskkeeper does not handle, as one line.
fn control_error(request_id: &str, error: &str) -> String {
    let mut line = json!({"type": "control_response", "response": {
        "subtype": "error", "request_id": request_id, "error": error}})
    .to_string();
    line.push('\n');
    line
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
    /// Whole lines for the session's stdin.
    stdin: mpsc::UnboundedSender<String>,
    stop: Arc<Notify>,
}

impl Launched {
    pub(crate) fn holds(&self, id: &SessionId) -> bool {
        crate::sessions::lock(&self.running).contains_key(id)
    }

    /// Queue `text` as a user message; false when the session's stdin is gone.
    pub(crate) fn send(&self, id: &SessionId, text: &str) -> bool {
        self.send_line(id, user_message(text))
    }

    fn send_line(&self, id: &SessionId, line: String) -> bool {
        crate::sessions::lock(&self.running)
            .get(id)
            .is_some_and(|h| h.stdin.send(line).is_ok())
    }

    /// What the session asks the owner to allow, if anything.
    pub(crate) fn asked(&self, id: &SessionId) -> Option<Permission> {
        crate::sessions::lock(&self.asked).get(id).cloned()
    }
}

/// One user message in stream-json.
fn user_message(text: &str) -> String {
    let mut line =
        json!({"type": "user", "message": {"role": "user", "content": text}}).to_string();
    line.push('\n');
    line
}

impl Sessions {
    /// Launch a headless Claude Code session at `desk`: its tasks and reminders go to the
    /// session's stdin, and the session ends when the process does.
    pub async fn launch(&self, desk: &str) -> Result<Session, LaunchError> {
        let config = self
            .launch_config()
            .ok_or(LaunchError::Unavailable)?
            .clone();
        if *self.stopping().borrow() {
            return Err(LaunchError::Unavailable);
        }
        let name = desk.to_owned();
        let desk = self
            .tasks()
            .blocking(move |s, _| s.desk(&name))
            .await?
            .ok_or_else(|| StoreError::NoSuchDesk(desk.to_owned()))?;
        if desk.agent != AgentKind::ClaudeCode {
            return Err(LaunchError::NotClaudeCode {
                desk: desk.name.to_string(),
                agent: desk.agent,
            });
        }
        if !desk.dir.is_dir() {
            return Err(LaunchError::NoDirectory {
                desk: desk.name.to_string(),
                dir: desk.dir.clone(),
            });
        }
        let id = SessionId::generate();
        let mcp = write_mcp_config(&config, &id)?;
        let mut command = tokio::process::Command::new(&config.program);
        command
            .args([
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
                &delivery::session_note(&desk),
                "--mcp-config",
            ])
            .arg(&mcp)
            .current_dir(&desk.dir)
            // The authoritative turn signals (claude-code.md §10).
            .env("CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS", "1")
            .env("TASKKEEPER_DESK", desk.name.as_str())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for var in STRIPPED_ENV {
            command.env_remove(var);
        }
        crate::child_env::scrub_secrets(&mut command);
        // Its own process group: stopping it stops the background commands it started.
        #[cfg(unix)]
        command.process_group(0);
        let mut child = command.spawn().map_err(|source| {
            let _ = std::fs::remove_file(&mcp);
            LaunchError::Spawn {
                program: config.program.clone(),
                source,
            }
        })?;
        let pid = child.id();
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());

        let mut session = Session::new(
            id.clone(),
            desk.name.clone(),
            AgentKind::ClaudeCode,
            desk.dir.clone(),
            self.tasks().now(),
        );
        session.reach = Reach {
            pid,
            headless: true,
            ..Reach::default()
        };
        let session = match self
            .tasks()
            .blocking(move |s, _| s.put_session(session))
            .await
        {
            Ok(s) => s,
            Err(e) => {
                // Nothing may be left of a launch that did not happen: not the process,
                // not the file holding the token.
                kill_group(pid, Signal::SIGKILL);
                let _ = child.start_kill();
                let _ = std::fs::remove_file(&mcp);
                return Err(e.into());
            }
        };

        let (tx, rx) = mpsc::unbounded_channel();
        let stop = Arc::new(Notify::new());
        crate::sessions::lock(&self.launched().running).insert(
            id.clone(),
            Handle {
                stdin: tx,
                stop: stop.clone(),
            },
        );
        if let Some(stdin) = stdin {
            tokio::spawn(write_stdin(stdin, rx));
        }
        let reader = stdout
            .map(|out| tokio::spawn(self.clone().read_stream(id.clone(), desk.name.clone(), out)));
        let stderr_tail = Arc::new(Mutex::new(String::new()));
        if let Some(err) = stderr {
            tokio::spawn(keep_tail(err, stderr_tail.clone()));
        }
        let lifecycle = tokio::spawn(self.clone().watch_process(
            id.clone(),
            child,
            stop,
            reader,
            stderr_tail,
            mcp,
        ));
        crate::sessions::lock(&self.launched().tasks).push(lifecycle);
        tracing::info!(session = %id, desk = %desk.name, pid, "launched a headless Claude Code session");
        self.session_changed(&id);
        Ok(session)
    }

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
            .tasks()
            .blocking(|s, _| s.sessions(None))
            .await?
            .into_iter()
            .filter(|s| s.reach.headless && s.is_live() && !self.launched().holds(&s.id))
            .collect();
        for s in orphans {
            tracing::info!(session = %s.id, "a headless session of an earlier run ended with it");
            self.edge(&s.id, Edge::Ended).await?;
            if s.activity == taskkeeper_core::Activity::WaitingOnOwner {
                // It will not be answered now: its desk's tasks wait no more.
                self.mark_owner_wait(&s.desk, false).await;
            }
        }
        Ok(())
    }

    async fn read_stream(
        self,
        id: SessionId,
        desk: taskkeeper_core::DeskName,
        out: tokio::process::ChildStdout,
    ) {
        let mut lines = BufReader::new(out).lines();
        let mut stream = StreamEdges::default();
        let mut waiting = false;
        loop {
            let line = match lines.next_line().await {
                Ok(Some(line)) => line,
                Ok(None) => return,
                Err(e) => {
                    tracing::warn!(session = %id, error = %e, "reading a headless session's output failed");
                    return;
                }
            };
            let Ok(event) = serde_json::from_str::<Value>(&line) else {
                tracing::debug!(session = %id, line = %line.chars().take(200).collect::<String>(), "not a stream-json event");
                continue;
            };
            if event.get("type").and_then(Value::as_str) == Some("control_request") {
                self.control_request(&id, &desk, &event).await;
                continue;
            }
            if event.get("type").and_then(Value::as_str) == Some("control_cancel_request")
                && let Some(rid) = event.get("request_id").and_then(Value::as_str)
            {
                let withdrawn = {
                    let mut asked = crate::sessions::lock(&self.launched().asked);
                    let ours = asked.get(&id).is_some_and(|p| p.request_id == rid);
                    if ours {
                        asked.remove(&id);
                    }
                    ours
                };
                if withdrawn {
                    self.mark_owner_wait(&desk, false).await;
                }
                self.session_changed(&id);
                continue;
            }
            let edges = stream.edges(&event, || self.take_expected(&id));
            if edges.is_empty() {
                continue;
            }
            // Any activity after waiting on the owner ends the wait (answered, or withdrawn
            // by the session).
            let asks = edges.contains(&Edge::WaitingOnOwner);
            let resumed = waiting && !asks;
            waiting = asks || (waiting && !resumed);
            tracing::debug!(session = %id, ?edges, "headless session");
            for edge in &edges {
                if let Edge::TurnEnded {
                    last_words: Some(words),
                    ..
                } = edge
                {
                    self.worker_said(&desk, words).await;
                }
            }
            if let Err(e) = self.edges(&id, edges).await {
                tracing::warn!(session = %id, error = %e, "recording a headless session's activity failed");
            }
            if resumed {
                self.mark_owner_wait(&desk, false).await;
            }
        }
    }

    /// A control request from the session: a permission request waits for the owner; any
    /// other is refused at once, so the session never waits on an answer that will not come.
    async fn control_request(
        &self,
        id: &SessionId,
        desk: &taskkeeper_core::DeskName,
        event: &Value,
    ) {
        match Permission::from_control(event) {
            Some(permission) => {
                tracing::info!(session = %id, tool = %permission.tool, "a headless session asks the owner to allow a tool");
                // The tasks carry the mark before the owner can see the request.
                self.mark_owner_wait(desk, true).await;
                let notice = crate::notify::Notice::PermissionAsked {
                    session: id.to_string(),
                    desk: desk.to_string(),
                    tool: permission.tool.clone(),
                    description: permission.description.clone(),
                    request_id: Some(permission.request_id.clone()),
                };
                crate::sessions::lock(&self.launched().asked).insert(id.clone(), permission);
                self.notifier().notice(notice);
                self.session_changed(id);
            }
            None => {
                let rid = event
                    .get("request_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                tracing::debug!(session = %id, request = %event, "refused a control request Taskkeeper does not handle");
                self.launched()
                    .send_line(id, control_error(rid, "not supported by Taskkeeper"));
            }
        }
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
        if !self
            .launched()
            .send_line(id, permission.answer(allow, message))
        {
            return Err(LaunchError::NotLaunched(id.to_string()));
        }
        tracing::info!(session = %id, tool = %permission.tool, allow, "the owner answered a permission request");
        if let Some(session) = self.tasks().get_session(id).await? {
            self.mark_owner_wait(&session.desk, false).await;
        }
        self.session_changed(id);
        Ok(())
    }

    async fn watch_process(
        self,
        id: SessionId,
        mut child: tokio::process::Child,
        stop: Arc<Notify>,
        reader: Option<tokio::task::JoinHandle<()>>,
        stderr_tail: Arc<Mutex<String>>,
        mcp: PathBuf,
    ) {
        let mut daemon_stops = self.stopping();
        let pid = child.id();
        let status = tokio::select! {
            status = child.wait() => status,
            () = stop.notified() => stop_child(&mut child).await,
            () = async { let _ = daemon_stops.wait_for(|s| *s).await; } => stop_child(&mut child).await,
        };
        // What it left running in its group (background commands) goes with it.
        kill_group(pid, Signal::SIGTERM);
        crate::sessions::lock(&self.launched().running).remove(&id);
        let was_asked = crate::sessions::lock(&self.launched().asked)
            .remove(&id)
            .is_some();
        // Every event it wrote is recorded before its end is.
        if let Some(reader) = reader {
            let _ = tokio::time::timeout(Duration::from_secs(2), reader).await;
        }
        let _ = std::fs::remove_file(&mcp);
        let tail = crate::sessions::lock(&stderr_tail).clone();
        match &status {
            Ok(s) if s.success() => tracing::info!(session = %id, "a headless session exited"),
            Ok(s) => {
                tracing::warn!(session = %id, status = %s, stderr = %tail.trim(), "a headless session exited with an error")
            }
            Err(e) => tracing::warn!(session = %id, error = %e, "lost a headless session"),
        }
        let before = self.tasks().get_session(&id).await.ok().flatten();
        match self.edge(&id, Edge::Ended).await {
            Ok(session) => {
                let waited = was_asked
                    || before
                        .is_some_and(|b| b.activity == taskkeeper_core::Activity::WaitingOnOwner);
                if waited {
                    // It will not be answered now: its desk's tasks wait no more.
                    self.mark_owner_wait(&session.desk, false).await;
                }
            }
            Err(e) => {
                tracing::debug!(session = %id, error = %e, "could not record a headless session's end")
            }
        }
    }
}

/// Signal the process group a launched session leads (it and its background commands);
/// a group that is gone already is fine.
fn kill_group(pid: Option<u32>, signal: Signal) {
    #[cfg(unix)]
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
    #[cfg(not(unix))]
    let _ = (pid, signal);
}

/// Close stdin (the session exits when it has finished), then kill the process group if it
/// is still there after the grace period.
async fn stop_child(
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

async fn write_stdin(
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
async fn keep_tail(err: tokio::process::ChildStderr, tail: Arc<Mutex<String>>) {
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

fn write_mcp_config(config: &LaunchConfig, id: &SessionId) -> Result<PathBuf, LaunchError> {
    let path = config.dir.join(format!("{id}.mcp.json"));
    let body = json!({"mcpServers": {"taskkeeper": {
        "type": "http",
        "url": format!("http://127.0.0.1:{}/mcp", config.port),
        "headers": {
            "Authorization": format!("Bearer {}", config.worker_token.as_str()),
            "X-Taskkeeper-Session": id.as_str(),
            "X-Taskkeeper-Session-Proof": config.credentials.session_proof(id.as_str()),
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

/// Translates a headless Claude Code session's stream-json events into edges. Turns are
/// bracketed by `session_state_changed` (`running` … `idle`), the authoritative signal; the
/// `result` before `idle` carries the last words or the error; `background_tasks_changed`
/// replaces the set of running background commands. The state events are switched on by an
/// environment variable the docs do not name: should a release stop sending them, each turn's
/// `init` and `result` bracket it instead (a little later at the end, after background agents
/// of the turn rather than with them).
#[derive(Debug, Default)]
pub struct StreamEdges {
    background: Vec<String>,
    last_words: Option<String>,
    failed: bool,
    rate_limited_until: Option<Timestamp>,
    /// The session sends `session_state_changed` (the first comes before the first `init`).
    has_state_events: bool,
    /// It waits on the owner: the next `running` resumes the turn, it starts none.
    waiting: bool,
}

impl StreamEdges {
    /// The edges one event makes; `expected` says whether Taskkeeper wrote the message that
    /// starts a turn (asked only when one starts).
    pub fn edges(&mut self, event: &Value, expected: impl FnOnce() -> bool) -> Vec<Edge> {
        let kind = event.get("type").and_then(Value::as_str).unwrap_or("");
        let subtype = event.get("subtype").and_then(Value::as_str).unwrap_or("");
        match (kind, subtype) {
            ("system", "session_state_changed") => {
                self.has_state_events = true;
                let state = event.get("state").and_then(Value::as_str);
                let was_waiting =
                    std::mem::replace(&mut self.waiting, state == Some("requires_action"));
                match state {
                    Some("running") if was_waiting => vec![Edge::ToolActivity],
                    Some("running") => self.turn_started(expected),
                    Some("requires_action") => vec![Edge::WaitingOnOwner],
                    Some("idle") => self.turn_ended(),
                    _ => vec![],
                }
            }
            ("system", "init") if !self.has_state_events => self.turn_started(expected),
            ("system", "background_tasks_changed") => {
                self.background = event
                    .get("tasks")
                    .and_then(Value::as_array)
                    .map(|tasks| {
                        tasks
                            .iter()
                            .filter_map(|t| t.get("task_id").and_then(Value::as_str))
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                vec![]
            }
            ("system", "task_started") => match event.get("task_id").and_then(Value::as_str) {
                Some(id) => {
                    if !self.background.iter().any(|b| b == id) {
                        self.background.push(id.to_owned());
                    }
                    vec![Edge::BackgroundStarted { id: id.to_owned() }]
                }
                None => vec![],
            },
            ("result", _) => {
                self.failed = event.get("is_error").and_then(Value::as_bool) == Some(true);
                if !self.failed {
                    self.last_words = event
                        .get("result")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                }
                if self.has_state_events {
                    vec![]
                } else {
                    self.turn_ended()
                }
            }
            ("rate_limit_event", _) | ("system", "rate_limit_event") => {
                let info = event.get("rate_limit_info").unwrap_or(event);
                let limited = info
                    .get("status")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s != "allowed" && s != "allowed_warning");
                let resets = info.get("resetsAt").and_then(Value::as_i64);
                if limited && let Some(at) = resets {
                    // Seconds since the epoch (milliseconds when it is that large).
                    let ms = if at > 100_000_000_000 { at } else { at * 1000 };
                    self.rate_limited_until = Some(Timestamp::from_millis(ms));
                }
                vec![]
            }
            _ => vec![],
        }
    }

    fn turn_started(&mut self, expected: impl FnOnce() -> bool) -> Vec<Edge> {
        let origin = if expected() {
            TurnOrigin::Taskkeeper
        } else {
            // Nobody but Taskkeeper writes to its stdin: a turn it did not start was started
            // by a finished background command.
            TurnOrigin::Background
        };
        self.failed = false;
        self.last_words = None;
        vec![Edge::TurnStarted { origin }]
    }

    fn turn_ended(&mut self) -> Vec<Edge> {
        if self.failed {
            vec![Edge::TurnFailed {
                rate_limited_until: self.rate_limited_until.take(),
            }]
        } else {
            vec![Edge::TurnEnded {
                last_words: self.last_words.take(),
                background: self.background.clone(),
            }]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session's stream as Claude Code 2.1.332 wrote it (trimmed to the fields that
    /// matter): a turn, a turn that starts a background command, the turn its end wakes.
    const RECORDED: &str = include_str!("../../../../tests/fixtures/stream-json.jsonl");

    /// The recorded stream's edges, with the events `keep` keeps.
    fn recorded_edges(keep: impl Fn(&Value) -> bool) -> Vec<Edge> {
        let mut stream = StreamEdges::default();
        let mut expected = [true, true, false].into_iter();
        RECORDED
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(keep)
            .flat_map(|e| stream.edges(&e, || expected.next().unwrap()))
            .collect()
    }

    #[test]
    fn without_state_events_init_and_result_bracket_the_turns() {
        assert_eq!(
            recorded_edges(|e| e["subtype"] != "session_state_changed"),
            recorded_edges(|_| true)
        );
    }

    #[test]
    fn a_recorded_stream_makes_turns_background_commands_and_last_words() {
        let edges = recorded_edges(|_| true);
        let ended = |words: &str, bg: &[&str]| Edge::TurnEnded {
            last_words: Some(words.into()),
            background: bg.iter().map(|b| (*b).to_owned()).collect(),
        };
        assert_eq!(
            edges,
            [
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                },
                ended("Hello from fake.", &[]),
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                },
                Edge::BackgroundStarted {
                    id: "byysiwr9z".into()
                },
                ended("started it", &["byysiwr9z"]),
                Edge::TurnStarted {
                    origin: TurnOrigin::Background
                },
                ended("ok", &[]),
            ]
        );
    }

    #[test]
    fn a_permission_request_waits_on_the_owner_and_the_answer_resumes_the_turn() {
        let mut stream = StreamEdges::default();
        let state =
            |s: &str| json!({"type": "system", "subtype": "session_state_changed", "state": s});
        let mut edges = Vec::new();
        for (event, expected) in [
            (state("running"), true),
            (state("requires_action"), false),
            (state("running"), false),
            (state("idle"), false),
        ] {
            edges.extend(stream.edges(&event, || expected));
        }
        assert_eq!(
            edges,
            [
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                },
                Edge::WaitingOnOwner,
                Edge::ToolActivity,
                Edge::TurnEnded {
                    last_words: None,
                    background: vec![]
                },
            ]
        );
    }

    /// The request as Claude Code 2.1.332 sends it, and the answers it accepts.
    #[test]
    fn a_permission_request_and_its_answers() {
        let request = json!({"type": "control_request", "request_id": "r-1", "request": {
            "subtype": "can_use_tool", "tool_name": "Bash", "display_name": "Bash",
            "input": {"command": "touch made.txt", "description": "touch"},
            "description": "touch", "permission_suggestions": []}});
        let p = Permission::from_control(&request).unwrap();
        assert_eq!(
            (
                p.request_id.as_str(),
                p.tool.as_str(),
                p.description.as_deref()
            ),
            ("r-1", "Bash", Some("touch"))
        );
        let allow: Value = serde_json::from_str(p.answer(true, None).trim_end()).unwrap();
        assert_eq!(allow["type"], "control_response");
        assert_eq!(allow["response"]["request_id"], "r-1");
        assert_eq!(allow["response"]["response"]["behavior"], "allow");
        assert_eq!(
            allow["response"]["response"]["updatedInput"]["command"],
            "touch made.txt"
        );
        let deny: Value =
            serde_json::from_str(p.answer(false, Some("Not here.")).trim_end()).unwrap();
        assert_eq!(
            (
                &deny["response"]["response"]["behavior"],
                &deny["response"]["response"]["message"]
            ),
            (&json!("deny"), &json!("Not here."))
        );
        // Another control request is not a permission request; a huge input is cut.
        let other = json!({"type": "control_request", "request_id": "r-2",
                           "request": {"subtype": "hook_callback"}});
        assert_eq!(Permission::from_control(&other), None);
        let mut big = request.clone();
        big["request"]["input"] = json!({"content": "x".repeat(5000)});
        let p = Permission::from_control(&big).unwrap();
        assert_eq!(p.input.chars().count(), INPUT_SHOWN + 1);
    }

    #[test]
    fn a_failed_turn_with_a_rate_limit_says_until_when() {
        let mut stream = StreamEdges::default();
        let events = [
            json!({"type": "system", "subtype": "session_state_changed", "state": "running"}),
            json!({"type": "rate_limit_event", "rate_limit_info": {"status": "rejected", "resetsAt": 1_900_000_000}}),
            json!({"type": "result", "subtype": "error_during_execution", "is_error": true}),
            json!({"type": "system", "subtype": "session_state_changed", "state": "idle"}),
        ];
        let edges: Vec<Edge> = events
            .iter()
            .flat_map(|e| stream.edges(e, || true))
            .collect();
        assert_eq!(
            edges.last(),
            Some(&Edge::TurnFailed {
                rate_limited_until: Some(Timestamp::from_millis(1_900_000_000_000))
            })
        );
    }

    #[test]
    fn unknown_and_partial_events_make_nothing() {
        let mut stream = StreamEdges::default();
        for e in [
            json!({}),
            json!({"type": "assistant"}),
            json!({"type": "system", "subtype": "session_state_changed"}),
            json!({"type": "system", "subtype": "task_started"}),
            json!({"type": "system", "subtype": "background_tasks_changed", "tasks": "x"}),
        ] {
            assert_eq!(stream.edges(&e, || unreachable!()), [], "{e}");
        }
    }

    #[test]
    fn a_user_message_is_one_line_of_stream_json() {
        let line = user_message("two\nlines \"quoted\"");
        assert_eq!(line.matches('\n').count(), 1);
        let v: Value = serde_json::from_str(line.trim_end()).unwrap();
        assert_eq!(v["message"]["content"], "two\nlines \"quoted\"");
        assert_eq!(v["type"], "user");
    }
}
