//! The Claude Code hook intake, from recorded hook sequences: the activity model (background
//! commands, permission prompts, Esc with no Stop, a killed session, `/clear`), the Stop
//! handover, the waiter, cancel notices, and garbage payloads.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Pane, TOKEN, TestDaemon, until};

pub(crate) struct Hooks<'a> {
    d: &'a TestDaemon,
    pub(crate) cwd: String,
}

impl<'a> Hooks<'a> {
    pub(crate) fn new(d: &'a TestDaemon) -> Self {
        let cwd = d.data_dir.join("work").to_string_lossy().into_owned();
        Self { d, cwd }
    }

    /// Send one hook; (status, what the hook prints).
    pub(crate) fn send(
        &self,
        session: &str,
        event: &str,
        extra: Value,
        headers: &[(&str, String)],
    ) -> (u16, String) {
        let mut body = json!({"session_id": session, "hook_event_name": event, "cwd": self.cwd,
            "transcript_path": "/tmp/t.jsonl", "permission_mode": "default"});
        if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
            b.extend(e);
        }
        // The worker token, as the hook helper sends it.
        let mut hs = vec![
            (
                "Authorization".to_owned(),
                format!("Bearer {}", self.d.daemon().worker_token().as_str()),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        hs.extend(headers.iter().map(|(k, v)| (k.to_string(), v.clone())));
        self.d.raw(
            "POST",
            "/hooks/claude-code",
            &self.d.host(),
            &hs,
            &body.to_string(),
        )
    }

    pub(crate) fn ok(&self, session: &str, event: &str, extra: Value) -> String {
        let (status, out) = self.send(session, event, extra, &[]);
        assert_eq!(status, 200, "{event}: {out}");
        out
    }

    pub(crate) fn session(&self, id: &str) -> Value {
        let (_, v) = self.d.call("GET", "/api/sessions", None);
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["id"] == id)
            .cloned()
            .unwrap_or(Value::Null)
    }

    fn new_task(&self, desk: &str, text: &str) -> String {
        let (status, t) = self.d.call(
            "POST",
            "/api/tasks",
            Some(&json!({"desk": desk, "text": text})),
        );
        assert_eq!(status, 201, "{t}");
        t["id"].as_str().unwrap().to_owned()
    }

    /// A waiter's long poll on its own thread; its answer when the daemon gives one.
    fn waiter(&self) -> std::thread::JoinHandle<String> {
        let (host, addr, cwd) = (self.d.host(), self.d.addr, self.cwd.clone());
        std::thread::spawn(move || {
            use std::io::{Read as _, Write as _};
            let body =
                json!({"session_id": "s-1", "hook_event_name": "Stop", "cwd": cwd}).to_string();
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            write!(
                s,
                "POST /hooks/claude-code/wait HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut out = String::new();
            s.read_to_string(&mut out).unwrap();
            out
        })
    }

    fn task(&self, id: &str) -> Value {
        self.d.task(id)
    }
}

#[test]
fn a_session_attaches_to_the_desk_of_its_directory_and_gets_the_note() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": d.data_dir.to_string_lossy()})),
    );
    let out = h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    let v: Value = serde_json::from_str(&out).unwrap();
    let note = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        note.starts_with("«Taskkeeper» This session works at desk \"web\""),
        "{note}"
    );
    assert!(note.contains("task_update"));
    assert_eq!(
        h.session("s-1")["desk"],
        "web",
        "the deepest desk containing the cwd"
    );

    // TASKKEEPER_DESK names another desk; a directory no desk covers gets a desk of its own.
    let (status, _) = h.send(
        "s-2",
        "SessionStart",
        json!({"source": "startup"}),
        &[("X-Taskkeeper-Desk", "api".into())],
    );
    assert_eq!(status, 200);
    assert_eq!(h.session("s-2")["desk"], "api");
    let elsewhere = Hooks {
        d: &d,
        cwd: "/srv/My Tool".into(),
    };
    elsewhere.ok("s-3", "SessionStart", json!({"source": "startup"}));
    assert_eq!(h.session("s-3")["desk"], "my-tool");
}

