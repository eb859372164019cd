//! `taskkeeper connect claude-code`: the CLI's face of [`taskkeeper_server::connect`], the
//! code the window's Connect button runs too. This file only picks the scope, the command to
//! name (this binary, refused from a build directory without `--force`) and the daemon's
//! address (`TASKKEEPER_URL`), and for `--check` asks the daemon over HTTP whether it answers.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use taskkeeper_server::connect::{self, Scope};

use crate::out::say;

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

pub fn claude_code(project: Option<PathBuf>, action: Action) -> anyhow::Result<()> {
    let scope = scope(project)?;
    let home = connect::home()?;
    match action {
        Action::Undo => {
            for change in connect::disconnect(&home, &scope)? {
                say!("{change}");
            }
        }
        Action::Connect { force } => {
            let exe = std::env::current_exe().context("finding the taskkeeper binary")?;
            let command = connect::command_for(&exe, std::env::var_os("PATH").as_deref(), force)?;
            if force && connect::in_build_dir(&exe) {
                eprintln!(
                    "taskkeeper: warning: the hooks name {}, inside a Cargo build directory; \
                     `cargo clean` will break them (connect again with an installed `taskkeeper`)",
                    exe.display()
                );
            }
            for change in connect::connect(&home, &scope, &command, &crate::client::base_url())? {
                say!("{change}");
            }
            say!(
                "Claude Code runs `{command}`; `taskkeeper connect claude-code --check` checks it"
            );
        }
        Action::Check => check(&home, &scope)?,
    }
    Ok(())
}

fn check(home: &std::path::Path, scope: &Scope) -> anyhow::Result<()> {
    let wired = connect::inspect(home, scope)?;
    if !wired.connected() {
        bail!(
            "Claude Code is not connected ({} and {} hold nothing of Taskkeeper's); run `taskkeeper connect claude-code`",
            wired.settings_file.display(),
            wired.config_file.display()
        );
    }
    let result = connect::check(&wired, std::env::var_os("PATH").as_deref(), daemon_answers);
    for line in &result.ok {
        say!("ok: {line}");
    }
    for line in &result.problems {
        say!("problem: {line}");
    }
    if !result.problems.is_empty() {
        bail!(
            "Claude Code's connection to Taskkeeper is broken ({} problem{}, above)",
            result.problems.len(),
            if result.problems.len() == 1 { "" } else { "s" }
        );
    }
    say!("Claude Code is connected to a working Taskkeeper");
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
