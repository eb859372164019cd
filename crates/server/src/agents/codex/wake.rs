//! A Codex TUI's app server as a way into an idle session (docs/agents.md, Codex: "Running
//! interactive TUI"). An interactive Codex runs its thread in a shared app server (by
//! default the daemon the TUI starts, `codex app-server --listen unix:// --managed-daemon`;
//! or one the TUI joins with `--remote unix://`), and every client of that server may start
//! a turn in a thread it runs: a `turn/start` into the session's thread wakes the idle TUI,
//! which shows the prompt and the reply as its own. The session's hooks run in that server,
//! so their `CODEX_HOME` names where its control socket is
//! (`agents::codex::adapter::control_socket`); the session id the hooks report is the
//! thread's id. (Seen with 0.171.0: the TUI starts that daemon unless it runs with
//! `--no-daemon` or `--dangerously-bypass-hook-trust`, which keep the thread in-process; it
//! runs a TUI's hooks, SessionStart too, from the session's first turn on.)
//!
//! The socket speaks WebSocket framing over a Unix socket; JSON-RPC inside, as on the
//! headless app server's stdio (`agents::codex::app_server`). What is checked before the
//! one write that carries the text, each refusal leaving the task for the next way in:
//!
//! - the socket is Codex's control socket under a Codex home (`…/app-server-control/
//!   app-server-control.sock`, absolute), a socket (Codex links it to a short path elsewhere:
//!   what it leads to counts), owned by the daemon's own user, so no other user's process
//!   gets an asker's words;
//! - the app server on it says it runs that Codex home (`initialize`), holds the session's
//!   thread (`thread/loaded/list`: a TUI with `--no-daemon` runs its thread in-process, and a
//!   daemon beside it does not hold it), and the thread is idle (`thread/read`): a
//!   `turn/start` into a running turn would join it, which is a steer, not a delivery, so a
//!   busy thread is left for its turn's end to hand over.
//!
//! The text is the one text input of the `turn/start`, made `terminal_safe` (the TUI shows
//! it); nothing else in the request comes from an asker. The confirmation is the turn it
//! starts: Codex answers `turn/start` with the new turn. The connection is closed then, so
//! whatever the turn asks a client (an approval) goes to the TUI, not here.

use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use taskkeeper_core::Session;
use taskkeeper_core::delivery;
use tokio::net::UnixStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

use super::adapter::CONTROL_SOCKET;
use super::app_server as codex;
use crate::agents::launched::{Rpc, request, rpc};
use crate::delivery::{AppServerWay, Pushed};

/// Connecting, the checks and the `turn/start` each take milliseconds (docs/agents.md: an
/// app-server turn in 0.17-0.5 s); an app server that does not answer this fast is not a
/// way in now.
const DEADLINE: Duration = Duration::from_secs(5);

/// The session's app-server socket, when it is a Codex control socket owned by this
/// daemon's user.
pub(crate) fn owned_socket(session: &Session) -> Result<PathBuf, NoSocket> {
    socket_of_user(session, nix::unistd::getuid().as_raw())
}

/// Why a session's app-server socket is not connected to.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NoSocket {
    /// No app server runs for the session's Codex home: none was started (`codex
    /// --no-daemon`, whose hooks name the home all the same) or it has ended. The usual
    /// case for such a session, so no warning: the next way in is tried.
    #[error("{0}")]
    Absent(String),
    /// Something is there, but not a control socket of this daemon's user.
    #[error("{0}")]
    Refused(String),
}