#[test]
fn turns_tools_and_background_commands() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    assert_eq!(h.session("s-1")["activity"], "idle");
    h.ok("s-1", "UserPromptSubmit", json!({"prompt": "build it"}));
    assert_eq!(h.session("s-1")["activity"], "busy");
    h.ok("s-1", "PreToolUse", json!({"tool_name": "Bash", "tool_input": {"command": "npm run watch", "run_in_background": true}}));
    h.ok(
        "s-1",
        "PostToolUse",
        json!({"tool_name": "Bash", "tool_response": {"stdout": "", "backgroundTaskId": "bg-1"}}),
    );
    h.ok("s-1", "Stop", json!({"stop_hook_active": false, "last_assistant_message": "Now writing the probe…",
        "background_tasks": [{"id": "bg-1", "type": "shell", "status": "running", "command": "npm run watch"}]}));
    let s = h.session("s-1");
    assert_eq!(
        (s["activity"].as_str(), s["background"].clone()),
        (Some("idle"), json!(["bg-1"]))
    );
    assert_eq!(s["lastWords"], "Now writing the probe…");
    // The command finished: Claude Code wakes the session with a task notification.
    h.ok(
        "s-1",
        "UserPromptSubmit",
        json!({"prompt": "<task-notification>bg-1 completed</task-notification>"}),
    );
    h.ok(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "Build done.", "background_tasks": []}),
    );
    assert_eq!(h.session("s-1")["background"], json!([]));
}

#[test]
fn a_permission_prompt_marks_the_task_waiting_on_the_owner_and_esc_shows_as_stopped() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let status_file = d.data_dir.join("claude-session.json");
    let reach = [(
        "X-Taskkeeper-Status-File",
        status_file.to_string_lossy().into_owned(),
    )];
    h.send("s-1", "SessionStart", json!({"source": "startup"}), &reach);
    let id = h.new_task("work", "Add a --json flag");
    h.ok(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "Ready.", "background_tasks": []}),
    );
    h.ok(
        "s-1",
        "PermissionRequest",
        json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}),
    );
    assert_eq!(h.session("s-1")["activity"], "waiting-on-owner");
    let task = d.rpc(
        "/a2a/work",
        TOKEN,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}),
    );
    assert_eq!(
        task["result"]["status"]["state"], "TASK_STATE_WORKING",
        "not INPUT_REQUIRED: that is for the asker"
    );
    let ext = task["result"]["metadata"]
        .as_object()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .clone();
    assert_eq!(ext["waitingOnOwner"], true, "{task}");

    // The owner presses Esc: no hook fires, the session's own status file says idle.
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(&status_file, r#"{"status":"idle","sessionId":"s-1"}"#).unwrap();
    assert_eq!(h.session("s-1")["activity"], "stopped-by-owner");
    // Someone writes to it again.
    h.ok("s-1", "UserPromptSubmit", json!({"prompt": "go on"}));
    assert_eq!(h.session("s-1")["activity"], "busy");
    assert_eq!(h.task(&id)["waitingOnOwner"], false);
}

#[test]
fn a_killed_session_ends_and_clear_keeps_the_desks_tasks() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = child.id();
    child.wait().unwrap();
    h.send(
        "s-1",
        "SessionStart",
        json!({"source": "startup"}),
        &[("X-Taskkeeper-Pid", dead_pid.to_string())],
    );
    h.ok("s-1", "UserPromptSubmit", json!({"prompt": "x"}));
    assert_eq!(h.session("s-1")["activity"], "ended", "the process is gone");

    let h2 = Hooks::new(&d);
    h2.ok("s-2", "SessionStart", json!({"source": "startup"}));
    let id = h2.new_task("work", "Keep me");
    h2.ok("s-2", "SessionEnd", json!({"reason": "clear"}));
    h2.ok("s-3", "SessionStart", json!({"source": "clear"}));
    assert_eq!(h2.session("s-2")["activity"], "ended");
    assert_eq!(h2.session("s-3")["desk"], "work");
    assert_eq!(
        h2.task(&id)["state"],
        "working",
        "the desk keeps its tasks across /clear"
    );
}

