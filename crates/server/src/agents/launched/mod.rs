//! The runner that drives any headless agent kind: the process Taskkeeper launches at a desk
//! and owns, whose stdin takes the desk's tasks and whose stdout says when its turns start
//! and end; the registry of those it launched ([`registry`]) and the process's plumbing
//! ([`process`]).
//!
//! Each kind speaks its own protocol on those pipes: Claude Code stream-json (`claude -p`,
//! `claude_code::headless`), Codex's app server (`codex app-server`, JSON-RPC,
//! `codex::app_server`), Gemini's Agent Client Protocol (`gemini --acp`, JSON-RPC,
//! `gemini::acp`). A [`Headless`] is that protocol as a plain state machine: what to write
//! first, what a task becomes on stdin, what a line read means as session [`Edge`]s, what
//! ends it cleanly. It does no I/O, so each kind's is tested on recorded exchanges. How a
//! kind is started (program, arguments, environment, a file to remove afterwards) is its
//! adapter's ([`Launch`]); [`Launcher::launch`] starts any kind the same way, in its own
//! process group with a scrubbed environment. The runner ([`Launcher::run_launched`]) then
//! does the I/O the same way for every kind: writes and reads the lines, records the edges,
//! carries a permission request to the owner, and ends the session when the process ends.
//! It names no kind: it finds a desk's through `agents::adapter(kind)`.
//!
//! A task that arrives while a turn runs waits in the protocol for the turn's end (Codex's
//! `turn/start` into a running turn would join it; Gemini's `session/prompt` would cancel
//! it), and then starts the next turn.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use taskkeeper_core::session::{Edge, Reach, Session, SessionId};
use taskkeeper_core::{Desk, DeskName, StoreError};
use tokio::io::{AsyncBufReadExt as _, BufReader};
use tokio::sync::{Notify, mpsc};

mod process;
mod registry;

pub(crate) use registry::Launched;

use crate::agents::launch::{Ask, Headless, Launch, LaunchConfig, LaunchError, Step};
use crate::agents::{adapter, kinds_that};
use crate::delivery::Delivery;
use crate::sessions::Sessions;

/// What goes to a launched session's driver.
#[derive(Debug)]
pub(crate) enum Input {
    /// A task or reminder, for the protocol to write as it writes input.
    Task(String),
    /// The owner's answer to request `request_id`, written as it is (in the protocol's words
    /// already), after what the protocol writes with it ([`Headless::answered`]).
    Answer {
        request_id: String,
        line: String,
        allow: bool,
        message: Option<String>,
    },
}

/// The launcher: the service that starts the sessions Taskkeeper owns and runs them through
/// their protocol, over the sessions registry (what they do) and delivery (whose turn it
/// started). It keeps how to launch ([`LaunchConfig`], none where nothing is launched) and
/// the registry of what it launched ([`Launched`], whose stdins delivery writes to).
#[derive(Clone, Debug)]
pub struct Launcher {
    delivery: Delivery,
    config: Option<Arc<LaunchConfig>>,
    launched: Arc<Launched>,
}

impl Launcher {
    /// A launcher over `delivery`, holding `launched` (the registry `delivery` writes to).
    pub(crate) fn new(
        delivery: Delivery,
        launched: Arc<Launched>,
        config: Option<LaunchConfig>,
    ) -> Self {
        Self {
            delivery,
            config: config.map(Arc::new),
            launched,
        }
    }

    /// The sessions registry its sessions are recorded in.
    pub fn sessions(&self) -> &Sessions {
        self.delivery.sessions()
    }

    pub(crate) fn launch_config(&self) -> Option<&LaunchConfig> {
        self.config.as_deref()
    }

    pub(crate) fn launched(&self) -> &Launched {
        &self.launched
    }

    /// The delivery service it launches over.
    pub(crate) fn delivery(&self) -> &Delivery {
        &self.delivery
    }