/// The session's app-server socket, when it is a Codex control socket owned by user `me`.
fn socket_of_user(session: &Session, me: u32) -> Result<PathBuf, NoSocket> {
    let Some(socket) = &session.reach.app_server_socket else {
        return Err(NoSocket::Absent("no app-server socket is known".into()));
    };
    let path = Path::new(socket);
    if !path.is_absolute() || !path.ends_with(CONTROL_SOCKET) {
        return Err(NoSocket::Refused(format!(
            "{socket} is not a Codex app server's control socket (<CODEX_HOME>/{CONTROL_SOCKET})"
        )));
    }
    // Followed: Codex keeps the socket under a short path and links it here.
    let meta = std::fs::metadata(path).map_err(|e| {
        let why = format!("{socket}: {e}");
        if e.kind() == std::io::ErrorKind::NotFound {
            NoSocket::Absent(why)
        } else {
            NoSocket::Refused(why)
        }
    })?;
    if !meta.file_type().is_socket() {
        return Err(NoSocket::Refused(format!("{socket} is not a socket")));
    }
    if meta.uid() != me {
        return Err(NoSocket::Refused(format!(
            "{socket} belongs to user {}, not to this daemon's user {me}",
            meta.uid()
        )));
    }
    Ok(path.to_owned())
}

/// Why an app server was not written to.
#[derive(Debug, PartialEq, Eq)]
enum Refusal {
    /// It is not the session's: another way in may reach it.
    NotOurs(String),
    /// The thread is running a turn: its end hands the task over.
    Busy,
    /// It could not be asked (gone, closed, too slow, an error).
    Broken(String),
}

/// Why a request got no result.
#[derive(Debug)]
enum CallError {
    /// The app server answered it with an error: it did not do it.
    Refused(String),
    /// No answer came (closed, broken): whether it did it is not known.
    Lost(String),
}

impl CallError {
    fn why(self) -> String {
        match self {
            Self::Refused(why) | Self::Lost(why) => why,
        }
    }
}

/// One JSON-RPC conversation with an app server over its socket.
struct Client {
    ws: WebSocketStream<UnixStream>,
    next_id: u64,
}

impl Client {
    async fn connect(path: &Path) -> Result<Self, String> {
        let shown = path.display();
        let stream = UnixStream::connect(path)
            .await
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        // The URL only fills the handshake's request line and Host: the stream is the socket.
        let (ws, _) = tokio_tungstenite::client_async("ws://localhost/", stream)
            .await
            .map_err(|e| format!("no WebSocket handshake on {shown}: {e}"))?;
        Ok(Self { ws, next_id: 1 })
    }

    async fn write(&mut self, line: String) -> Result<(), String> {
        self.ws
            .send(Message::text(line))
            .await
            .map_err(|e| format!("cannot write to the app server: {e}"))
    }

    /// The result of one request; the app server's notifications meanwhile are passed over
    /// and a request of its own is refused (nothing here serves one).
    async fn call(&mut self, method: &str, params: Value) -> Result<Value, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        self.write(request(id, method, params))
            .await
            .map_err(CallError::Lost)?;
        let closed = || CallError::Lost(format!("the app server closed before answering {method}"));
        loop {
            let frame = match self.ws.next().await {
                Some(Ok(frame)) => frame,
                Some(Err(e)) => {
                    return Err(CallError::Lost(format!(
                        "the app server's answer to {method}: {e}"
                    )));
                }
                None => return Err(closed()),
            };
            let text = match &frame {
                Message::Text(t) => t.as_str(),
                Message::Close(_) => return Err(closed()),
                _ => continue,
            };
            let Ok(message) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            match rpc(&message) {
                Rpc::Answer {
                    id: got,
                    result,
                    error,
                } if got == id => {
                    return match error {
                        Some(e) => Err(CallError::Refused(format!(
                            "the app server refused {method}: {e}"
                        ))),
                        None => Ok(result.cloned().unwrap_or(Value::Null)),
                    };
                }
                Rpc::Request { id, method } => {
                    let refused = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601,
                        "message": format!("{method} is not served by Taskkeeper's delivery connection")}});
                    self.write(refused.to_string())
                        .await
                        .map_err(CallError::Lost)?;
                }
                _ => {}
            }
        }
    }

    /// The checks before the write: the app server runs `codex_home`, holds `thread`, and the
    /// thread is idle.
    async fn ready(&mut self, codex_home: &Path, thread: &str) -> Result<(), Refusal> {
        let hello = self
            .call("initialize", codex::initialize_params())
            .await
            .map_err(|e| Refusal::Broken(e.why()))?;
        let home = hello.get("codexHome").and_then(Value::as_str);
        if home.map(Path::new) != Some(codex_home) {
            return Err(Refusal::NotOurs(format!(
                "the app server runs Codex home {}, not {}",
                home.unwrap_or("(none named)"),
                codex_home.display()
            )));
        }
        self.write(crate::agents::launched::notification(
            "initialized",
            json!({}),
        ))
        .await
        .map_err(Refusal::Broken)?;
        let loaded = self
            .call("thread/loaded/list", json!({}))
            .await
            .map_err(|e| Refusal::Broken(e.why()))?;
        let holds = loaded
            .get("data")
            .and_then(Value::as_array)
            .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(thread)));
        if !holds {
            return Err(Refusal::NotOurs(format!(
                "the app server does not run thread {thread}"
            )));
        }
        let read = self
            .call("thread/read", json!({"threadId": thread}))
            .await
            .map_err(|e| Refusal::Broken(e.why()))?;
        match read.pointer("/thread/status/type").and_then(Value::as_str) {
            Some("idle") => Ok(()),
            Some("active") => Err(Refusal::Busy),
            other => Err(Refusal::NotOurs(format!(
                "thread {thread} is {}",
                other.unwrap_or("of no status")
            ))),
        }
    }

    /// Said goodbye to on its own: what the app server answered stands whatever the close
    /// takes.
    fn close(mut self) {
        tokio::spawn(async move {
            let _ = tokio::time::timeout(DEADLINE, self.ws.close(None)).await;
        });
    }
}