#[test]
fn our_tool_calls_get_the_session_id_and_are_allowed() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    let input = json!({"task_id": "t-1", "status": "done", "text": "Added it"});
    let out = h.ok("s-1", "PreToolUse", json!({"tool_name": "mcp__taskkeeper__task_update", "tool_input": input, "tool_use_id": "tu-1"}));
    let v: Value = serde_json::from_str(&out).unwrap();
    let hso = &v["hookSpecificOutput"];
    assert_eq!(hso["permissionDecision"], "allow");
    // The session's proof goes with its id: the model never writes either.
    assert_eq!(
        hso["updatedInput"],
        json!({"task_id": "t-1", "status": "done", "text": "Added it", "session_id": "s-1",
            "session_proof": d.daemon().session_proof("s-1")})
    );
    assert_eq!(
        h.ok(
            "s-1",
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}})
        ),
        "",
        "other tools: nothing"
    );
}

#[test]
fn the_stop_that_ends_a_task_hands_over_the_next_and_the_waiter_wakes_an_idle_session() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    h.ok("s-1", "UserPromptSubmit", json!({"prompt": "hello"}));
    let first = h.new_task("work", "First task");
    let second = h.new_task("work", "Second task");
    // The turn ends: the first task (WORKING, not yet delivered) is handed over at once.
    let out = h.ok(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "Hi!", "background_tasks": []}),
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["decision"], "block");
    let reason = v["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("«Taskkeeper» Task {first} from owner")),
        "{reason}"
    );
    assert!(
        h.task(&first)["deliveredAt"].is_string() || h.task(&first)["version"].as_u64() > Some(1)
    );

    // The worker ends the first task in that turn; its Stop hands over the second.
    d.call(
        "POST",
        &format!("/api/tasks/{first}/update"),
        Some(&json!({"status": "done", "text": "ok"})),
    );
    let out = h.ok("s-1", "Stop", json!({"stop_hook_active": true, "last_assistant_message": "Done.", "background_tasks": []}));
    assert!(out.contains(&format!("Task {second} from owner")), "{out}");
    assert_eq!(h.task(&second)["lastWords"], Value::Null);

    // A turn that ends with the second task open: no handover, its last words are kept.
    let out = h.ok(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "Now writing the probe…", "background_tasks": []}),
    );
    assert_eq!(out, "");
    assert_eq!(h.task(&second)["lastWords"], "Now writing the probe…");

    // A waiter for the idle session wakes it when a cancel must be told.
    let waiter = h.waiter();
    until("the waiter to park", || {
        d.daemon().has_waiter("s-1").then_some(())
    });
    assert!(!waiter.is_finished(), "nothing to tell yet");
    d.call(
        "POST",
        &format!("/api/tasks/{second}/cancel"),
        Some(&json!({"reason": "not needed"})),
    );
    let answer = waiter.join().unwrap();
    assert!(answer.contains(r#""action":"deliver""#), "{answer}");
    assert!(
        answer.contains(&format!(
            "Task {second} from owner was canceled, the reason given: not needed"
        )),
        "{answer}"
    );
}

#[test]
fn a_newer_waiter_or_a_new_turn_sends_the_old_one_away() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    let wait = || h.waiter();
    let old = wait();
    until("the first waiter to park", || {
        d.daemon().has_waiter("s-1").then_some(())
    });
    let newer = wait();
    // The old one leaves only once the newer one has taken over (and read the turn count).
    assert!(old.join().unwrap().contains("a newer waiter took over"));
    h.ok(
        "s-1",
        "UserPromptSubmit",
        json!({"prompt": "typed by the owner"}),
    );
    assert!(newer.join().unwrap().contains("the session started a turn"));
}

