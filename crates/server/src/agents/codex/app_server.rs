//! A headless Codex CLI session: `codex app-server` driven over JSON-RPC on its stdio
//! (newline-delimited JSON; checked against Codex 0.171.0, see docs/agents.md).
//!
//! The handshake is `initialize`, `initialized`, then `thread/start` in the desk's directory
//! with the desk's note as developer instructions, `approvalPolicy: "never"` (nobody sits at
//! a headless session to approve a command) and Taskkeeper's MCP server as a config override
//! in the request, so the worker token and the session's proof travel on stdin. A task is a
//! `turn/start` into that thread; the app server's own notifications say when a turn runs
//! (`turn/started`, `turn/completed` with its status) and what the model said last (the last
//! `agentMessage` item). A `turn/start` sent while a turn runs would join that turn, so a
//! task arriving then waits here for the turn's end and starts the next. Stopping interrupts
//! the running turn (`turn/interrupt`); closing stdin then ends the app server (exit 0).

use std::path::PathBuf;

use serde_json::{Value, json};
use taskkeeper_core::session::{Edge, TurnOrigin};

use crate::agents::launched::{
    Headless, McpAccess, Rpc, Spawn, Step, joined, not_served, notification, request, rpc,
};

/// The name of Taskkeeper's MCP server in the session's configuration.
const MCP_NAME: &str = "taskkeeper";

/// The variable naming the Codex binary a launch runs.
const PROGRAM_ENV: &str = "TASKKEEPER_CODEX";

pub(crate) fn spawn(program: &std::path::Path) -> Spawn {
    Spawn {
        program: program.to_owned(),
        args: vec!["app-server".to_owned()],
        program_env: PROGRAM_ENV,
    }
}

/// `TASKKEEPER_CODEX`, else `codex` on the PATH.
pub fn program_from_env() -> PathBuf {
    crate::agents::launched::program_from_env(PROGRAM_ENV, "codex")
}

/// Where a Codex home keeps the control socket of its shared app server (the one an
/// interactive TUI runs its thread in), relative to the home.
pub(crate) const CONTROL_SOCKET: &str = "app-server-control/app-server-control.sock";

/// The control socket of the app server that runs the sessions of `codex_home` (their hooks'
/// `CODEX_HOME`).
pub(crate) fn control_socket(codex_home: &std::path::Path) -> PathBuf {
    codex_home.join(CONTROL_SOCKET)
}

/// How Taskkeeper names itself to a Codex app server.
pub(crate) fn initialize_params() -> Value {
    json!({"clientInfo": {"name": "taskkeeper", "title": "Taskkeeper",
                          "version": env!("CARGO_PKG_VERSION")}})
}

/// A turn into `thread` whose one input is `text`: what Taskkeeper tells a session goes in
/// as that text and nowhere else in the request.
pub(crate) fn turn_start_params(thread: &str, text: &str) -> Value {
    json!({"threadId": thread, "input": [{"type": "text", "text": text}]})
}

/// Where the handshake is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Initializing,
    StartingThread,
    Ready,
}

#[derive(Debug)]
pub struct AppServer {
    cwd: PathBuf,
    note: String,
    mcp: McpAccess,
    phase: Phase,
    next_id: u64,
    thread: Option<String>,
    /// The request that starts a turn is out, and its `turn/started` has not come.
    turn_asked: Option<u64>,
    /// The running turn.
    turn: Option<String>,
    /// What waits for the next turn.
    waiting: Vec<String>,
    last_words: Option<String>,
    stopping: bool,
}

impl AppServer {
    pub fn new(cwd: PathBuf, note: String, mcp: McpAccess) -> Self {
        Self {
            cwd,
            note,
            mcp,
            phase: Phase::Initializing,
            next_id: 1,
            thread: None,
            turn_asked: None,
            turn: None,
            waiting: Vec::new(),
            last_words: None,
            stopping: false,
        }
    }

    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn thread_start(&mut self) -> String {
        let headers: serde_json::Map<String, Value> = self
            .mcp
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        let id = self.id();
        request(
            id,
            "thread/start",
            json!({
                "cwd": self.cwd,
                "approvalPolicy": "never",
                "developerInstructions": self.note,
                "config": {"mcp_servers": {MCP_NAME: {
                    "url": self.mcp.url,
                    "http_headers": headers,
                }}},
            }),
        )
    }

    /// Start a turn with what waits, if a turn can start now.
    fn next_turn(&mut self) -> Step {
        if self.phase != Phase::Ready
            || self.turn.is_some()
            || self.turn_asked.is_some()
            || self.waiting.is_empty()
            || self.stopping
        {
            return Step::default();
        }
        let Some(thread) = self.thread.clone() else {
            return Step::default();
        };
        let text = joined(&std::mem::take(&mut self.waiting));
        let id = self.id();
        self.turn_asked = Some(id);
        Step::write(request(id, "turn/start", turn_start_params(&thread, &text)))
    }

    fn ours(&self, params: &Value) -> bool {
        params.get("threadId").and_then(Value::as_str) == self.thread.as_deref()
    }
}

