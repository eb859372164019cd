//! A headless Gemini CLI session: `gemini --acp`, the Agent Client Protocol (newline-delimited
//! JSON-RPC on its stdio; checked against Gemini CLI 0.61.0, see docs/agents.md).
//!
//! The handshake is `initialize` (no file system, no terminal offered), then `session/new` in
//! the desk's directory with Taskkeeper's MCP server (HTTP, the worker token and the
//! session's proof in its headers: on stdin, never on the command line). A task is a
//! `session/prompt`; the turn runs until that request is answered, and its `stopReason` says
//! how it ended. The session's activity comes from ACP itself, not from hooks: under ACP
//! Gemini does not fire SessionStart, BeforeTool or AfterTool. The desk's note, which a hook
//! would give at the session's start, leads the first prompt instead.
//!
//! A prompt sent while another runs would cancel it, so a task arriving then waits here for
//! the turn's end. Gemini asks the client before a tool it does not trust
//! (`session/request_permission`): Taskkeeper's own tools are allowed, any other is refused
//! once (the model reads the refusal; the owner gives such tools in Gemini's own settings).
//! Stopping cancels the running prompt (`session/cancel`); closing stdin ends the process.

use std::path::PathBuf;

use serde_json::{Value, json};
use taskkeeper_core::session::{Edge, TurnOrigin};

use crate::agents::launched::{
    Headless, McpAccess, Rpc, Spawn, Step, joined, not_served, notification, request, rpc,
};

/// The name of Taskkeeper's MCP server in the session.
const MCP_NAME: &str = "taskkeeper";

/// The variable naming the Gemini binary a launch runs.
const PROGRAM_ENV: &str = "TASKKEEPER_GEMINI";

pub(crate) fn spawn(program: &std::path::Path) -> Spawn {
    Spawn {
        program: program.to_owned(),
        args: vec!["--acp".to_owned()],
        program_env: PROGRAM_ENV,
    }
}

/// `TASKKEEPER_GEMINI`, else `gemini` on the PATH.
pub fn program_from_env() -> PathBuf {
    crate::agents::launched::program_from_env(PROGRAM_ENV, "gemini")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Initializing(u64),
    StartingSession(u64),
    Ready,
}

#[derive(Debug)]
pub struct Acp {
    cwd: PathBuf,
    /// The desk's note, for the first prompt (taken when given).
    note: Option<String>,
    mcp: McpAccess,
    phase: Phase,
    next_id: u64,
    session: Option<String>,
    /// The running prompt's request.
    prompt: Option<u64>,
    waiting: Vec<String>,
    /// What the model said in the running turn.
    words: String,
    stopping: bool,
}

impl Acp {
    pub fn new(cwd: PathBuf, note: String, mcp: McpAccess) -> Self {
        Self {
            cwd,
            note: Some(note).filter(|n| !n.trim().is_empty()),
            mcp,
            phase: Phase::Initializing(1),
            next_id: 1,
            session: None,
            prompt: None,
            waiting: Vec::new(),
            words: String::new(),
            stopping: false,
        }
    }

    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Send what waits as the next prompt, if one can start now: the turn starts with it.
    fn next_turn(&mut self, expected: &mut dyn FnMut() -> bool) -> Step {
        if self.phase != Phase::Ready
            || self.prompt.is_some()
            || self.waiting.is_empty()
            || self.stopping
        {
            return Step::default();
        }
        let Some(session) = self.session.clone() else {
            return Step::default();
        };
        let mut texts = std::mem::take(&mut self.waiting);
        if let Some(note) = self.note.take() {
            texts.insert(0, note);
        }
        let id = self.id();
        self.prompt = Some(id);
        self.words.clear();
        let origin = if expected() {
            TurnOrigin::Taskkeeper
        } else {
            TurnOrigin::Background
        };
        Step {
            write: vec![request(
                id,
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": joined(&texts)}]}),
            )],
            edges: vec![Edge::TurnStarted { origin }],
            ..Step::default()
        }
    }