#[test]
fn garbage_payloads_are_refused_and_change_nothing() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let post = |body: &str| {
        let hs = vec![
            (
                "Authorization".to_owned(),
                format!("Bearer {}", d.daemon().worker_token().as_str()),
            ),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        d.raw("POST", "/hooks/claude-code", &d.host(), &hs, body)
    };
    for body in [
        "",
        "not json",
        "{\"hook_event_name\":",
        "[]",
        r#"{"session_id":"s-1"}"#,
        r#"{"session_id":"s-1","hook_event_name":"Reboot","cwd":"/tmp"}"#,
        r#"{"session_id":"","hook_event_name":"Stop","cwd":"/tmp"}"#,
        r#"{"session_id":"s-1","hook_event_name":"SessionStart","cwd":"relative/dir"}"#,
        r#"{"session_id":"s-1","hook_event_name":"SessionStart"}"#,
    ] {
        let (status, out) = post(body);
        assert_eq!(status, 400, "{body} → {out}");
    }
    let (status, _) = h.send("s-9", "Stop", json!({}), &[]);
    assert_eq!(status, 200, "a well-formed hook still works");
    let (_, v) = d.call("GET", "/api/sessions", None);
    assert_eq!(
        v["sessions"].as_array().unwrap().len(),
        1,
        "only the good one made a session: {v}"
    );
}

#[test]
fn an_idle_session_without_a_waiter_gets_its_task_pasted_into_tmux() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let tmux_pane = Pane::start(&d.data_dir);
    // The session is the pane's own process: a pane of anyone else's is not pasted into.
    let (sock, pane, pid) = (
        tmux_pane.socket.clone(),
        tmux_pane.pane.clone(),
        tmux_pane.pid.clone(),
    );
    let tmux = |args: &[&str]| tmux_pane.tmux(args);
    let reach = [
        ("X-Taskkeeper-Tmux-Pane", pane.clone()),
        ("X-Taskkeeper-Tmux", format!("{sock},1,0")),
        ("X-Taskkeeper-Pid", pid),
    ];
    let (status, _) = h.send("s-1", "SessionStart", json!({"source": "startup"}), &reach);
    assert_eq!(status, 200);
    let id = h.new_task("work", "Add a --json flag");

    let mut screen = String::new();
    for _ in 0..100 {
        screen = tmux(&["capture-pane", "-p", "-t", &pane]);
        if screen.contains("Add a --json flag") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        screen.contains(&format!("«Taskkeeper» Task {id} from owner")),
        "{screen}"
    );
    assert!(
        h.task(&id)["deliveredAt"].is_null(),
        "not delivered until a turn starts"
    );
    // The agent takes the prompt: its turn starts.
    h.ok("s-1", "UserPromptSubmit", json!({"prompt": screen}));
    let mut delivered = Value::Null;
    for _ in 0..100 {
        delivered = h.task(&id)["deliveredAt"].clone();
        if delivered.is_string() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(delivered.is_string(), "confirmed by the turn, then claimed");
}

