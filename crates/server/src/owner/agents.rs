//! The owner's agent actions — list the agents, Connect, Disconnect — for the settings
//! panel (through the owner API and the tray app's commands alike). They run the same
//! functions as `taskkeeper connect` ([`crate::agents::connect`]), for the user's settings, naming
//! this daemon's address, and check the result the way `connect --check` does, except that
//! "does the daemon answer" is answered by comparing the address with this daemon's own.

use std::path::PathBuf;

use crate::agents::connect::{self, CLAUDE_CODE, ConnectError, Scope};
use crate::owner::api::{AgentChange, AgentView};
use crate::owner::{OwnerError, OwnerErrorKind, OwnerService};

/// What Connect needs to know about the machine the daemon runs on.
#[derive(Debug, Clone)]
pub struct Machine {
    /// The home whose agents' settings change; `None`: the user's.
    pub home: Option<PathBuf>,
    /// The `taskkeeper` agents will run; `None`: [`connect::cli_binary`].
    pub taskkeeper_bin: Option<PathBuf>,
    /// This daemon's port on 127.0.0.1.
    pub port: u16,
}

impl Machine {
    fn home(&self) -> Result<PathBuf, ConnectError> {
        self.home.clone().map_or_else(connect::home, Ok)
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn view(&self, agent: &str) -> Result<AgentView, ConnectError> {
        if agent == connect::CODEX || agent == connect::GEMINI {
            return Err(ConnectError::OnlyFromTheCli(agent.to_owned()));
        }
        if agent != CLAUDE_CODE {
            return Err(ConnectError::UnknownAgent(agent.to_owned()));
        }
        let home = self.home()?;
        let path = std::env::var_os("PATH");
        let wired = connect::claude_code::inspect(&home, &Scope::User)?;
        let mine = [self.url(), format!("http://localhost:{}", self.port)];
        let check = wired.connected().then(|| {
            connect::claude_code::check(&wired, path.as_deref(), |url| {
                let base = url.trim_end_matches('/').trim_end_matches("/mcp");
                if mine.iter().any(|m| m == base) {
                    Ok(format!("the MCP server `taskkeeper` is this daemon ({url})"))
                } else {
                    Err(format!(
                        "the MCP server `taskkeeper` points at {url}, but this daemon listens on {}; connect again",
                        mine[0]
                    ))
                }
            })
        });
        let (ok, problems) = check.map_or_else(Default::default, |c| (c.ok, c.problems));
        Ok(AgentView {
            agent: CLAUDE_CODE.to_owned(),
            name: "Claude Code".to_owned(),
            found: connect::claude_code::claude_code_found(&home, path.as_deref()),
            connected: wired.connected(),
            working: wired.connected() && problems.is_empty(),
            ok,
            problems,
            can_undo: wired.can_undo,
            files: [&wired.settings_file, &wired.config_file]
                .iter()
                .map(|f| f.to_string_lossy().into_owned())
                .collect(),
        })
    }

    fn connect(&self, agent: &str, force: bool) -> Result<AgentChange, ConnectError> {
        self.view(agent)?;
        let exe = match &self.taskkeeper_bin {
            Some(bin) => bin.clone(),
            None => connect::cli_binary()?,
        };
        let command = connect::command_for(&exe, std::env::var_os("PATH").as_deref(), force)?;
        let changes =
            connect::claude_code::connect(&self.home()?, &Scope::User, &command, &self.url())?;
        tracing::info!(agent, %command, "connected an agent");
        Ok(AgentChange {
            changes: changes.iter().map(ToString::to_string).collect(),
            agent: self.view(agent)?,
        })
    }

    fn disconnect(&self, agent: &str) -> Result<AgentChange, ConnectError> {
        self.view(agent)?;
        let changes = connect::claude_code::disconnect(&self.home()?, &Scope::User)?;
        tracing::info!(agent, "disconnected an agent");
        Ok(AgentChange {
            changes: changes.iter().map(ToString::to_string).collect(),
            agent: self.view(agent)?,
        })
    }
}

impl From<ConnectError> for OwnerError {
    fn from(e: ConnectError) -> Self {
        let kind = match &e {
            ConnectError::UnknownAgent(_)
            | ConnectError::OnlyFromTheCli(_)
            | ConnectError::NoCli { .. } => OwnerErrorKind::NotFound,
            ConnectError::NotJson { .. }
            | ConnectError::NotObject { .. }
            | ConnectError::NotToml { .. }
            | ConnectError::NotTable { .. } => OwnerErrorKind::Invalid,
            // The one refusal the owner may override (`force`).
            ConnectError::InBuildDir { .. } => OwnerErrorKind::Conflict,
            ConnectError::NoHome | ConnectError::Io { .. } => OwnerErrorKind::Internal,
        };
        OwnerError {
            kind,
            message: e.to_string(),
        }
    }
}

async fn off_the_runtime<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, ConnectError> + Send + 'static,
) -> Result<R, OwnerError> {
    // Files and `taskkeeper --version`: blocking work.
    match tokio::task::spawn_blocking(f).await {
        Ok(result) => Ok(result?),
        Err(e) => Err(OwnerError {
            kind: OwnerErrorKind::Internal,
            message: format!("the agents' check stopped: {e}"),
        }),
    }
}

impl OwnerService {
    /// The agents Taskkeeper can connect (Claude Code today), each with what its settings
    /// say now and whether that works.
    pub async fn agents(&self) -> Result<Vec<AgentView>, OwnerError> {
        let machine = self.machine();
        off_the_runtime(move || Ok(vec![machine.view(CLAUDE_CODE)?])).await
    }

    /// Connect an agent for the user, as `taskkeeper connect claude-code` does.
    pub async fn connect_agent(&self, agent: &str, force: bool) -> Result<AgentChange, OwnerError> {
        let (machine, agent) = (self.machine(), agent.to_owned());
        off_the_runtime(move || machine.connect(&agent, force)).await
    }

    /// Put the agent's settings back as they were, as `connect claude-code --undo` does.
    pub async fn disconnect_agent(&self, agent: &str) -> Result<AgentChange, OwnerError> {
        let (machine, agent) = (self.machine(), agent.to_owned());
        off_the_runtime(move || machine.disconnect(&agent)).await
    }
}
