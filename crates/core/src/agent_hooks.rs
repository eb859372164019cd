//! What a hook of Claude Code, Codex CLI or Gemini CLI means for its session, and what
//! Taskkeeper's hook prints back to it: the three agents' vocabularies (claude-code.md §2,
//! §4; agents.md §3, §7) translated into one set of [`Happening`]s, so the server's one hook
//! intake (`crates/server/src/agents/hooks.rs`) does the same thing for every agent and only
//! the words differ. Pure: a payload in, a meaning out; the store and the delivery are the
//! server's, and which agent has which hooks is its adapter's (`crates/server/src/agents/adapter.rs`).

use serde_json::{Value, json};

use crate::desk::AgentKind;
use crate::session::SelfWake;

/// An agent whose hooks this module reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookAgent {
    ClaudeCode,
    Codex,
    Gemini,
}

/// Hook events Claude Code sends that its intake understands (`taskkeeper connect
/// claude-code` installs them).
pub const CLAUDE_CODE_EVENTS: [&str; 12] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
];

/// Hook events `taskkeeper connect` installs for Codex CLI (in `hooks.json`); `Interrupt`
/// (Esc) is Codex's own, which Claude Code lacks.
pub const CODEX_EVENTS: [&str; 7] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "Interrupt",
    "SessionEnd",
];

/// Hook events `taskkeeper connect` installs for Gemini CLI (in `settings.json`).
pub const GEMINI_EVENTS: [&str; 7] = [
    "SessionStart",
    "BeforeAgent",
    "AfterAgent",
    "BeforeTool",
    "AfterTool",
    "Notification",
    "SessionEnd",
];

/// The name Taskkeeper's MCP server has in every agent's configuration.
pub const MCP_SERVER: &str = "taskkeeper";

/// What the prompt of a turn a background command's end starts begins with (Claude Code).
const TASK_NOTIFICATION: &str = "<task-notification>";

impl HookAgent {
    pub fn kind(self) -> AgentKind {
        match self {
            Self::ClaudeCode => AgentKind::ClaudeCode,
            Self::Codex => AgentKind::Codex,
            Self::Gemini => AgentKind::Gemini,
        }
    }

    /// The hook events `connect` installs for this agent.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            Self::ClaudeCode => &CLAUDE_CODE_EVENTS,
            Self::Codex => &CODEX_EVENTS,
            Self::Gemini => &GEMINI_EVENTS,
        }
    }

    /// The agent's name in the CLI and the hook route (`/hooks/<name>`).
    pub fn as_str(self) -> &'static str {
        self.kind().as_str()
    }

    /// Is the tool a hook names one of Taskkeeper's MCP tools? Claude Code and Codex name MCP
    /// tools `mcp__<server>__<tool>`; Gemini `mcp_<server>_<tool>` and says the server too.
    fn our_tool(self, payload: &Value) -> bool {
        let tool = payload
            .get("tool_name")
            .and_then(Value::as_str)
            .unwrap_or("");
        match self {
            Self::ClaudeCode | Self::Codex => tool.starts_with("mcp__taskkeeper__"),
            Self::Gemini => {
                let server = ["/mcp_context/server_name", "/server_name", "/mcp_server"]
                    .iter()
                    .find_map(|p| payload.pointer(p).and_then(Value::as_str));
                match server {
                    Some(server) => server == MCP_SERVER,
                    None => tool.starts_with("mcp_taskkeeper_"),
                }
            }
        }
    }
}