    /// Launch a headless session at `desk`, of the desk's kind, as its adapter says
    /// (`Adapter::launch`): its tasks and reminders go to the session's stdin, and the
    /// session ends when the process does.
    pub async fn launch(&self, desk: &str) -> Result<Session, LaunchError> {
        let config = self
            .launch_config()
            .ok_or(LaunchError::Unavailable)?
            .clone();
        if *self.sessions().stopping().borrow() {
            return Err(LaunchError::Unavailable);
        }
        let name = desk.to_owned();
        let desk = self
            .sessions()
            .tasks()
            .desks()
            .get(&name)
            .await?
            .ok_or_else(|| StoreError::NoSuchDesk(desk.to_owned()))?;
        if !desk.dir.is_dir() {
            return Err(LaunchError::NoDirectory {
                desk: desk.name.to_string(),
                dir: desk.dir.clone(),
            });
        }
        let id = SessionId::generate();
        let kind = adapter(desk.agent);
        let Some(launch) = kind.launch(&desk, &config, &id)? else {
            return Err(LaunchError::NotHeadless {
                desk: desk.name.to_string(),
                agent: desk.agent,
                kinds: kinds_that(|c| c.launches_headless),
            });
        };
        let Launch {
            spawn,
            env,
            protocol,
            cleanup,
        } = launch;
        let mut command = tokio::process::Command::new(&spawn.program);
        command
            .args(&spawn.args)
            .current_dir(&desk.dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        for var in process::STRIPPED_ENV {
            command.env_remove(var);
        }
        crate::child_env::scrub_secrets(&mut command);
        command.envs(env).env("TASKKEEPER_DESK", desk.name.as_str());
        // Its own process group: stopping it stops the commands it started.
        #[cfg(unix)]
        command.process_group(0);
        let child = command.spawn().map_err(|source| {
            if let Some(file) = &cleanup {
                let _ = std::fs::remove_file(file);
            }
            LaunchError::SpawnAgent {
                program: spawn.program.clone(),
                agent: kind.name(),
                env: spawn.program_env,
                source,
            }
        })?;
        self.start_launched(id, &desk, child, protocol, cleanup, kind.name())
            .await
    }

    /// Record a session just spawned (headless, its pid) and run it through its protocol. A
    /// launch whose session cannot be recorded leaves nothing behind: not the process, not
    /// `cleanup` (the file holding its MCP configuration, with the token).
    pub(crate) async fn start_launched(
        &self,
        id: SessionId,
        desk: &Desk,
        mut child: tokio::process::Child,
        adapter: Box<dyn Headless>,
        cleanup: Option<PathBuf>,
        agent: &'static str,
    ) -> Result<Session, LaunchError> {
        let pid = child.id();
        let mut session = Session::new(
            id.clone(),
            desk.name.clone(),
            desk.agent,
            desk.dir.clone(),
            self.sessions().tasks().now(),
        );
        session.reach = Reach {
            pid,
            headless: true,
            ..Reach::default()
        };
        let session = match self.sessions().put(session).await {
            Ok(s) => s,
            Err(e) => {
                process::kill_group(pid, process::Signal::SIGKILL);
                let _ = child.start_kill();
                if let Some(file) = &cleanup {
                    let _ = std::fs::remove_file(file);
                }
                return Err(e.into());
            }
        };
        self.run_launched(
            id.clone(),
            desk.name.clone(),
            child,
            adapter,
            cleanup,
            agent,
        );
        tracing::info!(session = %id, desk = %desk.name, pid, agent, "launched a headless session");
        self.sessions().session_changed(&id);
        Ok(session)
    }

    /// Run a launched session's process (stored as a session already) through its protocol
    /// until it ends: held in the registry, driven, watched; `cleanup` is a file of it to
    /// remove when it is gone (its MCP configuration).
    pub(crate) fn run_launched(
        &self,
        id: SessionId,
        desk: DeskName,
        mut child: tokio::process::Child,
        adapter: Box<dyn Headless>,
        cleanup: Option<PathBuf>,
        agent: &'static str,
    ) {
        let (stdin, stdout, stderr) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take());
        let (tx, rx) = mpsc::unbounded_channel();
        let stop = Arc::new(Notify::new());
        self.launched().hold(id.clone(), tx, stop.clone());
        // Its own writer: a session slow to read its stdin never holds up reading its output.
        let (lines, to_write) = mpsc::unbounded_channel();
        if let Some(stdin) = stdin {
            tokio::spawn(process::write_stdin(stdin, to_write));
        }
        let driver = stdout.map(|stdout| {
            tokio::spawn(
                self.clone()
                    .drive(id.clone(), desk.clone(), adapter, lines, stdout, rx),
            )
        });
        let tail = Arc::new(Mutex::new(String::new()));
        if let Some(err) = stderr {
            tokio::spawn(process::keep_tail(err, tail.clone()));
        }
        let lifecycle = tokio::spawn(
            self.clone()
                .watch_launched(id, child, stop, driver, tail, cleanup, agent),
        );
        self.launched().track(lifecycle);
    }

