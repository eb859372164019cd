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
//! (`session/request_permission`, a JSON-RPC request that waits for its answer): Taskkeeper's
//! own tools are allowed at once, any other becomes the owner's question
//! ([`Ask`](crate::agents::launch::Ask)), as a headless Claude Code session's do, answered
//! with the option of the owner's choice (allow once, or reject once: a rejected tool does not
//! run, and the model reads that the user cancelled it; ACP's answer has no room for the
//! owner's message). A tool is Taskkeeper's by the name Gemini gives the call
//! (`mcp_taskkeeper_…`, the part of its `toolCallId` before `__`), never by words in its
//! title or input, nor by the call id the model may choose, which follows. The owner's answer
//! or the prompt's end settles a request, and the next one waiting is asked ([`Questions`]).
//! Stopping cancels the running prompt (`session/cancel`) and answers what still waits
//! `cancelled`, as ACP asks of a client that cancels; closing stdin ends the process.

use std::path::PathBuf;

use serde_json::{Value, json};
use taskkeeper_core::session::{Edge, TurnOrigin};

use crate::agents::asking::{Questions, id_text};
use crate::agents::launch::{Headless, McpAccess, Spawn, Step};
use crate::agents::launched::{Rpc, joined, not_served, notification, request, rpc};
use crate::agents::permission::Permission;

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
    crate::agents::launch::program_from_env(PROGRAM_ENV, "gemini")
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
    /// What the session asks the owner.
    questions: Questions,
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
            questions: Questions::default(),
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

    /// A permission request: Taskkeeper's own tools allowed at once, any other asked of the
    /// owner.
    fn permission(&mut self, id: &Value, params: &Value) -> Step {
        let call = params.get("toolCall").unwrap_or(&Value::Null);
        let call_id = call
            .get("toolCallId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let option = |kinds: &[&str]| {
            let chosen = params
                .get("options")
                .and_then(Value::as_array)
                .and_then(|options| {
                    kinds.iter().find_map(|kind| {
                        options
                            .iter()
                            .find(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
                    })
                })
                .and_then(|o| o.get("optionId"))
                .cloned();
            let outcome = match chosen {
                Some(option) => json!({"outcome": "selected", "optionId": option}),
                None => json!({"outcome": "cancelled"}),
            };
            json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": outcome}}).to_string()
        };
        let tool = tool_name(call_id);
        if tool.starts_with(OUR_TOOLS) {
            tracing::debug!(%tool, "allowed Taskkeeper's own tool unasked");
            return Step::write(option(&["allow_once", "allow_always"]));
        }
        let title = call.get("title").and_then(Value::as_str).map(str::to_owned);
        let input = json!({"kind": call.get("kind"), "title": title, "content": call.get("content"),
                           "locations": call.get("locations")});
        let request_id = if call_id.is_empty() {
            id_text(id)
        } else {
            call_id.to_owned()
        };
        let permission = Permission::rpc(
            request_id,
            tool.to_owned(),
            title,
            &input,
            option(&["allow_once"]),
            option(&["reject_once"]),
        );
        Step {
            ask: self.questions.ask(id.clone(), permission),
            ..Step::default()
        }
    }
}

/// What starts the name Gemini gives a call of one of Taskkeeper's MCP tools.
const OUR_TOOLS: &str = "mcp_taskkeeper_";

/// The tool a call is of: Gemini names a call `<tool>__<call id>`.
fn tool_name(call_id: &str) -> &str {
    call_id.split_once("__").map_or(call_id, |(tool, _)| tool)
}

