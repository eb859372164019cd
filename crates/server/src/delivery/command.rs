//! The desk's delivery command: the owner's own way in for an agent Taskkeeper does not know,
//! run with `sh -c`, the text on its stdin, within a deadline, with an environment scrubbed of
//! Taskkeeper's tokens.

use std::path::Path;
use std::time::Duration;

use taskkeeper_core::Desk;
use taskkeeper_core::delivery::{self};
use taskkeeper_core::session::Session;

use super::Delivery;
use super::push::{Parcel, Pushed};
use crate::sessions::lock;

/// How long the desk's command may take.
pub(crate) const COMMAND_DEADLINE: Duration = Duration::from_secs(30);

/// Run `command` with `sh -c`, `text` on its stdin, within [`COMMAND_DEADLINE`].
async fn run_shell(
    command: &str,
    dir: &Path,
    env: &[(&str, &str)],
    text: &str,
) -> Result<(), String> {
    use tokio::io::AsyncWriteExt as _;
    let mut child = tokio::process::Command::new("sh");
    crate::child_env::scrub_secrets(&mut child);
    let mut child = child
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start it in {}: {e}", dir.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is fine: a closed pipe is not an error.
        let _ = stdin.write_all(text.as_bytes()).await;
    }
    let out = tokio::time::timeout(COMMAND_DEADLINE, child.wait_with_output())
        .await
        .map_err(|_| format!("still running after {COMMAND_DEADLINE:?}; killed"))?
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr
            .trim()
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        Err(format!("exited with {}: {tail}", out.status))
    }
}

impl Delivery {
    /// The desk's command, run by `sh -c` in the desk's directory with the text on its stdin
    /// and the task ids, desk and session in its environment; exit status 0 is the
    /// confirmation.
    pub(crate) async fn run_command(
        &self,
        desk: &Desk,
        session: Option<&Session>,
        parcel: &Parcel,
        text: &str,
    ) -> Pushed {
        let Some(command) = &desk.deliver_command else {
            return Pushed::Failed("the desk has no command".into());
        };
        let text = &delivery::terminal_safe(text);
        let ids: Vec<&str> = parcel.items.iter().map(|t| t.id.as_str()).collect();
        if let Some(s) = session {
            self.expect_turn(&s.id);
        }
        let run = run_shell(
            command,
            &desk.dir,
            &[
                ("TASKKEEPER_DESK", desk.name.as_str()),
                ("TASKKEEPER_TASKS", &ids.join(" ")),
                ("TASKKEEPER_SESSION", session.map_or("", |s| s.id.as_str())),
            ],
            text,
        )
        .await;
        match run {
            Ok(()) => Pushed::Delivered,
            Err(why) => {
                if let Some(s) = session {
                    lock(&self.state.expecting).remove(&s.id);
                }
                Pushed::Failed(format!("the desk's command `{command}`: {why}"))
            }
        }
    }
}