/// The connection, the checks and the `turn/start`; the new turn's id.
async fn start_turn(
    path: &Path,
    thread: &str,
    text: &str,
    before_write: impl FnOnce(),
) -> Result<Result<String, String>, Refusal> {
    let codex_home = path
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| Refusal::NotOurs(format!("{} names no Codex home", path.display())))?;
    let mut client = Client::connect(path).await.map_err(Refusal::Broken)?;
    if let Err(refusal) = client.ready(codex_home, thread).await {
        client.close();
        return Err(refusal);
    }
    before_write();
    let started = client
        .call("turn/start", codex::turn_start_params(thread, text))
        .await
        .map(|r| {
            r.pointer("/turn/id")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
    client.close();
    match started {
        Ok(Some(turn)) => Ok(Ok(turn)),
        Ok(None) => Ok(Err("the app server answered turn/start with no turn".into())),
        // Refused: no turn started, nothing landed.
        Err(CallError::Refused(why)) => Err(Refusal::Broken(why)),
        // It may have started one.
        Err(CallError::Lost(why)) => Ok(Err(why)),
    }
}

/// Codex's app server as delivery's way into an idle session ([`AppServerWay`]).
#[derive(Debug, Default)]
pub(crate) struct CodexAppServer;

impl AppServerWay for CodexAppServer {
    /// The text as a `turn/start` into the session's thread on its own app server,
    /// confirmed by the turn Codex answers with. Not the session's, or not reachable: not
    /// delivered, the next way is tried. A busy thread: put off, for its turn's end. Sent
    /// but not answered: it may have landed, so it is never sent again.
    fn start_turn<'a>(
        &'a self,
        session: &'a Session,
        text: &'a str,
        written: &'a (dyn Fn() + Send + Sync),
    ) -> BoxFuture<'a, Pushed> {
        Box::pin(start_turn_in(session, text, written))
    }
}

