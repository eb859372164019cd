//! The tmux paste into an idle interactive session. A pane is pasted into only when it
//! belongs to the session's own process (its pane's process is the session or an ancestor),
//! since the pane a hook names is only what the hook says.

use std::time::Duration;

use taskkeeper_core::delivery::{self};
use taskkeeper_core::session::Session;

use super::Delivery;
use super::push::Pushed;
use crate::sessions::lock;

/// `pid` and its ancestors, nearest first, up to the first process (or a bound, against a
/// table that changes while it is read).
#[cfg(target_os = "linux")]
fn process_and_ancestors(pid: u32) -> Result<Vec<u32>, String> {
    let mut line = vec![pid];
    let mut at = pid;
    while at > 1 && line.len() < 256 {
        let stat = std::fs::read_to_string(format!("/proc/{at}/stat"))
            .map_err(|e| format!("cannot read process {at}: {e}"))?;
        // Field 4 is the parent; the name (field 2) may hold spaces and parentheses, so
        // the fields are counted after its closing one.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
            .ok_or_else(|| format!("cannot read the parent of process {at}"))?;
        if parent == 0 || line.contains(&parent) {
            break;
        }
        line.push(parent);
        at = parent;
    }
    Ok(line)
}

/// Elsewhere there is no /proc to read a process's parent from, and a pane that cannot be
/// checked is not pasted into: the waiter or the desk's command delivers instead.
#[cfg(not(target_os = "linux"))]
fn process_and_ancestors(_pid: u32) -> Result<Vec<u32>, String> {
    Err("a pane's owner can only be checked on Linux".into())
}

/// Run one tmux command against the session's own tmux server; what it printed.
async fn tmux(socket: &str, args: &[&str]) -> Result<String, String> {
    let mut command = tokio::process::Command::new("tmux");
    crate::child_env::scrub_secrets(&mut command);
    let out = command
        .arg("-S")
        .arg(socket)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run tmux: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "tmux {}: {}",
            args.first().unwrap_or(&""),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Delivery {
    /// The tmux paste: the text (bracketed), a separate Enter, and the turn it starts; Enter
    /// is pressed once more if no turn starts. Only into a pane of the session's own process,
    /// checked right before each paste: a later report may have moved the reach elsewhere.
    pub(crate) async fn paste(&self, session: &Session, text: &str) -> Pushed {
        let (Some(pane), Some(socket)) = (&session.reach.tmux_pane, &session.reach.tmux_socket)
        else {
            return Pushed::Failed("no tmux pane is known".into());
        };
        let pane = &match Self::owned_pane(session, socket, pane).await {
            Ok(pane) => pane,
            Err(why) => {
                tracing::warn!(session = %session.id, %pane, %socket, %why, "refused to paste into the tmux pane");
                return Pushed::Failed(format!("refused tmux pane {pane}: {why}"));
            }
        };
        let text = &delivery::terminal_safe(text);
        let turn0 = self.sessions.turns(&session.id);
        self.expect_turn(&session.id);
        let pasted = async {
            tmux(socket, &["set-buffer", "-b", "taskkeeper", "--", text]).await?;
            tmux(
                socket,
                &["paste-buffer", "-p", "-d", "-b", "taskkeeper", "-t", pane],
            )
            .await
        };
        if let Err(e) = pasted.await {
            lock(&self.state.expecting).remove(&session.id);
            return Pushed::Failed(e);
        }
        for attempt in 0..2 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            if let Err(e) = tmux(socket, &["send-keys", "-t", pane, "Enter"]).await {
                lock(&self.state.expecting).remove(&session.id);
                return Pushed::Unconfirmed(e);
            }
            if self.turn_started(&session.id, turn0).await {
                tracing::debug!(session = %session.id, attempt, "the paste started a turn");
                return Pushed::Delivered;
            }
        }
        lock(&self.state.expecting).remove(&session.id);
        Pushed::Unconfirmed(format!(
            "no turn started in pane {pane} after the paste and two Enters"
        ))
    }

    /// The pane (as tmux's own `%id`, so the paste goes where the check looked) when it
    /// belongs to the session's process: the pane's process is the session's pid or one of
    /// its ancestors (the agent runs in the pane, or under a shell that does; Gemini's pane
    /// runs its first `node`, which starts the session's own again). A hook names
    /// its pane and pid as it likes; without this, a report naming someone else's pane (a
    /// shell) would have a task's words typed into it and run.
    async fn owned_pane(session: &Session, socket: &str, pane: &str) -> Result<String, String> {
        let Some(pid) = session.reach.pid else {
            return Err(
                "the session reported no pid, so the pane's owner cannot be checked".into(),
            );
        };
        let shown = tmux(
            socket,
            &[
                "display-message",
                "-p",
                "-t",
                pane,
                "#{pane_id} #{pane_pid}",
            ],
        )
        .await?;
        let (pane_id, pane_pid) = shown
            .trim()
            .split_once(' ')
            .and_then(|(id, p)| Some((id.to_owned(), p.parse::<u32>().ok()?)))
            .ok_or_else(|| format!("tmux did not say which process runs the pane: {shown:?}"))?;
        let line = process_and_ancestors(pid)?;
        if line.contains(&pane_pid) {
            Ok(pane_id)
        } else {
            Err(format!(
                "the pane's process {pane_pid} is neither the session's process {pid} nor one of its ancestors"
            ))
        }
    }
}
