//! What launching a headless session is, in the words the adapters and the runner
//! ([`super::launched`]) share: what the daemon needs to launch one ([`LaunchConfig`]), how
//! a kind says its process is started ([`Launch`], [`Spawn`]) and reached ([`McpAccess`]),
//! the protocol it speaks on its pipes ([`Headless`], a state machine over its messages that
//! does no I/O), and what can go wrong ([`LaunchError`]). A leaf: it names no kind and not
//! the runner, so each kind's adapter and the runner can both name it.
//!
//! The MCP server reaches a launched session with the worker token and the session's proof
//! in its headers ([`McpAccess`]), sent on stdin (never on the command line, which every
//! user of the machine can read, nor in the environment, which the agent's commands
//! inherit), so its `task_update` calls are that session's and no argument can make them
//! another's.

use std::path::PathBuf;

use serde_json::Value;
use taskkeeper_core::session::{Edge, SessionId};
use taskkeeper_core::{AgentKind, StoreError};

use crate::agents::headers;
use crate::agents::permission::Permission;

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

/// How to launch one headless session: the process, what to add to its environment, its
/// protocol on the pipes, and a file of it to remove when it is gone.
pub(crate) struct Launch {
    pub spawn: Spawn,
    pub env: Vec<(&'static str, String)>,
    pub protocol: Box<dyn Headless>,
    pub cleanup: Option<PathBuf>,
}

impl Launch {
    /// A session the daemon drives over its pipes alone: its hooks stay silent (the daemon
    /// reads its activity itself), and it leaves no file behind.
    pub(crate) fn driven(spawn: Spawn, protocol: Box<dyn Headless>, id: &SessionId) -> Self {
        Self {
            spawn,
            env: vec![(headers::LAUNCHED_SESSION_ENV, id.as_str().to_owned())],
            protocol,
            cleanup: None,
        }
    }
}

/// How to start one kind's process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawn {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// The environment variable that names another binary, for the error that says so.
    pub program_env: &'static str,
}

/// How a launched session's MCP client reaches Taskkeeper: the URL and the headers that
/// carry the worker token and the session's proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpAccess {
    pub url: String,
    pub headers: Vec<(String, String)>,
}

impl McpAccess {
    pub(crate) fn for_session(config: &LaunchConfig, id: &SessionId) -> Self {
        Self {
            url: format!("http://127.0.0.1:{}/mcp", config.port),
            headers: vec![
                (
                    "Authorization".to_owned(),
                    format!("Bearer {}", config.worker_token.as_str()),
                ),
                (headers::SESSION.to_owned(), id.as_str().to_owned()),
                (
                    headers::SESSION_PROOF.to_owned(),
                    config.credentials.session_proof(id.as_str()),
                ),
            ],
        }
    }
}

/// The protocol of one launched agent kind, as a state machine over its messages.
///
/// `expected` answers whether Taskkeeper wrote what starts the turn that is starting (asked
/// only when one starts; see [`crate::delivery::Delivery::take_expected`]).
pub trait Headless: Send {
    /// The lines to write as soon as the process runs (a handshake), if any.
    fn open(&mut self) -> Vec<String>;
    /// A task or reminder for the session: written now if it can start a turn, else held
    /// until it can.
    fn input(&mut self, text: &str, expected: &mut dyn FnMut() -> bool) -> Step;
    /// One JSON message the process wrote.
    fn read(&mut self, message: &Value, expected: &mut dyn FnMut() -> bool) -> Step;
    /// The lines that end the session cleanly before its stdin closes (its stdin closing
    /// then ends the process).
    fn stop(&mut self) -> Vec<String>;
    /// The owner answers request `request_id` (`allow`, or not with `message`): what to write
    /// before the answer itself, and what the session asks next, if it asked more than one
    /// thing at once.
    fn answered(&mut self, _request_id: &str, _allow: bool, _message: Option<&str>) -> Step {
        Step::default()
    }
}

/// What one message read or one input written changes.
#[derive(Debug, Default, PartialEq)]
pub struct Step {
    /// Whole JSON lines to write to the process's stdin, in order.
    pub write: Vec<String>,
    /// What it means for the session, in order.
    pub edges: Vec<Edge>,
    /// The session asks the owner something, or withdraws what it asked.
    pub ask: Option<Ask>,
    /// The session cannot go on (its handshake was refused): the runner closes its stdin.
    pub fatal: Option<String>,
}

/// What a launched session asks of the owner: it waits until the owner answers
/// ([`crate::agents::launched::Launcher::answer_permission`]), or until it withdraws the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    Permission(Permission),
    /// The request with this id no longer waits.
    Withdrawn(String),
}

impl Step {
    pub(crate) fn write(line: String) -> Self {
        Self {
            write: vec![line],
            ..Self::default()
        }
    }

    pub(crate) fn edges(edges: Vec<Edge>) -> Self {
        Self {
            edges,
            ..Self::default()
        }
    }

    pub(crate) fn fatal(why: impl Into<String>) -> Self {
        Self {
            fatal: Some(why.into()),
            ..Self::default()
        }
    }

    /// This step, then `next`.
    pub(crate) fn then(mut self, next: Step) -> Self {
        self.write.extend(next.write);
        self.edges.extend(next.edges);
        self.ask = self.ask.or(next.ask);
        self.fatal = self.fatal.or(next.fatal);
        self
    }
}

/// The agent binary a launch runs: the path in `var` (e.g. `TASKKEEPER_CODEX`) when it is set
/// and not empty, else `default` on the PATH.
pub(crate) fn program_from_env(var: &str, default: &str) -> PathBuf {
    std::env::var_os(var)
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from(default), PathBuf::from)
}
