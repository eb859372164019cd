//! A headless Codex CLI session: `codex app-server` driven over JSON-RPC on its stdio
//! (newline-delimited JSON; checked against Codex 0.171.0, see docs/agents.md).
//!
//! The handshake is `initialize`, `initialized`, then `thread/start` in the desk's directory
//! with the desk's note as developer instructions, `approvalPolicy: "untrusted"` and
//! Taskkeeper's MCP server as a config override in the request (its tools approved, so
//! `task_update` never waits on anyone), so the worker token and the session's proof travel
//! on stdin. A task is a
//! `turn/start` into that thread; the app server's own notifications say when a turn runs
//! (`turn/started`, `turn/completed` with its status) and what the model said last (the last
//! `agentMessage` item). A `turn/start` sent while a turn runs would join that turn, so a
//! task arriving then waits here for the turn's end and starts the next. Stopping interrupts
//! the running turn (`turn/interrupt`); closing stdin then ends the app server (exit 0).
//!
//! Approvals go to the owner, as a headless Claude Code session's do
//! ([`super::approvals`]): each becomes the owner's question, one at a time ([`Questions`]),
//! settled by the owner's answer, Codex's `serverRequest/resolved` or the turn's end.

use std::collections::HashMap;
use std::path::PathBuf;

use serde_json::{Value, json};
use taskkeeper_core::session::{Edge, TurnOrigin};