/// One hook event, in the session's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Happening {
    /// The session started (or resumed): its desk's note goes in as context.
    Started,
    /// A turn starts (the owner's prompt, or words Taskkeeper put in).
    TurnStarted,
    /// A turn starts because a background command ended (Claude Code's `<task-notification>`
    /// prompt): neither the owner's nor Taskkeeper's.
    TurnStartedByBackground,
    /// A tool is about to run; `ours`: one of Taskkeeper's tools, whose input gets the
    /// calling session and its proof (the model cannot write the proof).
    ToolStarting { ours: bool },
    /// A tool ran.
    ToolDone,
    /// A tool ran and left a command running in the background, by this id (Claude Code).
    BackgroundStarted { id: String },
    /// The agent shows the owner a prompt (a tool awaiting approval).
    WaitingOnOwner,
    /// The turn ended with these last words: the moment to hand over waiting work.
    /// `continued`: this end follows a handover (or another hook's block) in the same turn.
    /// `background`: the background commands still running (Claude Code lists them at Stop);
    /// `wakes`: what the session scheduled to start a turn by itself (Claude Code's
    /// `session_crons`).
    TurnEnded {
        last_words: Option<String>,
        continued: bool,
        background: Vec<String>,
        wakes: Vec<SelfWake>,
    },
    /// The turn ended on an API error (Claude Code's `StopFailure`); `rate_limited`: the
    /// error was a rate limit.
    TurnFailed { rate_limited: bool },
    /// The owner interrupted the turn (Codex's `Interrupt`): stopped by the owner, with no
    /// last words, and nothing is handed over into it.
    Interrupted,
    /// The session ended.
    Ended,
    /// The session ended for the same desk to go on in a new one (Claude Code's `/clear`).
    Cleared,
    /// An event that changes nothing for the session.
    Nothing,
}

/// A payload this module cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnreadableHook {
    #[error("not a hook payload: no hook_event_name")]
    NoEvent,
    #[error("unknown {agent} hook event {event:?}")]
    UnknownEvent { agent: &'static str, event: String },
}

/// The event a payload names.
pub fn event_of(payload: &Value) -> Result<&str, UnreadableHook> {
    payload
        .get("hook_event_name")
        .and_then(Value::as_str)
        .ok_or(UnreadableHook::NoEvent)
}

fn text(payload: &Value, field: &str) -> Option<String> {
    payload
        .get(field)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(str::to_owned)
}