    /// Speak the protocol: what the session is given in, its messages out, until its output
    /// ends. The input closing (the session is stopped) writes the protocol's clean ending
    /// and closes stdin.
    async fn drive(
        self,
        id: SessionId,
        desk: DeskName,
        mut adapter: Box<dyn Headless>,
        stdin: mpsc::UnboundedSender<String>,
        stdout: tokio::process::ChildStdout,
        mut input: mpsc::UnboundedReceiver<Input>,
    ) {
        // Dropping it closes stdin, once what was written before is out.
        let mut stdin = Some(stdin);
        let mut lines = BufReader::new(stdout).lines();
        write_lines(&stdin, adapter.open());
        let mut taking = true;
        // Its output can end before it does (a process that hands its stdout elsewhere):
        // what it is given still goes to its stdin until it is stopped or gone.
        let mut reading = true;
        while taking || reading {
            let step = tokio::select! {
                given = input.recv(), if taking => match given {
                    Some(Input::Task(text)) => adapter.input(&text, &mut || self.delivery.take_expected(&id)),
                    Some(Input::Answer { request_id, line, allow, message }) => adapter
                        .answered(&request_id, allow, message.as_deref())
                        .then(Step::write(line)),
                    None => {
                        taking = false;
                        write_lines(&stdin, adapter.stop());
                        stdin = None;
                        continue;
                    }
                },
                line = lines.next_line(), if reading => match line {
                    Ok(Some(line)) => match serde_json::from_str::<Value>(&line) {
                        Ok(message) => adapter.read(&message, &mut || self.delivery.take_expected(&id)),
                        Err(_) => {
                            tracing::debug!(session = %id, line = %line.chars().take(200).collect::<String>(), "not a JSON message");
                            continue;
                        }
                    },
                    Ok(None) => {
                        reading = false;
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(session = %id, error = %e, "reading a headless session's output failed");
                        reading = false;
                        continue;
                    }
                },
            };
            write_lines(&stdin, step.write);
            if let Some(ask) = step.ask {
                self.owner_asked(&id, &desk, ask).await;
            }
            if !step.edges.is_empty() {
                // Any activity after waiting on the owner ends the wait (answered, or
                // withdrawn by the session): the mark follows the activity (`Sessions::edges`).
                tracing::debug!(session = %id, edges = ?step.edges, "headless session");
                for edge in &step.edges {
                    if let Edge::TurnEnded {
                        last_words: Some(words),
                        ..
                    } = edge
                    {
                        self.sessions().worker_said(&desk, words).await;
                    }
                }
                if let Err(e) = self.sessions().edges(&id, step.edges).await {
                    tracing::warn!(session = %id, error = %e, "recording a headless session's activity failed");
                }
            }
            if let Some(why) = step.fatal {
                tracing::warn!(session = %id, %why, "a headless session cannot go on; stopping it");
                write_lines(&stdin, adapter.stop());
                stdin = None;
                taking = false;
            }
        }
    }

    /// A permission request waits on the owner: the session waits, and its desk's tasks carry
    /// the mark (`Sessions::edges`), before the owner can see the request; then the owner is
    /// told. A withdrawn one waits no more: the session goes on.
    async fn owner_asked(&self, id: &SessionId, desk: &DeskName, ask: Ask) {
        match ask {
            Ask::Permission(permission) => {
                tracing::info!(session = %id, tool = %permission.tool, "a headless session asks the owner to allow a tool");
                if let Err(e) = self.sessions().edge(id, Edge::WaitingOnOwner).await {
                    tracing::warn!(session = %id, error = %e, "recording a permission request failed");
                }
                let notice = crate::notify::Notice::PermissionAsked {
                    session: id.to_string(),
                    desk: desk.to_string(),
                    tool: permission.tool.clone(),
                    description: permission.description.clone(),
                    request_id: Some(permission.request_id.clone()),
                };
                self.launched().ask(id, permission);
                self.sessions().notifier().notice(notice);
            }
            Ask::Withdrawn(request_id) => {
                if self.launched().withdraw(id, &request_id)
                    && let Err(e) = self.sessions().edge(id, Edge::ToolActivity).await
                {
                    tracing::warn!(session = %id, error = %e, "recording a withdrawn permission request failed");
                }
            }
        }
        self.sessions().session_changed(id);
    }