async fn start_turn_in(
    session: &Session,
    text: &str,
    on_written: &(dyn Fn() + Send + Sync),
) -> Pushed {
    let path = match owned_socket(session) {
        Ok(path) => path,
        Err(NoSocket::Absent(why)) => {
            return Pushed::Absent(format!("no app server: {why}"));
        }
        Err(NoSocket::Refused(why)) => {
            tracing::warn!(session = %session.id, %why, "refused the app server's socket");
            return Pushed::Failed(format!("refused the app server's socket: {why}"));
        }
    };
    let text = delivery::terminal_safe(text);
    let mut written = false;
    let sent = tokio::time::timeout(
        DEADLINE,
        start_turn(&path, session.id.as_str(), &text, || {
            on_written();
            written = true;
        }),
    )
    .await;
    match sent {
        Ok(Ok(Ok(turn))) => {
            tracing::debug!(session = %session.id, %turn, "the app server started a turn");
            Pushed::Delivered
        }
        Ok(Ok(Err(why))) => Pushed::Unconfirmed(why),
        Ok(Err(Refusal::Busy)) => Pushed::Later(format!(
            "thread {} is running a turn: its end hands the task over",
            session.id
        )),
        Ok(Err(Refusal::NotOurs(why))) => {
            tracing::warn!(session = %session.id, %why, "refused the app server");
            Pushed::Failed(format!(
                "refused the app server on {}: {why}",
                path.display()
            ))
        }
        Ok(Err(Refusal::Broken(why))) => Pushed::Failed(why),
        Err(_) if written => Pushed::Unconfirmed(format!(
            "the app server on {} did not answer turn/start within {DEADLINE:?}",
            path.display()
        )),
        Err(_) => Pushed::Failed(format!(
            "the app server on {} did not answer within {DEADLINE:?}",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use taskkeeper_core::{AgentKind, Timestamp};

    fn session(socket: &str) -> Session {
        let mut s = Session::new(
            "019a2327-6d1b-7992-bdec-66b72e75f717".into(),
            "web".parse().unwrap(),
            AgentKind::Codex,
            "/src/web".into(),
            Timestamp::from_millis(0),
        );
        s.reach.app_server_socket = Some(socket.into());
        s
    }

    #[test]
    fn only_a_codex_control_socket_of_this_user_is_connected_to() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join(".codex");
        let own = crate::agents::codex::adapter::control_socket(&home);
        std::fs::create_dir_all(own.parent().unwrap()).unwrap();
        // As Codex lays it out: the socket under a short path, linked from the home.
        let short = dir.path().join("d0");
        let _listener = std::os::unix::net::UnixListener::bind(&short).unwrap();
        std::os::unix::fs::symlink(&short, &own).unwrap();
        let own = own.to_str().unwrap();
        assert_eq!(
            owned_socket(&session(own)).as_deref(),
            Ok(Path::new(own)),
            "a link to a socket of this user"
        );
        let elsewhere = dir.path().join("app-server.sock");
        let _other = std::os::unix::net::UnixListener::bind(&elsewhere).unwrap();
        let plain = dir
            .path()
            .join("plain/app-server-control/app-server-control.sock");
        std::fs::create_dir_all(plain.parent().unwrap()).unwrap();
        std::fs::write(&plain, "").unwrap();
        let gone = dir
            .path()
            .join("gone/app-server-control/app-server-control.sock");
        let refusals = [
            (
                elsewhere.to_str().unwrap().to_owned(),
                "is not a Codex app server's control socket",
            ),
            (
                "home/app-server-control/app-server-control.sock".to_owned(),
                "is not a Codex app server's control socket",
            ),
            (plain.to_str().unwrap().to_owned(), "is not a socket"),
        ];
        for (socket, why) in refusals {
            let e = owned_socket(&session(&socket)).unwrap_err();
            assert!(
                matches!(&e, NoSocket::Refused(e) if e.contains(why)),
                "{socket}: {e:?}"
            );
        }
        let me = nix::unistd::getuid().as_raw();
        let e = socket_of_user(&session(own), me.wrapping_add(1)).unwrap_err();
        assert!(
            matches!(&e, NoSocket::Refused(e)
                if e.contains(&format!("belongs to user {me}, not to this daemon's user"))),
            "another user's socket: {e:?}"
        );
        // No app server for the home (`codex --no-daemon`), or none known: nothing to
        // warn of.
        let gone = owned_socket(&session(gone.to_str().unwrap())).unwrap_err();
        assert!(
            matches!(&gone, NoSocket::Absent(e) if e.contains("No such file")),
            "{gone:?}"
        );
        let mut none = session(own);
        none.reach.app_server_socket = None;
        assert!(
            matches!(owned_socket(&none), Err(NoSocket::Absent(e)) if e.contains("no app-server socket"))
        );
    }
}
