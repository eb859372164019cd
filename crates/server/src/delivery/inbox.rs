//! Claude Code's inbox socket as a way into an idle session (claude-code.md §11): every
//! interactive session binds a Unix socket for messages from its other sessions
//! (`CLAUDE_CODE_MESSAGING_SOCKET`, with a per-session token, `CLAUDE_CODE_MESSAGING_TOKEN`),
//! and a message there starts a turn in an idle session at once. Claude Code frames it as a
//! message from another session, which Taskkeeper's own marks then name.
//!
//! The format is not documented; what Claude Code 2.1.332 takes (seen with the real binary,
//! `crates/cli/tests/it/claude.rs`): newline-delimited JSON in one write, an optional
//! `{"type":"auth","token":…}` line first, then `{"type":"user","session_id":…,"message":
//! {"role":"user","content":…}}`. It answers nothing, and drops a message whose `session_id`
//! is not its own (a socket a newer process reuses, a session `/clear` replaced), so the
//! confirmation is the turn the message starts, as for a paste.
//!
//! The socket a hook names is only what the hook says: Taskkeeper writes only into a socket
//! where Claude Code keeps its own, named for the session's process (`cc-socks/<pid>.sock`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use taskkeeper_core::Session;
use taskkeeper_core::delivery;

use super::Delivery;
use super::push::Pushed;
use crate::sessions::lock;

/// Connecting and writing take far less; a socket that does not take the message this fast
/// is not a way in now.
const WRITE_DEADLINE: Duration = Duration::from_secs(2);

/// The session's inbox socket, when the hook named one that is the session's own: a socket
/// file `<pid>.sock` of the session's process in Claude Code's `cc-socks` directory.
pub(crate) fn owned_socket(session: &Session) -> Result<PathBuf, String> {
    let Some(socket) = &session.reach.messaging_socket else {
        return Err("no inbox socket is known".into());
    };
    let Some(pid) = session.reach.pid else {
        return Err(
            "the session reported no pid, so the inbox socket's owner cannot be checked".into(),
        );
    };
    let path = Path::new(socket);
    let named = path.file_name().and_then(|n| n.to_str()) == Some(&format!("{pid}.sock"))
        && path
            .parent()
            .and_then(Path::file_name)
            .and_then(|d| d.to_str())
            == Some("cc-socks")
        && path.is_absolute();
    if !named {
        return Err(format!(
            "{socket} is not Claude Code's inbox socket of process {pid} (cc-socks/{pid}.sock)"
        ));
    }
    use std::os::unix::fs::FileTypeExt as _;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => Ok(path.to_owned()),
        Ok(_) => Err(format!("{socket} is not a socket")),
        Err(e) => Err(format!("{socket}: {e}")),
    }
}

/// What is written to the socket: the auth line when the token is known, then the message.
pub(crate) fn lines(session: &Session, text: &str) -> String {
    let mut out = String::new();
    if let Some(token) = &session.reach.messaging_token {
        out.push_str(&json!({"type": "auth", "token": token}).to_string());
        out.push('\n');
    }
    let message = json!({
        "type": "user",
        "session_id": session.id.as_str(),
        "message": {"role": "user", "content": text},
    });
    out.push_str(&message.to_string());
    out.push('\n');
    out
}

async fn write(path: &Path, payload: &str) -> Result<(), String> {
    use tokio::io::AsyncWriteExt as _;
    let shown = path.display();
    let send = async {
        let mut stream = tokio::net::UnixStream::connect(path)
            .await
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        stream
            .write_all(payload.as_bytes())
            .await
            .map_err(|e| format!("cannot write to {shown}: {e}"))?;
        stream
            .shutdown()
            .await
            .map_err(|e| format!("cannot finish the write to {shown}: {e}"))
    };
    tokio::time::timeout(WRITE_DEADLINE, send)
        .await
        .map_err(|_| format!("{shown} did not take the message within {WRITE_DEADLINE:?}"))?
}

