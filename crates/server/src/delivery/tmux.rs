//! The tmux paste into an idle interactive session. A pane is pasted into, and Enter pressed
//! in it, only while the session's own process is in front of the pane's terminal (checked
//! right before the paste and again before each Enter): the pane a hook names is only what
//! the hook says, and a pane of the session's own has a shell behind the agent, which gets
//! the keys once the agent is suspended, has an editor or pager in front of it, or is gone.
//! Each paste has a tmux buffer of its own, loaded and pasted in one tmux command and deleted
//! with the paste, so sessions pasted into at once never take each other's text.

use std::sync::atomic::Ordering;
use std::time::Duration;

use taskkeeper_core::delivery::{self};
use taskkeeper_core::session::Session;

use super::Delivery;
use super::process::{self, Process};
use super::push::Pushed;
use crate::sessions::lock;

/// Run one tmux command (or several, separated by a `;` argument) against the session's own
/// tmux server, with `input` on its stdin; what it printed.
async fn tmux_with(socket: &str, args: &[&str], input: Option<&str>) -> Result<String, String> {
    use tokio::io::AsyncWriteExt as _;
    let mut command = tokio::process::Command::new("tmux");
    crate::child_env::scrub_secrets(&mut command);
    let mut child = command
        .arg("-S")
        .arg(socket)
        .args(args)
        .stdin(if input.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot run tmux: {e}"))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        // A tmux that stops reading has failed, and says why on its stderr.
        let _ = stdin.write_all(text.as_bytes()).await;
    }
    let out = child
        .wait_with_output()
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

async fn tmux(socket: &str, args: &[&str]) -> Result<String, String> {
    tmux_with(socket, args, None).await
}

/// Whether the session's own process is in front of its pane, from what `/proc` says now:
/// `agent` is the process of the session's pid, `started` when that pid started as the
/// session reported it, `line` the pid and its ancestors, `pane` the pane's own process (the
/// one tmux started in it), `front` the leader of the process group in front of the pane's
/// terminal, if it can be read (for the reason). The one rule of what a paste or an Enter may
/// go to.
fn agent_in_front(
    agent: &Process,
    started: Option<u64>,
    line: &[u32],
    pane: &Process,
    front: Option<&Process>,
) -> Result<(), String> {
    let pid = agent.pid;
    match started {
        None => {
            return Err(format!(
                "when the session's process {pid} started was not recorded, so it cannot be told from another process with its pid (its next hook records it)"
            ));
        }
        Some(s) if s != agent.started => {
            return Err(format!(
                "process {pid} is not the session's any more ({}, started at another time): the agent is gone and its pid was reused",
                agent.name
            ));
        }
        Some(_) => {}
    }
    if !line.contains(&pane.pid) {
        return Err(format!(
            "the pane's process {} is neither the session's process {pid} nor one of its ancestors",
            pane.pid
        ));
    }
    if pane.terminal == 0 || agent.terminal != pane.terminal {
        return Err(format!(
            "the session's process {pid} is not on the pane's terminal"
        ));
    }
    if pane.in_front != agent.group {
        let who = front.map_or_else(
            || format!("process group {}", pane.in_front),
            |f| format!("{} (process {})", f.name, f.pid),
        );
        return Err(format!(
            "{who} is in front of the pane's terminal, not the session's process {pid} ({}): the agent is suspended, or runs something in front of itself; nothing is pasted or pressed there",
            agent.name
        ));
    }
    Ok(())
}

impl Delivery {
    /// The tmux paste: the text (bracketed, from a buffer of its own), a separate Enter, and
    /// the turn it starts; Enter is pressed once more if no turn starts. Only while the
    /// session's own process is in front of the pane ([`agent_in_front`]), checked right
    /// before the paste and before each Enter: a later report may have moved the reach
    /// elsewhere, and the agent may be suspended at any time.
    pub(crate) async fn paste(&self, session: &Session, text: &str) -> Pushed {
        let (Some(pane), Some(socket)) = (&session.reach.tmux_pane, &session.reach.tmux_socket)
        else {
            return Pushed::Failed("no tmux pane is known".into());
        };
        let pane = &match Self::pane_in_front(session, socket, pane).await {
            Ok(pane) => pane,
            Err(why) => {
                tracing::warn!(session = %session.id, %pane, %socket, %why, "refused to paste into the tmux pane");
                return Pushed::Failed(format!("refused tmux pane {pane}: {why}"));
            }
        };
        let text = &delivery::terminal_safe(text);
        let buffer = &format!(
            "taskkeeper-{}-{}",
            session.id,
            self.state.pastes.fetch_add(1, Ordering::Relaxed)
        );
        let turn0 = self.sessions.turns(&session.id);
        self.expect_turn(&session.id);
        // Loaded from stdin and pasted in one tmux command: the text is no argument of
        // tmux's (so no size limit of one, nor its `;`), and `-d` deletes the buffer.
        let pasted = tmux_with(
            socket,
            &[
                "load-buffer",
                "-b",
                buffer,
                "-",
                ";",
                "paste-buffer",
                "-p",
                "-d",
                "-b",
                buffer,
                "-t",
                pane,
            ],
            Some(text),
        )
        .await;
        if let Err(e) = pasted {
            // A buffer that was loaded but not pasted is not left behind.
            let _ = tmux(socket, &["delete-buffer", "-b", buffer]).await;
            lock(&self.state.expecting).remove(&session.id);
            return Pushed::Failed(e);
        }
        for attempt in 0..2 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            if let Err(why) = Self::pane_in_front(session, socket, pane).await {
                tracing::warn!(session = %session.id, %pane, %socket, %why, "pasted, but did not press Enter in the tmux pane");
                lock(&self.state.expecting).remove(&session.id);
                return Pushed::Unconfirmed(format!(
                    "pasted into tmux pane {pane}, but pressed no Enter: {why}"
                ));
            }
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

    /// The pane (as tmux's own `%id`, so the paste goes where the check looked) when the
    /// session's own process is in front of it ([`agent_in_front`]). A hook names its pane
    /// and pid as it likes, and a pane of the session's own has a shell behind the agent:
    /// without this, a task's words could be typed into a shell and run.
    async fn pane_in_front(session: &Session, socket: &str, pane: &str) -> Result<String, String> {
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
        let agent = process::read(pid)?;
        let line = process::process_and_ancestors(pid)?;
        let pane = process::read(pane_pid)?;
        let front = u32::try_from(pane.in_front)
            .ok()
            .and_then(|g| process::read(g).ok());
        agent_in_front(
            &agent,
            session.reach.pid_started,
            &line,
            &pane,
            front.as_ref(),
        )?;
        Ok(pane_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, name: &str, group: i32, in_front: i32) -> Process {
        Process {
            pid,
            name: name.into(),
            parent: 1,
            group,
            terminal: 34816,
            in_front,
            started: 1000,
        }
    }

    /// The agent in front of its pane passes; the same pid started at another time (the
    /// agent gone, its pid reused) does not, nor one whose start was never recorded.
    #[test]
    fn a_pid_that_started_at_another_time_is_not_the_sessions() {
        let pane = process(10, "bash", 10, 20);
        let agent = process(20, "claude", 20, 20);
        let line = [20, 10, 1];
        assert_eq!(
            agent_in_front(&agent, Some(1000), &line, &pane, Some(&agent)),
            Ok(())
        );
        let reused = agent_in_front(&agent, Some(999), &line, &pane, Some(&agent)).unwrap_err();
        assert!(reused.contains("pid was reused"), "{reused}");
        let unknown = agent_in_front(&agent, None, &line, &pane, Some(&agent)).unwrap_err();
        assert!(unknown.contains("not recorded"), "{unknown}");
    }

    /// A process on another terminal, under another pane, or behind whoever is in front is
    /// refused, and the refusal names who is in front.
    #[test]
    fn only_the_agent_in_front_of_its_own_pane_passes() {
        let pane = process(10, "bash", 10, 10);
        let agent = process(20, "claude", 20, 10);
        let line = [20, 10, 1];
        let behind = agent_in_front(&agent, Some(1000), &line, &pane, Some(&pane)).unwrap_err();
        assert!(
            behind.starts_with("bash (process 10) is in front"),
            "{behind}"
        );
        let elsewhere = Process {
            terminal: 34817,
            ..process(20, "claude", 20, 10)
        };
        let front = process(10, "bash", 20, 20);
        assert!(
            agent_in_front(&elsewhere, Some(1000), &line, &front, None)
                .unwrap_err()
                .contains("not on the pane's terminal")
        );
        assert!(
            agent_in_front(&agent, Some(1000), &[20, 1], &pane, None)
                .unwrap_err()
                .contains("neither the session's process")
        );
    }
}