/// A session Taskkeeper launched headless tells its activity through its own event stream
/// and takes its tasks on stdin. The hooks the owner installed run in it too: they change
/// nothing, except that our tools' calls get the session filled in; no Stop handover and no
/// waiter answer for it. A restart of the daemon ends it (its stdin was the old daemon's).
#[test]
fn a_launched_sessions_hooks_only_fill_in_the_session_and_a_restart_ends_it() {
    let mut d = TestDaemon::start();
    let h = Hooks::new(&d);
    let (status, _) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": h.cwd})),
    );
    assert_eq!(status, 201);
    let mut s = taskkeeper_core::Session::new(
        "s-1".into(),
        "web".parse().unwrap(),
        taskkeeper_core::AgentKind::ClaudeCode,
        h.cwd.clone().into(),
        taskkeeper_core::Timestamp::from_millis(1_700_000_000_000),
    );
    s.reach.headless = true;
    d.daemon().store().put_session(s).unwrap();
    let id = h.new_task("web", "Fix the login page");

    for (event, extra) in [
        ("SessionStart", json!({"source": "startup"})),
        ("UserPromptSubmit", json!({"prompt": "hello"})),
        (
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        ),
        ("Stop", json!({"last_assistant_message": "Done?"})),
    ] {
        assert_eq!(h.ok("s-1", event, extra), "", "{event} prints nothing");
    }
    let session = h.session("s-1");
    assert_eq!(
        (session["activity"].as_str(), session["headless"].as_bool()),
        (Some("idle"), Some(true)),
        "{session}"
    );
    assert!(h.task(&id)["deliveredAt"].is_null(), "no handover");
    assert!(
        h.task(&id)["lastWords"].is_null(),
        "no last words from a hook"
    );
    let out = h.ok(
        "s-1",
        "PreToolUse",
        json!({"tool_name": "mcp__taskkeeper__task_update",
               "tool_input": {"task_id": id, "status": "done", "text": "x"}}),
    );
    let out: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        out["hookSpecificOutput"]["updatedInput"]["session_id"], "s-1",
        "{out}"
    );
    let waiter = h.waiter().join().unwrap();
    assert!(waiter.contains(r#""action":"leave""#), "{waiter}");
    // Nor does a generic report speak for it; its reach stays as it was.
    let (status, body) = d.raw(
        "POST",
        "/hooks/generic",
        &d.host(),
        &[
            ("Authorization".to_owned(), format!("Bearer {TOKEN}")),
            ("Content-Type".to_owned(), "application/json".to_owned()),
            ("X-Taskkeeper-Tmux-Pane".to_owned(), "%9".to_owned()),
        ],
        &json!({"session": "s-1", "event": "turn-started", "cwd": h.cwd}).to_string(),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("launched by Taskkeeper"), "{body}");
    let session = h.session("s-1");
    assert_eq!(
        (session["activity"].as_str(), &session["tmuxPane"]),
        (Some("idle"), &Value::Null),
        "{session}"
    );

    d.restart();
    let h = Hooks::new(&d);
    assert_eq!(h.session("s-1")["activity"], "ended");
}

/// The attacks of an outside asker with nothing but its own token: reporting a made-up
/// session with a tmux pane, taking another asker's queued task with a Stop, creating desks
/// through the desk hint, and ending the owner's live session. Every one is refused (403)
/// before anything is taken in, and the real session still gets its task.
#[test]
fn an_asker_token_opens_no_hook_route_and_changes_nothing() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    // The owner's real session at desk `work`, idle after its first turn.
    h.ok("s-real", "SessionStart", json!({"source": "startup"}));
    let (_, owner_view) = d.call("GET", "/api/sessions", None);
    let (code, mallory) = d.call("POST", "/api/askers", Some(&json!({"name": "mallory"})));
    assert_eq!(code, 201, "{mallory}");
    let mallory = mallory["token"].as_str().unwrap().to_owned();
    let (_, bob) = d.call("POST", "/api/askers", Some(&json!({"name": "bob"})));
    let bob = bob["token"].as_str().unwrap().to_owned();
    let sent = d.rpc(
        "/a2a/work",
        &bob,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "m-1", "role": "ROLE_USER",
                "parts": [{"text": "Bob's private request"}]},
            "configuration": {"returnImmediately": true}}}),
    );
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let before = h.task(&id);
    let desks_before = d.call("GET", "/api/desks", None).1;

    let as_mallory = |path: &str, body: Value, extra: &[(&str, &str)]| {
        let mut hs = vec![
            ("Authorization".to_owned(), format!("Bearer {mallory}")),
            ("Content-Type".to_owned(), "application/json".to_owned()),
        ];
        hs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        d.raw("POST", path, &d.host(), &hs, &body.to_string())
    };
    let hook = |session: &str, event: &str| {
        json!({"session_id": session, "hook_event_name": event, "cwd": h.cwd,
            "last_assistant_message": "ok", "background_tasks": []})
    };
    let tmux = [
        ("X-Taskkeeper-Tmux", "/tmp/tmux-0/default,1,0"),
        ("X-Taskkeeper-Tmux-Pane", "%0"),
        ("X-Taskkeeper-Desk", "evil-desk"),
    ];
    let codex_home = [
        ("X-Taskkeeper-Codex-Home", "/tmp/mallory"),
        ("X-Taskkeeper-Tmux", "/tmp/tmux-0/default,1,0"),
        ("X-Taskkeeper-Tmux-Pane", "%0"),
        ("X-Taskkeeper-Desk", "evil-desk"),
    ];
    for (path, body, extra) in [
        (
            "/hooks/claude-code",
            hook("s-evil", "SessionStart"),
            &tmux[..],
        ),
        ("/hooks/claude-code", hook("s-evil", "Stop"), &tmux[..]),
        ("/hooks/claude-code", hook("s-real", "Stop"), &[][..]),
        ("/hooks/claude-code", hook("s-real", "SessionEnd"), &[][..]),
        ("/hooks/claude-code/wait", hook("s-evil", "Stop"), &[][..]),
        (
            "/hooks/generic",
            json!({"session": "s-evil", "event": "started", "cwd": h.cwd}),
            &tmux[..],
        ),
        // Codex's and Gemini's intakes too; a Codex home that names the asker's own socket
        // would be a way to make the daemon connect where the asker says.
        ("/hooks/codex", hook("s-evil", "Stop"), &codex_home[..]),
        (
            "/hooks/codex",
            hook("s-real", "SessionStart"),
            &codex_home[..],
        ),
        ("/hooks/gemini", hook("s-evil", "AfterAgent"), &tmux[..]),
    ] {
        let (status, text) = as_mallory(path, body, extra);
        assert_eq!(status, 403, "{path}: {text}");
        assert!(
            text.contains("askers use /a2a") && !text.contains("Bob's private request"),
            "{path}: {text}"
        );
    }
    assert_eq!(
        h.task(&id),
        before,
        "the task was neither taken nor changed"
    );
    assert!(h.session("s-evil").is_null(), "no session was made");
    assert_eq!(d.call("GET", "/api/sessions", None).1, owner_view);
    assert_eq!(d.call("GET", "/api/desks", None).1, desks_before);

    // The real session's next Stop is handed the task.
    let out = h.ok(
        "s-real",
        "Stop",
        json!({"last_assistant_message": "ready", "background_tasks": []}),
    );
    assert!(out.contains("Bob's private request"), "{out}");
}