/// A `cancelled` answer to the permission request `id`.
fn cancelled(id: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": {"outcome": "cancelled"}}}).to_string()
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
                    let moot = self.questions.moot();
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
                    let mut step = Step::edges(vec![edge]).then(self.next_turn(expected));
                    step.ask = moot;
                    step
                }
                _ => Step::default(),
            },
            Rpc::Request { id, method } => match method {
                "session/request_permission" => {
                    self.permission(id, message.get("params").unwrap_or(&Value::Null))
                }
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

    fn answered(&mut self, request_id: &str, _allow: bool, _message: Option<&str>) -> Step {
        Step {
            ask: self.questions.settled(request_id),
            ..Step::default()
        }
    }

    fn stop(&mut self) -> Vec<String> {
        self.stopping = true;
        match (&self.session, self.prompt) {
            (Some(session), Some(_)) => {
                let cancel = notification("session/cancel", json!({"sessionId": session}));
                let waiting = self
                    .questions
                    .pending()
                    .iter()
                    .map(cancelled)
                    .collect::<Vec<_>>();
                self.questions.moot();
                std::iter::once(cancel).chain(waiting).collect()
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

    const OPTIONS: &str = r#"[{"optionId": "proceed_always", "kind": "allow_always"},
        {"optionId": "proceed_once", "kind": "allow_once"}, {"optionId": "cancel", "kind": "reject_once"}]"#;

    /// A permission request as Gemini CLI 0.61.0 sends it (trimmed).
    fn asks(id: u64, call: &str, title: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": id, "method": "session/request_permission", "params": {
            "sessionId": "S", "options": serde_json::from_str::<Value>(OPTIONS).unwrap(),
            "toolCall": {"toolCallId": call, "status": "pending", "title": title, "kind": "execute",
                "content": [{"type": "content", "content": {"type": "text", "text": "[current working directory /w]"}}]}}})
    }

    fn asked(step: Step) -> Permission {
        match step.ask {
            Some(Ask::Permission(p)) => p,
            other => panic!("not asked: {other:?}"),
        }
    }

    #[test]
    fn our_tools_are_allowed_unasked_and_any_other_waits_on_the_owner() {
        let mut s = ready("");
        let mut yes = || true;
        s.input("task", &mut yes);
        let ours = s.read(
            &asks(
                9,
                "mcp_taskkeeper_task_update__mcp_taskkeeper_task_update_1_0",
                "task_update",
            ),
            &mut yes,
        );
        assert_eq!(ours.ask, None);
        assert_eq!(
            parsed(&ours.write)[0]["result"]["outcome"],
            json!({"outcome": "selected", "optionId": "proceed_once"})
        );
        // The model names the call and writes the command: neither makes it Taskkeeper's.
        let forged = s.read(
            &asks(
                10,
                "run_shell_command__mcp_taskkeeper_task_update__1",
                "echo mcp_taskkeeper_ taskkeeper",
            ),
            &mut yes,
        );
        assert!(
            forged.write.is_empty(),
            "Gemini waits: nothing answered yet"
        );
        let p = asked(forged);
        assert_eq!(
            (
                p.request_id.as_str(),
                p.tool.as_str(),
                p.description.as_deref()
            ),
            (
                "run_shell_command__mcp_taskkeeper_task_update__1",
                "run_shell_command",
                Some("echo mcp_taskkeeper_ taskkeeper")
            )
        );
        assert!(p.input.contains("current working directory"), "{}", p.input);
        let answer =
            |allow| -> Value { serde_json::from_str(&p.answer(allow, Some("No."))).unwrap() };
        assert_eq!(
            answer(true),
            json!({"jsonrpc": "2.0", "id": 10, "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}})
        );
        assert_eq!(answer(false)["result"]["outcome"]["optionId"], "cancel");
        let unknown = parsed(
            &s.read(
                &json!({"jsonrpc": "2.0", "id": 11, "method": "fs/read_text_file", "params": {}}),
                &mut yes,
            )
            .write,
        );
        assert_eq!(unknown[0]["error"]["code"], -32601);
    }

    /// Gemini reports nothing more of a call the owner rejected: the answer itself settles
    /// it, so what Gemini asks next is asked, not held until the prompt ends.
    #[test]
    fn the_owners_answer_settles_a_request_and_asks_the_next() {
        let mut s = ready("");
        let mut yes = || true;
        s.input("task", &mut yes);
        asked(s.read(&asks(5, "run_shell_command__a", "rm x"), &mut yes));
        assert_eq!(
            s.read(&asks(6, "run_shell_command__b", "ls"), &mut yes).ask,
            None
        );
        assert_eq!(
            asked(s.answered("run_shell_command__a", false, None)).request_id,
            "run_shell_command__b"
        );
        assert_eq!(
            s.answered("run_shell_command__b", true, None).ask,
            Some(Ask::Withdrawn("run_shell_command__b".into()))
        );
    }

    #[test]
    fn the_prompts_end_withdraws_what_waits_and_a_stop_answers_it_cancelled() {
        let mut s = ready("");
        let mut yes = || true;
        s.input("task", &mut yes);
        asked(s.read(&asks(5, "run_shell_command__a", "make"), &mut yes));
        assert_eq!(
            s.read(&asks(6, "run_shell_command__b", "make test"), &mut yes)
                .ask,
            None,
            "one at a time"
        );
        let ended = s.read(
            &json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}),
            &mut yes,
        );
        assert_eq!(
            ended.ask,
            Some(Ask::Withdrawn("run_shell_command__a".into()))
        );
        assert!(matches!(ended.edges[..], [Edge::TurnEnded { .. }]));
        assert_eq!(
            s.answered("run_shell_command__b", true, None).ask,
            None,
            "gone with the turn"
        );
        // Without options to choose from, the answer is `cancelled`; stopping while it waits
        // cancels the prompt and answers the request `cancelled`.
        let bare = json!({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
            "params": {"sessionId": "S", "toolCall": {"toolCallId": "write_file__c"}}});
        s.input("again", &mut yes);
        let waiting = asked(s.read(&bare, &mut yes));
        assert_eq!(
            serde_json::from_str::<Value>(&waiting.answer(true, None)).unwrap()["result"]["outcome"],
            json!({"outcome": "cancelled"})
        );
        let stop = parsed(&s.stop());
        assert_eq!(stop[0]["method"], "session/cancel");
        assert_eq!(
            stop[1],
            json!({"jsonrpc": "2.0", "id": 7, "result": {"outcome": {"outcome": "cancelled"}}})
        );
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
