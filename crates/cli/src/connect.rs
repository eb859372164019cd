//! `taskkeeper connect claude-code` / `codex` / `gemini`: the CLI's face of
//! [`taskkeeper_server::agents::connect`], the code the window's Connect button runs too. This file
//! only picks the scope, the command to name (this binary, refused from a build directory
//! without `--force`), the daemon's address (`TASKKEEPER_URL`) and, for the agents that keep
//! it in their configuration, the worker token; for `--check` it asks the daemon over HTTP
//! whether it answers.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use taskkeeper_server::agents::connect::{self, Scope};

use crate::out::{say, tell};

/// What `connect claude-code` was asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Connect { force: bool },
    Undo,
    Check,
}

fn scope(project: Option<PathBuf>) -> anyhow::Result<Scope> {
    Ok(match project {
        Some(dir) => Scope::Project(
            std::path::absolute(&dir).with_context(|| format!("resolving {}", dir.display()))?,
        ),
        None => Scope::User,
    })
}

/// The command the hooks should name: this binary (see [`connect::command_for`]).
fn hook_command(force: bool) -> anyhow::Result<String> {
    let exe = std::env::current_exe().context("finding the taskkeeper binary")?;
    let command = connect::command_for(&exe, std::env::var_os("PATH").as_deref(), force)?;
    if force && connect::in_build_dir(&exe) {
        tell!(
            "taskkeeper: warning: the hooks name {}, inside a Cargo build directory; \
             `cargo clean` will break them (connect again with an installed `taskkeeper`)",
            exe.display()
        );
    }
    Ok(command)
}

/// The agents connected by `connect codex` and `connect gemini`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Other {
    Codex,
    Gemini,
}

impl Other {
    fn name(self) -> &'static str {
        match self {
            Self::Codex => "Codex CLI",
            Self::Gemini => "Gemini CLI",
        }
    }

    fn cli(self) -> &'static str {
        match self {
            Self::Codex => connect::CODEX,
            Self::Gemini => connect::GEMINI,
        }
    }
}

/// `taskkeeper connect codex` / `connect gemini`.
pub fn other(agent: Other, action: Action) -> anyhow::Result<()> {
    let home = connect::home()?;
    let codex_dir = connect::codex::dir(&home);
    let changes = match action {
        Action::Undo => match agent {
            Other::Codex => connect::codex::disconnect(&codex_dir)?,
            Other::Gemini => connect::gemini::disconnect(&home)?,
        },
        Action::Connect { force } => {
            let command = hook_command(force)?;
            let token = crate::client::worker_token_from_env()?;
            let url = crate::client::base_url();
            let changes = match agent {
                Other::Codex => {
                    // Codex's own app server lists the hooks' hashes to trust.
                    let codex = connect::resolve("codex", std::env::var_os("PATH").as_deref());
                    connect::codex::connect(&codex_dir, &command, &url, &token, codex.as_deref())?
                }
                Other::Gemini => connect::gemini::connect(&home, &command, &url, &token)?,
            };
            for change in &changes {
                say!("{}", change);
            }
            say!(
                "{} runs `{}`; `taskkeeper connect {} --check` checks it",
                agent.name(),
                command,
                agent.cli()
            );
            return Ok(());
        }
        Action::Check => {
            let (wired, mut problems) = match agent {
                Other::Codex => (connect::codex::inspect(&codex_dir)?, Vec::new()),
                Other::Gemini => (
                    connect::gemini::inspect(&home)?,
                    connect::gemini::problems(&home)?,
                ),
            };
            if let (Some(written), Ok(token)) =
                (&wired.mcp_token, crate::client::worker_token_from_env())
                && *written != token
            {
                problems.push(format!(
                    "the MCP server `taskkeeper` in {} sends a token that is not this \
                     daemon's worker token; connect again",
                    wired.config_file.display()
                ));
            }
            return report_check(agent.name(), agent.cli(), &wired, problems);
        }
    };
    for change in changes {
        say!("{}", change);
    }
    Ok(())
}

pub fn claude_code(project: Option<PathBuf>, action: Action) -> anyhow::Result<()> {
    let scope = scope(project)?;
    let home = connect::home()?;
    match action {
        Action::Undo => {
            for change in connect::claude_code::disconnect(&home, &scope)? {
                say!("{}", change);
            }
        }
        Action::Connect { force } => {
            let command = hook_command(force)?;
            for change in
                connect::claude_code::connect(&home, &scope, &command, &crate::client::base_url())?
            {
                say!("{}", change);
            }
            say!(
                "Claude Code runs `{}`; `taskkeeper connect claude-code --check` checks it",
                command
            );
        }
        Action::Check => check(&home, &scope)?,
    }
    Ok(())
}

fn check(home: &std::path::Path, scope: &Scope) -> anyhow::Result<()> {
    let wired = connect::claude_code::inspect(home, scope)?;
    report_check("Claude Code", connect::CLAUDE_CODE, &wired, Vec::new())
}

/// Print what `--check` found; an error when anything is wrong. `more`: problems only this
/// agent has.
fn report_check(
    name: &str,
    cli: &str,
    wired: &connect::Wired,
    more: Vec<String>,
) -> anyhow::Result<()> {
    if !wired.connected() {
        let files = if wired.settings_file == wired.config_file {
            wired.settings_file.display().to_string()
        } else {
            format!(
                "{} and {}",
                wired.settings_file.display(),
                wired.config_file.display()
            )
        };
        bail!(
            "{name} is not connected ({files} hold nothing of Taskkeeper's); run `taskkeeper connect {cli}`"
        );
    }
    let mut result =
        connect::claude_code::check(wired, std::env::var_os("PATH").as_deref(), daemon_answers);
    result.problems.extend(more);
    for line in &result.ok {
        say!("ok: {}", line);
    }
    for line in &result.problems {
        say!("problem: {}", line);
    }
    if !result.problems.is_empty() {
        bail!(
            "{name}'s connection to Taskkeeper is broken ({} problem{}, above)",
            result.problems.len(),
            if result.problems.len() == 1 { "" } else { "s" }
        );
    }
    say!("{} is connected to a working Taskkeeper", name);
    Ok(())
}

/// Does a daemon answer `/healthz` at the MCP entry's address?
fn daemon_answers(url: &str) -> Result<String, String> {
    let base = url.trim_end_matches('/').trim_end_matches("/mcp");
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .new_agent();
    match agent.get(format!("{base}/healthz")).call() {
        Ok(mut r) => {
            let status = r.status();
            let body = r.body_mut().read_to_string().unwrap_or_default();
            if status == 200 && body == "ok" {
                Ok(format!("a Taskkeeper daemon answers at {base}"))
            } else {
                Err(format!(
                    "{base}/healthz answered {status}: that is not a Taskkeeper daemon"
                ))
            }
        }
        Err(e) => Err(format!(
            "no daemon answers at {base} ({e}); start one: `taskkeeper serve`, the app, or `taskkeeper service install`"
        )),
    }
}