    #[allow(clippy::too_many_arguments)]
    async fn watch_launched(
        self,
        id: SessionId,
        mut child: tokio::process::Child,
        stop: Arc<Notify>,
        driver: Option<tokio::task::JoinHandle<()>>,
        tail: Arc<Mutex<String>>,
        cleanup: Option<PathBuf>,
        agent: &'static str,
    ) {
        let mut daemon_stops = self.sessions().stopping();
        let pid = child.id();
        let status = tokio::select! {
            status = child.wait() => status,
            () = stop.notified() => process::stop_child(&mut child).await,
            () = async { let _ = daemon_stops.wait_for(|s| *s).await; } => {
                // Its input closes: the driver ends it cleanly.
                self.launched().release(&id);
                process::stop_child(&mut child).await
            }
        };
        // What it left running in its group (background commands) goes with it.
        process::kill_group(pid, process::Signal::SIGTERM);
        self.launched().release(&id);
        self.launched().forget_asked(&id);
        // Every message it wrote is recorded before its end is.
        if let Some(driver) = driver {
            let _ = tokio::time::timeout(Duration::from_secs(2), driver).await;
        }
        if let Some(file) = cleanup {
            let _ = std::fs::remove_file(file);
        }
        let tail = crate::sessions::lock(&tail).clone();
        match &status {
            Ok(s) if s.success() => {
                tracing::info!(session = %id, agent, "a headless session exited")
            }
            Ok(s) => {
                tracing::warn!(session = %id, agent, status = %s, stderr = %tail.trim(), "a headless session exited with an error")
            }
            Err(e) => tracing::warn!(session = %id, agent, error = %e, "lost a headless session"),
        }
        // A request it made will not be answered now: its desk's tasks wait on the owner no
        // more (`Sessions::edges`).
        if let Err(e) = self.sessions().edge(&id, Edge::Ended).await {
            tracing::debug!(session = %id, error = %e, "could not record a headless session's end");
        }
    }
}

/// Queue whole lines for the session's stdin (each ends with a newline).
fn write_lines(stdin: &Option<mpsc::UnboundedSender<String>>, lines: Vec<String>) {
    let Some(stdin) = stdin else {
        return;
    };
    for mut line in lines {
        if !line.ends_with('\n') {
            line.push('\n');
        }
        let _ = stdin.send(line);
    }
}

/// A JSON-RPC request as one line.
pub(crate) fn request(id: u64, method: &str, params: Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// A JSON-RPC notification as one line.
pub(crate) fn notification(method: &str, params: Value) -> String {
    serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// The answer to a request from the agent that Taskkeeper does not serve, so the agent
/// never waits on one that will not come.
pub(crate) fn not_served(id: &Value, method: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
        "message": format!("{method} is not served by Taskkeeper, which runs this session headless")}})
    .to_string()
}

/// A JSON-RPC message's shape.
pub(crate) enum Rpc<'a> {
    /// An answer to the request with this id.
    Answer {
        id: u64,
        result: Option<&'a Value>,
        error: Option<&'a Value>,
    },
    /// A request from the agent.
    Request {
        id: &'a Value,
        method: &'a str,
    },
    Notification {
        method: &'a str,
        params: &'a Value,
    },
    Other,
}

pub(crate) fn rpc(message: &Value) -> Rpc<'_> {
    static NULL: Value = Value::Null;
    let method = message.get("method").and_then(Value::as_str);
    match (message.get("id"), method) {
        (Some(id), Some(method)) if !id.is_null() => Rpc::Request { id, method },
        (None, Some(method)) => Rpc::Notification {
            method,
            params: message.get("params").unwrap_or(&NULL),
        },
        (Some(id), None) => match id.as_u64() {
            Some(id) => Rpc::Answer {
                id,
                result: message.get("result"),
                error: message.get("error"),
            },
            None => Rpc::Other,
        },
        _ => Rpc::Other,
    }
}

/// The turn's texts as one input: each task or reminder as it came, in order.
pub(crate) fn joined(texts: &[String]) -> String {
    texts.join("\n\n")
}
