//! The Codex CLI and Gemini CLI hook intakes (`/hooks/codex`, `/hooks/gemini`), from hook
//! sequences shaped as docs/agents.md records them: the activity they give a session (an
//! interrupt with no closing event included), the handover at a turn's end in each agent's
//! words, the session proof our tool calls get and what it lets `task_update` end over MCP,
//! payloads each intake refuses, and the level signals (its adapter's) a session is corrected
//! from.

use serde_json::{Value, json};

use crate::mcp::Client;
use crate::support::TestDaemon;

struct Agent<'a> {
    d: &'a TestDaemon,
    route: &'static str,
    cwd: String,
}

impl<'a> Agent<'a> {
    fn codex(d: &'a TestDaemon) -> Self {
        Self::new(d, "/hooks/codex")
    }

    fn gemini(d: &'a TestDaemon) -> Self {
        Self::new(d, "/hooks/gemini")
    }

    fn new(d: &'a TestDaemon, route: &'static str) -> Self {
        let cwd = d.data_dir.join("work").to_string_lossy().into_owned();
        Self { d, route, cwd }
    }

    /// One hook as the helper forwards it; (status, what the hook prints).
    fn send(&self, session: &str, event: &str, extra: Value) -> (u16, String) {
        let mut body = json!({"session_id": session, "hook_event_name": event, "cwd": self.cwd,
            "transcript_path": "/tmp/t.jsonl"});
        if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
            b.extend(e);
        }
        self.d.raw(
            "POST",
            self.route,
            &self.d.host(),
            &[
                (
                    "Authorization".to_owned(),
                    format!("Bearer {}", self.d.daemon().worker_token().as_str()),
                ),
                ("Content-Type".to_owned(), "application/json".to_owned()),
            ],
            &body.to_string(),
        )
    }

    fn ok(&self, session: &str, event: &str, extra: Value) -> String {
        let (status, out) = self.send(session, event, extra);
        assert_eq!(status, 200, "{event}: {out}");
        out
    }

    fn json(&self, session: &str, event: &str, extra: Value) -> Value {
        let out = self.ok(session, event, extra);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{event} printed {out:?}: {e}"))
    }

    fn activity(&self, id: &str) -> Value {
        let (_, v) = self.d.call("GET", "/api/sessions", None);
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s["activity"].clone())
            .unwrap_or(Value::Null)
    }

    fn session_field(&self, id: &str, field: &str) -> Value {
        let (_, v) = self.d.call("GET", "/api/sessions", None);
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .map(|s| s[field].clone())
            .unwrap_or(Value::Null)
    }

    fn new_task(&self, text: &str) -> String {
        let (status, t) = self.d.call(
            "POST",
            "/api/tasks",
            Some(&json!({"desk": "work", "text": text})),
        );
        assert_eq!(status, 201, "{t}");
        t["id"].as_str().unwrap().to_owned()
    }
}

#[test]
fn a_codex_session_gets_its_note_a_handover_at_stop_and_an_interrupt_stops_it() {
    let d = TestDaemon::start();
    let a = Agent::codex(&d);
    let start = a.json(
        "019a-thread",
        "SessionStart",
        json!({"model": "m", "permission_mode": "never", "source": "startup"}),
    );
    let note = start["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(note.contains("desk \"work\""), "{note}");
    assert_eq!(a.session_field("019a-thread", "agent"), "codex");
    assert_eq!(a.activity("019a-thread"), "idle");

    a.ok(
        "019a-thread",
        "UserPromptSubmit",
        json!({"turn_id": "t1", "prompt": "hi"}),
    );
    assert_eq!(a.activity("019a-thread"), "busy");
    let task = a.new_task("Add a --json flag");
    let out = a.json(
        "019a-thread",
        "Stop",
        json!({"turn_id": "t1", "stop_hook_active": false, "last_assistant_message": "Hi!"}),
    );
    assert_eq!(out["decision"], "block", "{out}");
    let reason = out["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("Task {task} from owner")),
        "{reason}"
    );
    assert_eq!(
        a.activity("019a-thread"),
        "busy",
        "the handover continues the turn"
    );
    assert_eq!(a.session_field("019a-thread", "lastWords"), "Hi!");

    // The continued turn ends with the task still open: nothing more to hand over.
    let out = a.ok(
        "019a-thread",
        "Stop",
        json!({"turn_id": "t1", "stop_hook_active": true, "last_assistant_message": "Working on it."}),
    );
    assert_eq!(out, "");
    assert_eq!(a.activity("019a-thread"), "idle");

    // Esc in the next turn: Codex says Interrupt, and no Stop follows.
    a.ok(
        "019a-thread",
        "UserPromptSubmit",
        json!({"turn_id": "t2", "prompt": "go on"}),
    );
    a.ok(
        "019a-thread",
        "PreToolUse",
        json!({"tool_name": "shell", "tool_input": {"command": ["ls"]}, "tool_use_id": "c1"}),
    );
    a.ok("019a-thread", "Interrupt", json!({"turn_id": "t2"}));
    assert_eq!(a.activity("019a-thread"), "stopped-by-owner");
    a.ok(
        "019a-thread",
        "UserPromptSubmit",
        json!({"turn_id": "t3", "prompt": "again"}),
    );
    assert_eq!(a.activity("019a-thread"), "busy");
    a.ok("019a-thread", "SessionEnd", json!({"reason": "exit"}));
    assert_eq!(a.activity("019a-thread"), "ended");
}