/// The wake-ups a Claude Code Stop lists as scheduled by the session itself
/// (`session_crons`, ≥ 2.1.145: `id`, `schedule`, `recurring`, `prompt`); absent or
/// malformed entries list nothing.
pub fn self_wakes(stop: &Value) -> Vec<SelfWake> {
    stop.get("session_crons")
        .and_then(Value::as_array)
        .map(|crons| {
            crons
                .iter()
                .filter_map(|c| {
                    Some(SelfWake {
                        schedule: c.get("schedule")?.as_str()?.to_owned(),
                        recurring: c.get("recurring").and_then(Value::as_bool).unwrap_or(false),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The background commands a Claude Code Stop lists as still running.
fn running_background(stop: &Value) -> Vec<String> {
    stop.get("background_tasks")
        .and_then(Value::as_array)
        .map(|tasks| {
            tasks
                .iter()
                .filter(|t| {
                    !matches!(
                        t.get("status").and_then(Value::as_str),
                        Some("completed" | "failed" | "stopped" | "killed")
                    )
                })
                .filter_map(|t| t.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// What a Claude Code hook payload means for its session.
fn read_claude_code(event: &str, payload: &Value) -> Option<Happening> {
    let agent = HookAgent::ClaudeCode;
    Some(match event {
        "SessionStart" => Happening::Started,
        "UserPromptSubmit" => {
            let prompt = payload.get("prompt").and_then(Value::as_str).unwrap_or("");
            if prompt.trim_start().starts_with(TASK_NOTIFICATION) {
                Happening::TurnStartedByBackground
            } else {
                Happening::TurnStarted
            }
        }
        "PreToolUse" => Happening::ToolStarting {
            ours: agent.our_tool(payload),
        },
        "PostToolUse" | "PostToolUseFailure" => match payload
            .pointer("/tool_response/backgroundTaskId")
            .and_then(Value::as_str)
        {
            Some(id) => Happening::BackgroundStarted { id: id.to_owned() },
            None => Happening::ToolDone,
        },
        "PermissionRequest" => Happening::WaitingOnOwner,
        "Notification" => match payload.get("notification_type").and_then(Value::as_str) {
            Some("permission_prompt" | "elicitation_dialog" | "agent_needs_input") => {
                Happening::WaitingOnOwner
            }
            _ => Happening::Nothing,
        },
        // Claude Code's last words are kept as they are, even blank.
        "Stop" => Happening::TurnEnded {
            last_words: payload
                .get("last_assistant_message")
                .and_then(Value::as_str)
                .map(str::to_owned),
            continued: continued(payload),
            background: running_background(payload),
            wakes: self_wakes(payload),
        },
        "StopFailure" => Happening::TurnFailed {
            rate_limited: payload.get("error").and_then(Value::as_str) == Some("rate_limit"),
        },
        "SessionEnd" => match payload.get("reason").and_then(Value::as_str) {
            Some("clear") => Happening::Cleared,
            _ => Happening::Ended,
        },
        // Subagents run beside the main turn; they change nothing the watchdog asks.
        "SubagentStart" | "SubagentStop" => Happening::Nothing,
        _ => return None,
    })
}

fn continued(payload: &Value) -> bool {
    payload
        .get("stop_hook_active")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// What a hook payload means for its session.
pub fn read(agent: HookAgent, payload: &Value) -> Result<Happening, UnreadableHook> {
    let event = event_of(payload)?;
    let unknown = || UnreadableHook::UnknownEvent {
        agent: agent.as_str(),
        event: event.to_owned(),
    };
    if agent == HookAgent::ClaudeCode {
        return read_claude_code(event, payload).ok_or_else(unknown);
    }
    let turn_ended = |field| Happening::TurnEnded {
        last_words: text(payload, field),
        continued: continued(payload),
        background: Vec::new(),
        wakes: Vec::new(),
    };
    let happening = match (agent, event) {
        (_, "SessionStart") => Happening::Started,
        (HookAgent::Codex, "UserPromptSubmit") | (HookAgent::Gemini, "BeforeAgent") => {
            Happening::TurnStarted
        }
        (HookAgent::Codex, "PreToolUse") | (HookAgent::Gemini, "BeforeTool") => {
            Happening::ToolStarting {
                ours: agent.our_tool(payload),
            }
        }
        (HookAgent::Codex, "PostToolUse") | (HookAgent::Gemini, "AfterTool") => Happening::ToolDone,
        (HookAgent::Codex, "Stop") => turn_ended("last_assistant_message"),
        (HookAgent::Gemini, "AfterAgent") => turn_ended("prompt_response"),
        (HookAgent::Codex, "Interrupt") => Happening::Interrupted,
        (HookAgent::Gemini, "Notification") => {
            if text(payload, "notification_type").as_deref() == Some("ToolPermission") {
                Happening::WaitingOnOwner
            } else {
                Happening::Nothing
            }
        }
        (_, "SessionEnd") => Happening::Ended,
        (
            HookAgent::Gemini,
            "BeforeModel" | "AfterModel" | "BeforeToolSelection" | "PreCompress",
        ) => Happening::Nothing,
        (HookAgent::Codex, "PermissionRequest") => Happening::WaitingOnOwner,
        _ => return Err(unknown()),
    };
    Ok(happening)
}

/// What the hook prints so the session starts with `note` in its context, and, where the
/// agent takes one, `first` as its first user message (Claude Code's `initialUserMessage`).
pub fn context_answer(_agent: HookAgent, note: &str, first: Option<&str>) -> Value {
    // All three take Claude Code's shape for SessionStart.
    let mut out = json!({"hookEventName": "SessionStart", "additionalContext": note});
    if let Some(text) = first {
        out["initialUserMessage"] = json!(text);
    }
    json!({ "hookSpecificOutput": out })
}

/// What the hook prints so the turn that is ending goes on with `text` as its next prompt:
/// Claude Code and Codex continue on a Stop `block`, Gemini on an AfterAgent `deny`.
pub fn handover_answer(agent: HookAgent, text: &str) -> Value {
    let decision = match agent {
        HookAgent::ClaudeCode | HookAgent::Codex => "block",
        HookAgent::Gemini => "deny",
    };
    json!({"decision": decision, "reason": text})
}

/// What the hook prints so one of our tools runs with `input` (the model's arguments plus
/// the session and its proof) instead of the model's own. Claude Code and Codex take
/// `updatedInput` (it replaces the whole input), and Codex only beside `permissionDecision:
/// "allow"` (Codex 0.171.0 fails the hook otherwise); Gemini merges `tool_input` over the
/// model's arguments.
pub fn tool_input_answer(agent: HookAgent, input: Value) -> Value {
    match agent {
        HookAgent::ClaudeCode | HookAgent::Codex => json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "Taskkeeper's own tool",
            "updatedInput": input,
        }}),
        HookAgent::Gemini => {
            json!({"hookSpecificOutput": {"hookEventName": "BeforeTool", "tool_input": input}})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(agent: HookAgent, payloads: &[Value]) -> Vec<Happening> {
        payloads.iter().map(|p| read(agent, p).unwrap()).collect()
    }

    // Hook sequences shaped as docs/agents.md §3 and §7 record Codex CLI 0.171.0's and Gemini
    // CLI 0.61.0's payloads (ids shortened).
    fn codex(event: &str, extra: Value) -> Value {
        let mut p = json!({
            "session_id": "019a-thread", "transcript_path": "/h/.codex/sessions/r.jsonl",
            "cwd": "/work/web", "hook_event_name": event,
        });
        if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
            p.extend(extra);
        }
        p
    }

    fn gemini(event: &str, extra: Value) -> Value {
        let mut p = json!({
            "session_id": "5f1c-session", "transcript_path": "/h/.gemini/tmp/x/chats/s.json",
            "cwd": "/work/web", "hook_event_name": event, "timestamp": "2026-12-01T11:00:00Z",
        });
        if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
            p.extend(extra);
        }
        p
    }

    // A Claude Code session shaped as claude-code.md §4 records 2.1.332's payloads.
    fn claude(event: &str, extra: Value) -> Value {
        let mut p = json!({
            "session_id": "3c1e-session", "transcript_path": "/h/.claude/projects/web/s.jsonl",
            "cwd": "/work/web", "permission_mode": "default", "hook_event_name": event,
        });
        if let (Value::Object(p), Value::Object(extra)) = (&mut p, extra) {
            p.extend(extra);
        }
        p
    }

    #[test]
    fn a_claude_code_turn_with_background_work_a_wake_up_and_a_clear() {
        let seq = [
            claude("SessionStart", json!({"source": "startup", "model": "m"})),
            claude("UserPromptSubmit", json!({"prompt": "build it"})),
            claude(
                "PreToolUse",
                json!({"tool_name": "mcp__taskkeeper__task_update", "tool_input": {"task_id": "t"}, "tool_use_id": "u1"}),
            ),
            claude(
                "PostToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "npm run watch", "run_in_background": true},
                       "tool_response": {"stdout": "", "backgroundTaskId": "bg-1"}}),
            ),
            claude(
                "PostToolUseFailure",
                json!({"tool_name": "Bash", "tool_input": {}, "error": "exit 1", "is_interrupt": false}),
            ),
            claude(
                "PermissionRequest",
                json!({"tool_name": "Bash", "tool_input": {}}),
            ),
            claude(
                "Notification",
                json!({"message": "Claude needs your permission", "notification_type": "permission_prompt"}),
            ),
            claude(
                "Notification",
                json!({"message": "idle", "notification_type": "idle_prompt"}),
            ),
            claude(
                "SubagentStart",
                json!({"agent_id": "a1", "agent_type": "Explore"}),
            ),
            claude(
                "Stop",
                json!({"stop_hook_active": false, "last_assistant_message": "Watching the build.",
                       "background_tasks": [
                           {"id": "bg-1", "type": "shell", "status": "running", "command": "npm run watch"},
                           {"id": "bg-0", "type": "shell", "status": "completed"}],
                       "session_crons": [{"id": "c1", "schedule": "*/5 * * * *", "recurring": true, "prompt": "check"}]}),
            ),
            claude(
                "UserPromptSubmit",
                json!({"prompt": "<task-notification>bg-1 completed</task-notification>"}),
            ),
            claude("StopFailure", json!({"error": "rate_limit"})),
            claude("StopFailure", json!({"error": "server_error"})),
            claude("SessionEnd", json!({"reason": "clear"})),
            claude("SessionEnd", json!({"reason": "prompt_input_exit"})),
        ];
        assert_eq!(
            all(HookAgent::ClaudeCode, &seq),
            [
                Happening::Started,
                Happening::TurnStarted,
                Happening::ToolStarting { ours: true },
                Happening::BackgroundStarted { id: "bg-1".into() },
                Happening::ToolDone,
                Happening::WaitingOnOwner,
                Happening::WaitingOnOwner,
                Happening::Nothing,
                Happening::Nothing,
                Happening::TurnEnded {
                    last_words: Some("Watching the build.".into()),
                    continued: false,
                    background: vec!["bg-1".into()],
                    wakes: vec![SelfWake {
                        schedule: "*/5 * * * *".into(),
                        recurring: true
                    }],
                },
                Happening::TurnStartedByBackground,
                Happening::TurnFailed { rate_limited: true },
                Happening::TurnFailed {
                    rate_limited: false
                },
                Happening::Cleared,
                Happening::Ended,
            ]
        );
    }

    #[test]
    fn a_claude_code_interrupt_has_no_closing_event_and_another_agents_event_is_refused() {
        // Esc mid-tool: no PostToolUse and no Stop; the next prompt opens a new turn, and the
        // level signal (the status file) tells the idle in between.
        let seq = [
            claude("UserPromptSubmit", json!({"prompt": "long"})),
            claude(
                "PreToolUse",
                json!({"tool_name": "Bash", "tool_input": {"command": "sleep 100"}, "tool_use_id": "u2"}),
            ),
            claude("UserPromptSubmit", json!({"prompt": "again"})),
        ];
        assert_eq!(
            all(HookAgent::ClaudeCode, &seq),
            [
                Happening::TurnStarted,
                Happening::ToolStarting { ours: false },
                Happening::TurnStarted,
            ]
        );
        let err = read(HookAgent::ClaudeCode, &claude("AfterAgent", json!({}))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown claude-code hook event \"AfterAgent\""
        );
        // A wake-up list that is not one lists nothing.
        assert_eq!(self_wakes(&json!({"session_crons": [{"id": "x"}, 3]})), []);
    }

    #[test]
    fn a_codex_turn_with_our_tool_and_a_handover() {
        let seq = [
            codex(
                "SessionStart",
                json!({"model": "m", "permission_mode": "never", "source": "startup"}),
            ),
            codex("UserPromptSubmit", json!({"turn_id": "t1", "prompt": "hi"})),
            codex(
                "PreToolUse",
                json!({"tool_name": "shell", "tool_input": {"command": ["ls"]}, "tool_use_id": "c1"}),
            ),
            codex(
                "PostToolUse",
                json!({"tool_name": "shell", "tool_input": {}, "tool_use_id": "c1", "tool_response": "ok"}),
            ),
            codex(
                "PreToolUse",
                json!({"tool_name": "mcp__taskkeeper__task_update", "tool_input": {"task_id": "t"}, "tool_use_id": "c2"}),
            ),
            codex(
                "Stop",
                json!({"turn_id": "t1", "stop_hook_active": false, "last_assistant_message": "Done."}),
            ),
            codex(
                "Stop",
                json!({"turn_id": "t1", "stop_hook_active": true, "last_assistant_message": "Also done."}),
            ),
            codex("SessionEnd", json!({"reason": "exit"})),
        ];
        assert_eq!(
            all(HookAgent::Codex, &seq),
            [
                Happening::Started,
                Happening::TurnStarted,
                Happening::ToolStarting { ours: false },
                Happening::ToolDone,
                Happening::ToolStarting { ours: true },
                Happening::TurnEnded {
                    last_words: Some("Done.".into()),
                    continued: false,
                    background: vec![],
                    wakes: vec![],
                },
                Happening::TurnEnded {
                    last_words: Some("Also done.".into()),
                    continued: true,
                    background: vec![],
                    wakes: vec![],
                },
                Happening::Ended,
            ]
        );
    }

    #[test]
    fn a_codex_interrupt_ends_the_turn_without_last_words() {
        let seq = [
            codex(
                "UserPromptSubmit",
                json!({"turn_id": "t2", "prompt": "long"}),
            ),
            codex(
                "PreToolUse",
                json!({"tool_name": "shell", "tool_input": {}, "tool_use_id": "c3"}),
            ),
            // Esc: no PostToolUse and no Stop.
            codex("Interrupt", json!({"turn_id": "t2"})),
            codex(
                "UserPromptSubmit",
                json!({"turn_id": "t3", "prompt": "again"}),
            ),
        ];
        assert_eq!(
            all(HookAgent::Codex, &seq),
            [
                Happening::TurnStarted,
                Happening::ToolStarting { ours: false },
                Happening::Interrupted,
                Happening::TurnStarted,
            ]
        );
    }

    #[test]
    fn a_gemini_turn_an_approval_and_an_interrupt_with_no_closing_event() {
        let seq = [
            gemini("SessionStart", json!({"source": "startup"})),
            gemini("BeforeAgent", json!({"prompt": "hi"})),
            gemini(
                "BeforeTool",
                json!({"tool_name": "mcp_taskkeeper_task_update", "tool_input": {"task_id": "t"},
                       "mcp_context": {"server_name": "taskkeeper"}}),
            ),
            gemini(
                "AfterTool",
                json!({"tool_name": "mcp_taskkeeper_task_update", "tool_input": {}, "tool_response": {}}),
            ),
            gemini(
                "BeforeTool",
                json!({"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
            ),
            gemini(
                "Notification",
                json!({"notification_type": "ToolPermission", "message": "Allow?"}),
            ),
            gemini(
                "AfterAgent",
                json!({"prompt": "hi", "prompt_response": "Done.", "stop_hook_active": false}),
            ),
            // Esc in the next turn: Gemini fires no AfterAgent; the next BeforeAgent opens a
            // new turn over the open one.
            gemini("BeforeAgent", json!({"prompt": "long"})),
            gemini("BeforeAgent", json!({"prompt": "again"})),
            gemini("Notification", json!({"notification_type": "Other"})),
            gemini("SessionEnd", json!({"reason": "exit"})),
        ];
        assert_eq!(
            all(HookAgent::Gemini, &seq),
            [
                Happening::Started,
                Happening::TurnStarted,
                Happening::ToolStarting { ours: true },
                Happening::ToolDone,
                Happening::ToolStarting { ours: false },
                Happening::WaitingOnOwner,
                Happening::TurnEnded {
                    last_words: Some("Done.".into()),
                    continued: false,
                    background: vec![],
                    wakes: vec![],
                },
                Happening::TurnStarted,
                Happening::TurnStarted,
                Happening::Nothing,
                Happening::Ended,
            ]
        );
    }

    #[test]
    fn another_servers_tool_of_the_same_name_is_not_ours() {
        let p = gemini(
            "BeforeTool",
            json!({"tool_name": "mcp_taskkeeper_task_update", "mcp_context": {"server_name": "evil"}}),
        );
        assert_eq!(
            read(HookAgent::Gemini, &p).unwrap(),
            Happening::ToolStarting { ours: false }
        );
        let p = codex(
            "PreToolUse",
            json!({"tool_name": "mcp__other__task_update"}),
        );
        assert_eq!(
            read(HookAgent::Codex, &p).unwrap(),
            Happening::ToolStarting { ours: false }
        );
    }

    #[test]
    fn an_event_of_the_other_agent_is_refused_by_name() {
        let err = read(HookAgent::Codex, &codex("AfterAgent", json!({}))).unwrap_err();
        assert_eq!(err.to_string(), "unknown codex hook event \"AfterAgent\"");
        let err = read(HookAgent::Gemini, &gemini("Stop", json!({}))).unwrap_err();
        assert!(err.to_string().contains("gemini"), "{err}");
        assert_eq!(
            read(HookAgent::Gemini, &json!({"session_id": "s"})).unwrap_err(),
            UnreadableHook::NoEvent
        );
    }

    #[test]
    fn each_agent_continues_a_turn_in_its_own_words() {
        assert_eq!(
            handover_answer(HookAgent::Codex, "task"),
            json!({"decision": "block", "reason": "task"})
        );
        assert_eq!(
            handover_answer(HookAgent::Gemini, "task"),
            json!({"decision": "deny", "reason": "task"})
        );
        assert_eq!(
            tool_input_answer(HookAgent::Gemini, json!({"a": 1}))["hookSpecificOutput"]["tool_input"],
            json!({"a": 1})
        );
        assert_eq!(
            tool_input_answer(HookAgent::Codex, json!({"a": 1}))["hookSpecificOutput"]["updatedInput"],
            json!({"a": 1})
        );
        assert_eq!(
            handover_answer(HookAgent::ClaudeCode, "task"),
            json!({"decision": "block", "reason": "task"})
        );
        assert_eq!(
            context_answer(HookAgent::ClaudeCode, "note", Some("first"))["hookSpecificOutput"],
            json!({"hookEventName": "SessionStart", "additionalContext": "note", "initialUserMessage": "first"})
        );
    }
}