use crate::agents::asking::{Questions, id_text};
use crate::agents::launch::{Headless, McpAccess, Spawn, Step};
use crate::agents::launched::{Rpc, joined, not_served, notification, request, rpc};
use crate::agents::permission::Permission;

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
    crate::agents::launch::program_from_env(PROGRAM_ENV, "codex")
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
    /// What the session asks the owner.
    questions: Questions,
    /// The changes of each file change item under way, shown with its approval request.
    changes: HashMap<String, Value>,
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
            questions: Questions::default(),
            changes: HashMap::new(),
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
                "approvalPolicy": "untrusted",
                "developerInstructions": self.note,
                "config": {"mcp_servers": {MCP_NAME: {
                    "url": self.mcp.url,
                    "http_headers": headers,
                    "default_tools_approval_mode": "approve",
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
        self.thread.is_some()
            && params.get("threadId").and_then(Value::as_str) == self.thread.as_deref()
    }

    /// A request from Codex: an approval of this thread's becomes the owner's question; any
    /// other is refused at once, so Codex never waits on an answer that will not come.
    fn requested(&mut self, id: &Value, method: &str, params: &Value) -> Step {
        let asked = if self.ours(params) {
            super::approvals::asked(method, params, &self.changes)
        } else {
            None
        };
        let Some((tool, description, input)) = asked else {
            return Step::write(not_served(id, method));
        };
        let answer = |decision: &str| {
            json!({"jsonrpc": "2.0", "id": id, "result": {"decision": decision}}).to_string()
        };
        let permission = Permission::rpc(
            id_text(id),
            tool.to_owned(),
            description,
            &input,
            answer("accept"),
            answer("decline"),
        );
        Step {
            ask: self.questions.ask(id.clone(), permission),
            ..Step::default()
        }
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
            Rpc::Request { id, method } => {
                self.requested(id, method, message.get("params").unwrap_or(&Value::Null))
            }
            Rpc::Notification { method, params } if self.ours(params) => match method {
                "serverRequest/resolved" => Step {
                    ask: params
                        .get("requestId")
                        .and_then(|id| self.questions.settled(&id_text(id))),
                    ..Step::default()
                },
                "item/started" => {
                    if let Some(item) = params.get("item")
                        && item.get("type").and_then(Value::as_str) == Some("fileChange")
                        && let Some(id) = item.get("id").and_then(Value::as_str)
                    {
                        let changes = item.get("changes").cloned().unwrap_or(Value::Null);
                        self.changes.insert(id.to_owned(), changes);
                    }
                    Step::default()
                }
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
                    if let Some(id) = item.and_then(|i| i.get("id")).and_then(Value::as_str) {
                        self.changes.remove(id);
                    }
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
                    self.changes.clear();
                    let moot = self.questions.moot();
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
                    let mut step = Step::edges(vec![edge]).then(self.next_turn());
                    step.ask = moot;
                    step
                }
                _ => Step::default(),
            },
            Rpc::Notification { .. } | Rpc::Other => Step::default(),
        }
    }

    fn answered(&mut self, request_id: &str, allow: bool, message: Option<&str>) -> Step {
        let mut step = Step {
            ask: self.questions.settled(request_id),
            ..Step::default()
        };
        // A denial's message goes into the running turn ahead of the denial, so the model
        // reads both in its next request.
        if !allow
            && let Some(message) = message.filter(|m| !m.trim().is_empty())
            && let (Some(thread), Some(turn)) = (self.thread.clone(), self.turn.clone())
        {
            let id = self.id();
            step.write.push(request(
                id,
                "turn/steer",
                super::approvals::steer(&thread, &turn, message),
            ));
        }
        step
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
    use crate::agents::launch::Ask;

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
        assert_eq!(hello[1]["params"]["approvalPolicy"], "untrusted");
        assert_eq!(
            hello[1]["params"]["developerInstructions"],
            "You work at desk web."
        );
        let server = &hello[1]["params"]["config"]["mcp_servers"]["taskkeeper"];
        assert_eq!(server["url"], "http://127.0.0.1:1/mcp");
        assert_eq!(server["http_headers"]["X-Taskkeeper-Session"], "s-1");
        assert_eq!(
            server["default_tools_approval_mode"], "approve",
            "Taskkeeper's own tools never wait on an approval"
        );

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
            &json!({"id": 7, "method": "item/tool/requestUserInput", "params": {}}),
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

    /// A session whose thread `T` runs turn `U`.
    fn running() -> AppServer {
        let mut s = AppServer::new("/w".into(), String::new(), access());
        let mut yes = || true;
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
        s
    }

    fn asked(step: Step) -> Permission {
        match step.ask {
            Some(Ask::Permission(p)) => p,
            other => panic!("not asked: {other:?}"),
        }
    }

    /// The request as Codex 0.171.0 sent it under `untrusted` (trimmed), and its answers.
    #[test]
    fn a_command_approval_waits_on_the_owner_and_is_answered_accept_or_decline() {
        let mut s = running();
        let mut yes = || true;
        let request = json!({"method": "item/commandExecution/requestApproval", "id": 0,
            "params": {"kind": "command", "threadId": "T", "turnId": "U", "itemId": "call_1",
                "command": "/bin/bash -lc 'touch made.txt'", "cwd": "/w",
                "reason": "to make the file",
                "availableDecisions": ["accept", "cancel"]}});
        let step = s.read(&request, &mut yes);
        assert!(step.write.is_empty(), "Codex waits: nothing answered yet");
        let p = asked(step);
        assert_eq!(
            (
                p.request_id.as_str(),
                p.tool.as_str(),
                p.description.as_deref()
            ),
            ("0", "command", Some("to make the file"))
        );
        assert!(p.input.contains("touch made.txt"), "{}", p.input);
        let answer =
            |allow| -> Value { serde_json::from_str(&p.answer(allow, Some("No."))).unwrap() };
        assert_eq!(
            answer(true),
            json!({"jsonrpc": "2.0", "id": 0, "result": {"decision": "accept"}})
        );
        assert_eq!(answer(false)["result"]["decision"], "decline");
        // Answered, it is settled; Codex's word that it is settled then changes nothing. A
        // denial with a message steers it into the turn first.
        let denied = s.answered("0", false, Some("Not in this repository."));
        assert_eq!(denied.ask, Some(Ask::Withdrawn("0".into())));
        let steer = parsed(&denied.write);
        assert_eq!(steer.len(), 1);
        assert_eq!(steer[0]["method"], "turn/steer");
        assert_eq!(
            (
                &steer[0]["params"]["threadId"],
                &steer[0]["params"]["expectedTurnId"]
            ),
            (&json!("T"), &json!("U"))
        );
        assert_eq!(
            steer[0]["params"]["input"][0]["text"],
            "«Taskkeeper» The owner did not allow it: Not in this repository."
        );
        assert_eq!(
            s.read(
                &json!({"id": steer[0]["id"], "result": {"turnId": "U"}}),
                &mut yes
            ),
            Step::default(),
            "the steer's answer changes nothing"
        );
        let resolved = s.read(
            &json!({"method": "serverRequest/resolved", "params": {"threadId": "T", "requestId": 0}}),
            &mut yes,
        );
        assert_eq!(resolved, Step::default());
        // Another thread's request is not this session's to ask.
        let other = s.read(
            &json!({"method": "item/commandExecution/requestApproval", "id": 1,
                    "params": {"threadId": "X", "command": "rm -rf /"}}),
            &mut yes,
        );
        assert_eq!(parsed(&other.write)[0]["error"]["code"], -32601);
        assert_eq!(other.ask, None);
        asked(s.read(
            &json!({"method": "item/commandExecution/requestApproval", "id": 3,
                    "params": {"threadId": "T", "command": "make"}}),
            &mut yes,
        ));
        let allowed = s.answered("3", true, Some("ignored with an allowance"));
        assert!(allowed.write.is_empty(), "only a denial carries a message");
    }

    #[test]
    fn approvals_are_asked_one_at_a_time_and_the_turns_end_withdraws_what_waits() {
        let mut s = running();
        let mut yes = || true;
        assert_eq!(
            s.read(
                &json!({"method": "item/started", "params": {"threadId": "T", "item": {
                    "type": "fileChange", "id": "call_2",
                    "changes": [{"path": "/w/a.txt", "kind": "add", "diff": "+hello"}]}}}),
                &mut yes
            ),
            Step::default()
        );
        let first = s.read(
            &json!({"method": "item/commandExecution/requestApproval", "id": 0,
                    "params": {"threadId": "T", "command": "make"}}),
            &mut yes,
        );
        let first = asked(first);
        assert_eq!(
            (first.request_id.as_str(), first.description.as_deref()),
            ("0", Some("make")),
            "without a reason, the command says what it is"
        );
        let second = s.read(
            &json!({"method": "item/fileChange/requestApproval", "id": 1,
                    "params": {"threadId": "T", "itemId": "call_2", "reason": null}}),
            &mut yes,
        );
        assert_eq!(second, Step::default(), "waits until the first is settled");
        let next = asked(s.read(
            &json!({"method": "serverRequest/resolved", "params": {"threadId": "T", "requestId": 0}}),
            &mut yes,
        ));
        assert_eq!(
            (
                next.request_id.as_str(),
                next.tool.as_str(),
                next.description.as_deref()
            ),
            ("1", "file change", Some("/w/a.txt"))
        );
        assert!(
            next.input.contains("+hello"),
            "the change is shown: {}",
            next.input
        );
        assert_eq!(
            serde_json::from_str::<Value>(&next.answer(true, None)).unwrap()["id"],
            1
        );
        let ended = s.read(
            &json!({"method": "turn/completed", "params": {"threadId": "T", "turn": {"id": "U", "status": "interrupted"}}}),
            &mut yes,
        );
        assert_eq!(ended.edges, [Edge::Interrupted]);
        assert_eq!(ended.ask, Some(Ask::Withdrawn("1".into())));
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
        let mut s = running();
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