    /// The answer to a permission request: Taskkeeper's own tools once, anything else
    /// refused once.
    fn permission(id: &Value, params: &Value) -> String {
        let ours = params
            .get("toolCall")
            .is_some_and(|t| t.to_string().contains(MCP_NAME));
        let wanted: &[&str] = if ours {
            &["allow_once", "allow_always"]
        } else {
            &["reject_once", "reject_always"]
        };
        let option = params
            .get("options")
            .and_then(Value::as_array)
            .and_then(|options| {
                wanted.iter().find_map(|kind| {
                    options
                        .iter()
                        .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
                })
            })
            .and_then(|o| o.get("optionId"))
            .cloned();
        if !ours {
            let tool: String = params
                .get("toolCall")
                .map(|t| t.to_string())
                .unwrap_or_default()
                .chars()
                .take(200)
                .collect();
            tracing::info!(%tool, "a headless Gemini session asked for a tool its settings do not allow; refused");
        }
        let outcome = match option {
            Some(option) => json!({"outcome": "selected", "optionId": option}),
            None => json!({"outcome": "cancelled"}),
        };
        json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": outcome}}).to_string()
    }
}

impl Headless for Acp {
    fn open(&mut self) -> Vec<String> {
        let id = self.id();
        self.phase = Phase::Initializing(id);
        vec![request(
            id,
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {
                "fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}),
        )]
    }

    fn input(&mut self, text: &str, expected: &mut dyn FnMut() -> bool) -> Step {
        self.waiting.push(text.to_owned());
        self.next_turn(expected)
    }

    fn read(&mut self, message: &Value, expected: &mut dyn FnMut() -> bool) -> Step {
        match rpc(message) {
            Rpc::Answer { id, result, error } => match self.phase {
                Phase::Initializing(asked) if asked == id => match error {
                    Some(error) => Step::fatal(format!("Gemini refused initialize: {error}")),
                    None => {
                        let new = self.id();
                        self.phase = Phase::StartingSession(new);
                        let headers: Vec<Value> = self
                            .mcp
                            .headers
                            .iter()
                            .map(|(k, v)| json!({"name": k, "value": v}))
                            .collect();
                        Step::write(request(
                            new,
                            "session/new",
                            json!({"cwd": self.cwd, "mcpServers": [{
                                "type": "http", "name": MCP_NAME, "url": self.mcp.url,
                                "headers": headers}]}),
                        ))
                    }
                },
                Phase::StartingSession(asked) if asked == id => {
                    let session = result
                        .and_then(|r| r.get("sessionId"))
                        .and_then(Value::as_str);
                    match (error, session) {
                        (None, Some(s)) => {
                            self.session = Some(s.to_owned());
                            self.phase = Phase::Ready;
                            self.next_turn(expected)
                        }
                        (Some(error), _) => {
                            Step::fatal(format!("Gemini refused session/new: {error}"))
                        }
                        (None, None) => Step::fatal("Gemini's session/new answered no sessionId"),
                    }
                }
                Phase::Ready if self.prompt == Some(id) => {
                    self.prompt = None;
                    let words = std::mem::take(&mut self.words);
                    let reason = result
                        .and_then(|r| r.get("stopReason"))
                        .and_then(Value::as_str);
                    let edge = match (error, reason) {
                        (Some(_), _) | (None, Some("refusal")) => Edge::TurnFailed {
                            rate_limited_until: None,
                        },
                        (None, Some("cancelled")) => Edge::Interrupted,
                        _ => Edge::TurnEnded {
                            last_words: Some(words).filter(|w| !w.trim().is_empty()),
                            background: Vec::new(),
                        },
                    };
                    Step::edges(vec![edge]).then(self.next_turn(expected))
                }
                _ => Step::default(),
            },
            Rpc::Request { id, method } => match method {
                "session/request_permission" => Step::write(Self::permission(
                    id,
                    message.get("params").unwrap_or(&Value::Null),
                )),
                _ => Step::write(not_served(id, method)),
            },
            Rpc::Notification { method, params }
                if method == "session/update"
                    && params.get("sessionId").and_then(Value::as_str)
                        == self.session.as_deref() =>
            {
                let update = params.get("update");
                let kind = update
                    .and_then(|u| u.get("sessionUpdate"))
                    .and_then(Value::as_str);
                if kind == Some("agent_message_chunk")
                    && let Some(text) = update
                        .and_then(|u| u.pointer("/content/text"))
                        .and_then(Value::as_str)
                {
                    self.words.push_str(text);
                }
                Step::default()
            }
            Rpc::Notification { .. } | Rpc::Other => Step::default(),
        }
    }

    fn stop(&mut self) -> Vec<String> {
        self.stopping = true;
        match (&self.session, self.prompt) {
            (Some(session), Some(_)) => vec![notification(
                "session/cancel",
                json!({"sessionId": session}),
            )],
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

    fn ready(note: &str) -> Acp {
        let mut s = Acp::new("/w".into(), note.into(), access());
        let mut yes = || true;
        s.open();
        let new = parsed(
            &s.read(
                &json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": 1}}),
                &mut yes,
            )
            .write,
        );
        assert_eq!(new[0]["method"], "session/new");
        assert_eq!(new[0]["params"]["mcpServers"][0]["type"], "http");
        assert_eq!(
            new[0]["params"]["mcpServers"][0]["headers"][0],
            json!({"name": "X-Taskkeeper-Session", "value": "s-1"})
        );
        s.read(
            &json!({"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "S"}}),
            &mut yes,
        );
        s
    }

    /// Two turns as Gemini CLI 0.61.0 ran them, the second task arriving while the first
    /// runs: it waits (a prompt into a running one would cancel it) and starts the next.
    #[test]
    fn a_task_during_a_prompt_waits_for_its_answer_and_starts_the_next() {
        let mut s = ready("You work at desk web.");
        let mut yes = || true;
        let first = s.input("first", &mut yes);
        assert_eq!(
            first.edges,
            [Edge::TurnStarted {
                origin: TurnOrigin::Taskkeeper
            }]
        );
        let prompt = parsed(&first.write);
        assert_eq!(prompt[0]["method"], "session/prompt");
        assert_eq!(prompt[0]["params"]["sessionId"], "S");
        assert_eq!(
            prompt[0]["params"]["prompt"][0]["text"], "You work at desk web.\n\nfirst",
            "the desk's note leads the first prompt"
        );
        assert_eq!(s.input("second", &mut yes), Step::default());
        let chunk = |t: &str| {
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "S",
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}}}})
        };
        s.read(&chunk("Done"), &mut yes);
        s.read(&chunk("."), &mut yes);
        let ended = s.read(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}),
            &mut yes,
        );
        assert_eq!(
            ended.edges,
            [
                Edge::TurnEnded {
                    last_words: Some("Done.".into()),
                    background: vec![]
                },
                Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper
                }
            ]
        );
        let next = parsed(&ended.write);
        assert_eq!(next[0]["params"]["prompt"][0]["text"], "second");
        let cancelled = s.read(
            &json!({"jsonrpc": "2.0", "id": 4, "result": {"stopReason": "cancelled"}}),
            &mut yes,
        );
        assert_eq!(cancelled.edges, [Edge::Interrupted]);
    }

    #[test]
    fn our_tools_are_allowed_and_others_refused() {
        let mut s = ready("");
        let mut yes = || true;
        let options = json!([{"optionId": "a", "kind": "allow_once"}, {"optionId": "r", "kind": "reject_once"}]);
        let ask = |title: &str| {
            json!({"jsonrpc": "2.0", "id": 9, "method": "session/request_permission",
            "params": {"sessionId": "S", "toolCall": {"toolCallId": "c", "title": title}, "options": options}})
        };
        let ours = parsed(&s.read(&ask("mcp_taskkeeper_task_update"), &mut yes).write);
        assert_eq!(ours[0]["result"]["outcome"]["optionId"], "a");
        let other = parsed(&s.read(&ask("run_shell_command"), &mut yes).write);
        assert_eq!(other[0]["result"]["outcome"]["optionId"], "r");
        let unknown = parsed(
            &s.read(
                &json!({"jsonrpc": "2.0", "id": 10, "method": "fs/read_text_file", "params": {}}),
                &mut yes,
            )
            .write,
        );
        assert_eq!(unknown[0]["error"]["code"], -32601);
    }

    #[test]
    fn stopping_cancels_the_running_prompt_and_a_refused_handshake_is_fatal() {
        let mut s = ready("");
        let mut yes = || true;
        assert!(s.stop().is_empty(), "nothing runs: nothing to cancel");
        let mut s = ready("");
        s.input("task", &mut yes);
        let stop = parsed(&s.stop());
        assert_eq!(stop[0]["method"], "session/cancel");
        assert!(s.input("later", &mut yes).write.is_empty());
        let mut s = Acp::new("/w".into(), String::new(), access());
        s.open();
        let refused = s.read(
            &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": "auth"}}),
            &mut yes,
        );
        assert!(refused.fatal.is_some());
    }
}