#[test]
fn a_gemini_session_gets_a_handover_at_after_agent_and_an_interrupt_leaves_no_end() {
    let d = TestDaemon::start();
    let a = Agent::gemini(&d);
    let start = a.json("5f1c-session", "SessionStart", json!({"source": "startup"}));
    assert!(
        start["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("task_update"),
        "{start}"
    );
    assert_eq!(a.session_field("5f1c-session", "agent"), "gemini");
    a.ok("5f1c-session", "BeforeAgent", json!({"prompt": "hi"}));
    a.ok(
        "5f1c-session",
        "BeforeTool",
        json!({"tool_name": "run_shell_command", "tool_input": {"command": "rm -rf build"}}),
    );
    a.ok(
        "5f1c-session",
        "Notification",
        json!({"notification_type": "ToolPermission", "message": "Allow?"}),
    );
    assert_eq!(a.activity("5f1c-session"), "waiting-on-owner");
    a.ok(
        "5f1c-session",
        "AfterTool",
        json!({"tool_name": "run_shell_command", "tool_input": {}, "tool_response": {}}),
    );
    assert_eq!(a.activity("5f1c-session"), "busy", "the owner answered");

    let task = a.new_task("Add a --json flag");
    let out = a.json(
        "5f1c-session",
        "AfterAgent",
        json!({"prompt": "hi", "prompt_response": "Done.", "stop_hook_active": false}),
    );
    assert_eq!(out["decision"], "deny", "{out}");
    assert!(
        out["reason"]
            .as_str()
            .unwrap()
            .contains(&format!("Task {task} from owner")),
        "{out}"
    );
    let out = a.ok(
        "5f1c-session",
        "AfterAgent",
        json!({"prompt": "task", "prompt_response": "On it.", "stop_hook_active": true}),
    );
    assert_eq!(out, "", "nothing new waits");
    assert_eq!(a.activity("5f1c-session"), "idle");

    // Esc: Gemini fires no AfterAgent. The session looks busy until its next turn starts.
    a.ok("5f1c-session", "BeforeAgent", json!({"prompt": "long"}));
    assert_eq!(a.activity("5f1c-session"), "busy");
    a.ok("5f1c-session", "BeforeAgent", json!({"prompt": "again"}));
    assert_eq!(a.activity("5f1c-session"), "busy");
    a.ok("5f1c-session", "SessionEnd", json!({"reason": "exit"}));
    assert_eq!(a.activity("5f1c-session"), "ended");
}

/// What the hook added to a tool's input: the session and the proof, beside the model's.
fn filled(agent: &Agent, session: &str, event: &str, tool: &str, input: Value) -> Value {
    let out = agent.json(
        session,
        event,
        json!({"tool_name": tool, "tool_input": input}),
    );
    let hso = &out["hookSpecificOutput"];
    let input = if event == "PreToolUse" {
        &hso["updatedInput"]
    } else {
        &hso["tool_input"]
    };
    assert_eq!(input["session_id"], session, "{out}");
    input.clone()
}

#[test]
fn the_proof_our_tool_calls_get_ends_the_sessions_own_task_and_no_other() {
    let d = TestDaemon::start();
    let codex = Agent::codex(&d);
    // Gemini's session works at another desk.
    let mut gemini = Agent::gemini(&d);
    gemini.cwd = d.data_dir.join("other").to_string_lossy().into_owned();
    codex.ok("cx-1", "SessionStart", json!({"source": "startup"}));
    gemini.ok("gm-1", "SessionStart", json!({"source": "startup"}));
    codex.ok("cx-1", "UserPromptSubmit", json!({"prompt": "hi"}));
    let task = codex.new_task("Add a --json flag");
    let out = codex.json("cx-1", "Stop", json!({"last_assistant_message": "Hi!"}));
    assert_eq!(
        out["decision"], "block",
        "the Codex session is handed {task}"
    );

    let args = json!({"task_id": task, "status": "done", "text": "Added it"});
    // Gemini's session, at its own desk, tries to end the task handed to Codex's.
    let theirs = filled(
        &gemini,
        "gm-1",
        "BeforeTool",
        "mcp_taskkeeper_task_update",
        args.clone(),
    );
    assert_eq!(theirs["session_proof"], d.daemon().session_proof("gm-1"));
    let mcp = Client::connect(&d, d.daemon().worker_token().as_str());
    let refused = mcp.refused("task_update", theirs);
    assert!(refused.contains(&task), "{refused}");
    assert_eq!(d.task(&task)["state"], "working");

    // A model that writes another session's id itself has no proof for it.
    let mut forged = args.clone();
    forged["session_id"] = json!("cx-1");
    let refused = mcp.refused("task_update", forged);
    assert!(refused.contains("proof"), "{refused}");

    // Codex's own session, with what its PreToolUse hook added, ends it.
    let ours = filled(
        &codex,
        "cx-1",
        "PreToolUse",
        "mcp__taskkeeper__task_update",
        args,
    );
    mcp.ok("task_update", ours);
    assert_eq!(d.task(&task)["state"], "completed");

    // Another server's tool of the same name gets nothing.
    let out = gemini.ok(
        "gm-1",
        "BeforeTool",
        json!({"tool_name": "mcp_taskkeeper_task_update", "tool_input": {},
               "mcp_context": {"server_name": "other"}}),
    );
    assert_eq!(out, "");
}

#[test]
fn payloads_an_intake_cannot_read_are_refused_and_change_nothing() {
    let d = TestDaemon::start();
    let (codex, gemini) = (Agent::codex(&d), Agent::gemini(&d));
    let cases: [(&Agent, &str, Value, &str); 4] = [
        (
            &codex,
            "AfterAgent",
            json!({}),
            r#"unknown codex hook event \"AfterAgent\""#,
        ),
        (
            &gemini,
            "Stop",
            json!({}),
            r#"unknown gemini hook event \"Stop\""#,
        ),
        (&codex, "Stop", json!({"cwd": "relative/dir"}), "cwd"),
        (
            &gemini,
            "BeforeAgent",
            json!({"session_id": ""}),
            "no session_id",
        ),
    ];
    for (agent, event, extra, says) in cases {
        let (status, out) = agent.send("s-x", event, extra);
        assert_eq!(status, 400, "{event}: {out}");
        assert!(out.contains(says), "{event}: {out}");
    }
    let (status, out) = d.raw(
        "POST",
        "/hooks/codex",
        &d.host(),
        &[(
            "Authorization".to_owned(),
            format!("Bearer {}", d.daemon().worker_token().as_str()),
        )],
        "not json",
    );
    assert_eq!(status, 400, "{out}");
    let (_, sessions) = d.call("GET", "/api/sessions", None);
    assert_eq!(sessions["sessions"], json!([]), "no session was made");
}

/// An interrupt at a permission prompt ends the wait on the owner: the mark on the desk's
/// task follows the session's activity (it used to stay until the next prompt or tool).
#[test]
fn a_codex_interrupt_at_a_permission_prompt_ends_the_wait_on_the_owner() {
    let d = TestDaemon::start();
    let a = Agent::codex(&d);
    a.ok("019a-thread", "SessionStart", json!({"source": "startup"}));
    a.ok(
        "019a-thread",
        "UserPromptSubmit",
        json!({"turn_id": "t1", "prompt": "hi"}),
    );
    let task = a.new_task("Add a --json flag");
    a.ok(
        "019a-thread",
        "PermissionRequest",
        json!({"turn_id": "t1", "tool_name": "shell", "tool_input": {"command": ["rm", "x"]}}),
    );
    assert_eq!(a.activity("019a-thread"), "waiting-on-owner");
    assert_eq!(d.task(&task)["waitingOnOwner"], true);
    a.ok("019a-thread", "Interrupt", json!({"turn_id": "t1"}));
    assert_eq!(a.activity("019a-thread"), "stopped-by-owner");
    assert_eq!(d.task(&task)["waitingOnOwner"], false);
}

/// A session is corrected only from the level signals its kind has (its adapter's): a Codex
/// TUI started from a Claude Code terminal inherits that session's environment, so its hooks
/// can name Claude Code's status file; what that file says is Claude Code's session, not this
/// one, and it never makes the Codex session look idle.
#[test]
fn a_codex_session_is_corrected_only_by_its_own_level_signals() {
    let d = TestDaemon::start();
    let codex = Agent::codex(&d);
    let status_file = d.data_dir.join("claude-session.json");
    let id = "019a0000-0000-7000-8000-0000000000c1";
    let body = json!({"session_id": id, "hook_event_name": "UserPromptSubmit", "cwd": codex.cwd,
        "transcript_path": "/tmp/t.jsonl", "turn_id": "t1", "prompt": "go"});
    let (status, out) = d.raw(
        "POST",
        "/hooks/codex",
        &d.host(),
        &[
            (
                "Authorization".to_owned(),
                format!("Bearer {}", d.daemon().worker_token().as_str()),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
            (
                "X-Taskkeeper-Status-File".to_owned(),
                status_file.to_string_lossy().into_owned(),
            ),
        ],
        &body.to_string(),
    );
    assert_eq!(status, 200, "{out}");
    assert_eq!(codex.activity(id), "busy");
    // Written after the session's last change, so a Claude Code session would read it.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&status_file, r#"{"status":"idle"}"#).unwrap();
    // Reading the sessions reconciles each with its level signals.
    assert_eq!(
        codex.activity(id),
        "busy",
        "Claude Code's status file is no level signal of a Codex session"
    );
    codex.ok(
        id,
        "Stop",
        json!({"turn_id": "t1", "stop_hook_active": false, "last_assistant_message": "Done."}),
    );
    assert_eq!(
        codex.activity(id),
        "idle",
        "its own hooks still tell its turns"
    );
}