impl Delivery {
    /// The text as a message on the session's own inbox socket, confirmed by the turn it
    /// starts. Not connected or not written: not delivered, the next way is tried. Written
    /// but no turn: it may still be queued there, so it is never sent again.
    pub(crate) async fn send_inbox(&self, session: &Session, text: &str) -> Pushed {
        let path = match owned_socket(session) {
            Ok(path) => path,
            Err(why) => {
                tracing::warn!(session = %session.id, %why, "refused to write to the inbox socket");
                return Pushed::Failed(format!("refused the inbox socket: {why}"));
            }
        };
        let text = delivery::terminal_safe(text);
        let turn0 = self.sessions.turns(&session.id);
        self.expect_turn(&session.id);
        if let Err(why) = write(&path, &lines(session, &text)).await {
            lock(&self.state.expecting).remove(&session.id);
            return Pushed::Failed(why);
        }
        if self.turn_started(&session.id, turn0).await {
            return Pushed::Delivered;
        }
        lock(&self.state.expecting).remove(&session.id);
        Pushed::Unconfirmed(format!(
            "no turn started after the message on {}",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskkeeper_core::{AgentKind, Timestamp};

    fn session(socket: &str, pid: Option<u32>) -> Session {
        let mut s = Session::new(
            "0b6c3f5e-8d52-4c1c-9d43-3c4f8e2a1b7d".into(),
            "web".parse().unwrap(),
            AgentKind::ClaudeCode,
            "/src/web".into(),
            Timestamp::from_millis(0),
        );
        s.reach.messaging_socket = Some(socket.into());
        s.reach.pid = pid;
        s
    }

    #[test]
    fn only_the_sessions_own_socket_in_claude_codes_directory_is_written_to() {
        let dir = tempfile::tempdir().unwrap();
        let socks = dir.path().join("cc-socks");
        std::fs::create_dir(&socks).unwrap();
        let own = socks.join("4242.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&own).unwrap();
        let own = own.to_str().unwrap();
        assert_eq!(
            owned_socket(&session(own, Some(4242))).as_deref(),
            Ok(Path::new(own))
        );
        let refusals = [
            (
                session(own, Some(4243)),
                "not Claude Code's inbox socket of process 4243",
            ),
            (session(own, None), "reported no pid"),
            (
                session(&format!("{}/4242.sock", dir.path().display()), Some(4242)),
                "cc-socks/4242.sock",
            ),
            (
                session("cc-socks/4242.sock", Some(4242)),
                "not Claude Code's",
            ),
        ];
        for (s, why) in refusals {
            let e = owned_socket(&s).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
        let plain = socks.join("7.sock");
        std::fs::write(&plain, "").unwrap();
        let e = owned_socket(&session(plain.to_str().unwrap(), Some(7))).unwrap_err();
        assert!(e.contains("is not a socket"), "{e}");
        let gone = socks.join("8.sock");
        let e = owned_socket(&session(gone.to_str().unwrap(), Some(8))).unwrap_err();
        assert!(e.contains("No such file"), "{e}");
    }

    #[test]
    fn the_message_names_the_session_and_carries_the_token_when_known() {
        let mut s = session("/tmp/cc-socks/1.sock", Some(1));
        assert_eq!(
            lines(&s, "«Taskkeeper» Task t-1"),
            "{\"type\":\"user\",\"session_id\":\"0b6c3f5e-8d52-4c1c-9d43-3c4f8e2a1b7d\",\
             \"message\":{\"role\":\"user\",\"content\":\"«Taskkeeper» Task t-1\"}}\n"
        );
        s.reach.messaging_token = Some("a8034584".into());
        let text = lines(&s, "two\nlines");
        let mut it = text.lines();
        assert_eq!(
            it.next(),
            Some("{\"type\":\"auth\",\"token\":\"a8034584\"}")
        );
        let message: serde_json::Value = serde_json::from_str(it.next().unwrap()).unwrap();
        assert_eq!(message["message"]["content"], "two\nlines");
        assert_eq!(
            it.next(),
            None,
            "one line per object: a newline in the text is escaped"
        );
    }
}