impl Headless for AppServer {
    fn open(&mut self) -> Vec<String> {
        let id = self.id();
        vec![request(
            id,
            "initialize",
            json!({"clientInfo": {"name": "taskkeeper", "title": "Taskkeeper",
                                  "version": env!("CARGO_PKG_VERSION")}}),
        )]
    }

    fn input(&mut self, text: &str, _expected: &mut dyn FnMut() -> bool) -> Step {
        self.waiting.push(text.to_owned());
        self.next_turn()
    }

    fn read(&mut self, message: &Value, expected: &mut dyn FnMut() -> bool) -> Step {
        match rpc(message) {
            Rpc::Answer { id, result, error } => {
                if let Some(error) = error {
                    return match self.phase {
                        Phase::Ready if self.turn_asked == Some(id) => {
                            // No turn started: what it carried is lost with it, as a paste
                            // into a closed terminal would be; the log says so.
                            self.turn_asked = None;
                            tracing::warn!(%error, "Codex refused a turn/start");
                            self.next_turn()
                        }
                        Phase::Ready => Step::default(),
                        _ => Step::fatal(format!("Codex refused the handshake: {error}")),
                    };
                }
                match (self.phase, id) {
                    (Phase::Initializing, 1) => {
                        self.phase = Phase::StartingThread;
                        let start = self.thread_start();
                        Step {
                            write: vec![notification("initialized", json!({})), start],
                            ..Step::default()
                        }
                    }
                    (Phase::StartingThread, 2) => {
                        let thread = result
                            .and_then(|r| r.pointer("/thread/id"))
                            .and_then(Value::as_str);
                        match thread {
                            Some(t) => {
                                self.thread = Some(t.to_owned());
                                self.phase = Phase::Ready;
                                self.next_turn()
                            }
                            None => Step::fatal("Codex's thread/start answered no thread id"),
                        }
                    }
                    _ => Step::default(),
                }
            }
            Rpc::Request { id, method } => Step::write(not_served(id, method)),
            Rpc::Notification { method, params } if self.ours(params) => match method {
                "turn/started" => {
                    self.turn_asked = None;
                    self.turn = params
                        .pointer("/turn/id")
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    self.last_words = None;
                    let origin = if expected() {
                        TurnOrigin::Taskkeeper
                    } else {
                        // Nobody else writes to this app server: a turn Taskkeeper did not
                        // ask for came from the session itself.
                        TurnOrigin::Background
                    };
                    Step::edges(vec![Edge::TurnStarted { origin }])
                }
                "item/completed" => {
                    let item = params.get("item");
                    if item.and_then(|i| i.get("type")).and_then(Value::as_str)
                        == Some("agentMessage")
                        && let Some(text) = item
                            .and_then(|i| i.get("text"))
                            .and_then(Value::as_str)
                            .filter(|t| !t.trim().is_empty())
                    {
                        self.last_words = Some(text.to_owned());
                    }
                    Step::default()
                }
                "turn/completed" => {
                    self.turn = None;
                    self.turn_asked = None;
                    let status = params.pointer("/turn/status").and_then(Value::as_str);
                    let edge = match status {
                        Some("failed") => Edge::TurnFailed {
                            rate_limited_until: None,
                        },
                        Some("interrupted") => Edge::Interrupted,
                        _ => Edge::TurnEnded {
                            last_words: self.last_words.take(),
                            background: Vec::new(),
                        },
                    };
                    Step::edges(vec![edge]).then(self.next_turn())
                }
                _ => Step::default(),
            },
            Rpc::Notification { .. } | Rpc::Other => Step::default(),
        }
    }