/// A waiter wakes for its own session and desk only: twenty tasks given to another desk
/// wake it not once; the task given to its own desk wakes it, and it delivers.
#[test]
fn a_waiter_wakes_only_for_its_own_desk() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    d.with_desk("other");
    let waiter = h.waiter();
    let delivery = d.daemon().delivery();
    crate::support::until("the waiter", || {
        delivery
            .has_waiter(&taskkeeper_core::SessionId::from("s-1"))
            .then_some(())
    });
    let before = delivery.waiter_wakes();
    for i in 0..20 {
        h.new_task("other", &format!("Elsewhere {i}"));
    }
    let mine = h.new_task("work", "Mine");
    let answer = waiter.join().unwrap();
    assert!(answer.contains(r#""action":"deliver""#), "{answer}");
    assert!(
        answer.contains(&format!("Task {mine} from owner")),
        "{answer}"
    );
    let wakes = delivery.waiter_wakes() - before;
    assert!(
        wakes <= 1,
        "the waiter woke {wakes} times for one change of its desk"
    );
}

/// The waiting-on-owner mark follows the session's activity, whatever hook moved it: a
/// session that ends (or whose turn fails) at a permission prompt leaves its desk's task
/// waiting on nobody. (The adapters used to clear the mark on some hooks only, so a
/// SessionEnd at a prompt left the task marked for good.)
#[test]
fn a_session_that_ends_at_a_permission_prompt_leaves_its_task_waiting_on_nobody() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    for (session, last) in [("s-1", "SessionEnd"), ("s-2", "StopFailure")] {
        h.ok(session, "SessionStart", json!({"source": "startup"}));
        h.ok(session, "UserPromptSubmit", json!({"prompt": "go"}));
        let id = h.new_task("work", "Add a --json flag");
        h.ok(
            session,
            "PermissionRequest",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}),
        );
        assert_eq!(h.task(&id)["waitingOnOwner"], true);
        h.ok(
            session,
            last,
            json!({"reason": "exit", "error": "server_error"}),
        );
        assert_eq!(h.task(&id)["waitingOnOwner"], false, "after {last}");
        let (status, _) = d.call("POST", &format!("/api/tasks/{id}/cancel"), Some(&json!({})));
        assert_eq!(status, 200);
    }
}