    fn stop(&mut self) -> Vec<String> {
        self.stopping = true;
        match (&self.thread, &self.turn) {
            (Some(thread), Some(turn)) => {
                let (thread, turn) = (thread.clone(), turn.clone());
                let id = self.id();
                vec![request(
                    id,
                    "turn/interrupt",
                    json!({"threadId": thread, "turnId": turn}),
                )]
            }
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access() -> McpAccess {
        McpAccess {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: vec![("X-Taskkeeper-Session".into(), "s-1".into())],
        }
    }

    fn parsed(lines: &[String]) -> Vec<Value> {
        lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The handshake and two turns, the second task arriving while the first turn runs: the
    /// messages as Codex 0.171.0 wrote them (trimmed to the fields read).
    #[test]
    fn a_task_during_a_turn_waits_for_its_end_and_starts_the_next() {
        let mut s = AppServer::new("/w".into(), "You work at desk web.".into(), access());
        let mut yes = || true;
        let open = parsed(&s.open());
        assert_eq!(open[0]["method"], "initialize");
        // A task before the thread exists waits for it.
        assert_eq!(s.input("first", &mut yes), Step::default());
        let hello = s.read(&json!({"id": 1, "result": {"userAgent": "x"}}), &mut yes);
        let hello = parsed(&hello.write);
        assert_eq!(hello[0]["method"], "initialized");
        assert_eq!(hello[1]["method"], "thread/start");
        assert_eq!(hello[1]["params"]["approvalPolicy"], "never");
        assert_eq!(
            hello[1]["params"]["developerInstructions"],
            "You work at desk web."
        );
        let server = &hello[1]["params"]["config"]["mcp_servers"]["taskkeeper"];
        assert_eq!(server["url"], "http://127.0.0.1:1/mcp");
        assert_eq!(server["http_headers"]["X-Taskkeeper-Session"], "s-1");

        let started = s.read(
            &json!({"id": 2, "result": {"thread": {"id": "T"}}}),
            &mut yes,
        );
        let turn = parsed(&started.write);
        assert_eq!(turn[0]["method"], "turn/start");
        assert_eq!(turn[0]["params"]["threadId"], "T");
        assert_eq!(turn[0]["params"]["input"][0]["text"], "first");

        let running = s.read(
            &json!({"method": "turn/started", "params": {"threadId": "T", "turn": {"id": "U1", "status": "inProgress"}}}),
            &mut yes,
        );
        assert_eq!(
            running.edges,
            [Edge::TurnStarted {
                origin: TurnOrigin::Taskkeeper
            }]
        );
        // The second task waits: nothing is written into the running turn.
        assert_eq!(s.input("second", &mut yes), Step::default());
        assert_eq!(
            s.read(&json!({"method": "item/completed", "params": {"threadId": "T", "item": {"type": "agentMessage", "text": "Done."}}}), &mut yes),
            Step::default()
        );
        let ended = s.read(
            &json!({"method": "turn/completed", "params": {"threadId": "T", "turn": {"id": "U1", "status": "completed"}}}),
            &mut yes,
        );
        assert_eq!(
            ended.edges,
            [Edge::TurnEnded {
                last_words: Some("Done.".into()),
                background: vec![]
            }]
        );
        let next = parsed(&ended.write);
        assert_eq!(next[0]["method"], "turn/start");
        assert_eq!(next[0]["params"]["input"][0]["text"], "second");
    }

    #[test]
    fn another_threads_notifications_failed_and_interrupted_turns() {
        let mut s = AppServer::new("/w".into(), String::new(), access());
        let mut yes = || true;
        s.open();
        s.read(&json!({"id": 1, "result": {}}), &mut yes);
        s.read(
            &json!({"id": 2, "result": {"thread": {"id": "T"}}}),
            &mut yes,
        );
        let other =
            json!({"method": "turn/started", "params": {"threadId": "X", "turn": {"id": "V"}}});
        assert_eq!(s.read(&other, &mut yes), Step::default());
        let done = |status: &str| json!({"method": "turn/completed", "params": {"threadId": "T", "turn": {"id": "U", "status": status}}});
        assert_eq!(
            s.read(&done("failed"), &mut yes).edges,
            [Edge::TurnFailed {
                rate_limited_until: None
            }]
        );
        assert_eq!(
            s.read(&done("interrupted"), &mut yes).edges,
            [Edge::Interrupted]
        );
    }

    #[test]
    fn a_request_from_codex_is_answered_and_a_refused_handshake_is_fatal() {
        let mut s = AppServer::new("/w".into(), String::new(), access());
        let mut yes = || true;
        s.open();
        let asked = s.read(
            &json!({"id": 7, "method": "item/commandExecution/requestApproval", "params": {}}),
            &mut yes,
        );
        let answer = parsed(&asked.write);
        assert_eq!(answer[0]["id"], 7);
        assert_eq!(answer[0]["error"]["code"], -32601);
        let refused = s.read(
            &json!({"id": 1, "error": {"code": -32600, "message": "no"}}),
            &mut yes,
        );
        assert!(refused.fatal.is_some());
    }

    #[test]
    fn stopping_interrupts_the_running_turn_and_starts_no_other() {
        let mut s = AppServer::new("/w".into(), String::new(), access());
        let mut yes = || true;
        s.open();
        s.read(&json!({"id": 1, "result": {}}), &mut yes);
        s.read(
            &json!({"id": 2, "result": {"thread": {"id": "T"}}}),
            &mut yes,
        );
        assert!(s.stop().is_empty(), "nothing runs: nothing to interrupt");
        let mut s = AppServer::new("/w".into(), String::new(), access());
        s.open();
        s.read(&json!({"id": 1, "result": {}}), &mut yes);
        s.read(
            &json!({"id": 2, "result": {"thread": {"id": "T"}}}),
            &mut yes,
        );
        s.input("task", &mut yes);
        s.read(
            &json!({"method": "turn/started", "params": {"threadId": "T", "turn": {"id": "U"}}}),
            &mut yes,
        );
        s.input("later", &mut yes);
        let stop = parsed(&s.stop());
        assert_eq!(stop[0]["method"], "turn/interrupt");
        assert_eq!(stop[0]["params"]["turnId"], "U");
        let ended = s.read(
            &json!({"method": "turn/completed", "params": {"threadId": "T", "turn": {"id": "U", "status": "interrupted"}}}),
            &mut yes,
        );
        assert!(ended.write.is_empty(), "no turn starts after a stop");
    }
}
