//! Delivery through the desk's configured command (for agents Taskkeeper has no other way
//! into), the fallback from the tmux paste to it, and the owner's launch and stop refusals.
//! The commands are real shell commands run by the daemon; what they received is read back
//! from the files they wrote.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::hooks::Hooks;
use crate::support::{TestDaemon, read, until};

fn lines(path: &Path) -> Vec<String> {
    read(path)
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

/// A generic desk `bot` in the data directory, reached through `command`; its view.
fn bot_desk(d: &TestDaemon, command: &str) -> serde_json::Value {
    let (status, desk) = d.call(
        "POST",
        "/api/desks",
        Some(
            &json!({"name": "bot", "dir": d.data_dir, "agent": "generic",
                     "deliverCommand": command}),
        ),
    );
    assert_eq!(status, 201, "{desk}");
    desk
}

/// `Some` once the task is marked delivered.
fn delivered(d: &TestDaemon, id: &str) -> Option<()> {
    (!d.task(id)["deliveredAt"].is_null()).then_some(())
}

/// A desk reached only through its command: each task is delivered once, in queue order, with
/// the task's header; a cancel notice follows the same way.
#[test]
fn a_desk_reached_only_by_its_command_gets_each_task_once() {
    let d = TestDaemon::start();
    let out = d.data_dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let command = format!(
        r#"cat >> {o}/texts; echo "$TASKKEEPER_DESK $TASKKEEPER_TASKS [$TASKKEEPER_SESSION]" >> {o}/log"#,
        o = out.display()
    );
    let desk = bot_desk(&d, &command);
    assert_eq!(desk["deliverCommand"], command);

    let first = d.add_task("bot", "Rotate the logs");
    let second = d.add_task("bot", "Then archive them");
    let log = out.join("log");
    until("the first delivery", || {
        (lines(&log).len() == 1).then_some(())
    });
    assert_eq!(lines(&log), [format!("bot {first} []")]);
    let texts = read(&out.join("texts")).unwrap();
    assert!(
        texts.starts_with(&format!(
            "«Taskkeeper» Task {first} from owner at desk bot:"
        )),
        "{texts}"
    );
    assert!(texts.contains("Rotate the logs") && texts.contains("task_update"));
    until("the first task marked delivered", || delivered(&d, &first));
    assert!(
        d.task(&second)["deliveredAt"].is_null(),
        "the second waits its turn in the queue"
    );

    // The first ends; the desk takes the second; then the second is canceled.
    let (status, _) = d.call(
        "POST",
        &format!("/api/tasks/{first}/update"),
        Some(&json!({"status": "done", "text": "Rotated"})),
    );
    assert_eq!(status, 200);
    until("the second delivery", || {
        (lines(&log).len() == 2).then_some(())
    });
    until("the second task marked delivered", || {
        delivered(&d, &second)
    });
    let (status, _) = d.call(
        "POST",
        &format!("/api/tasks/{second}/cancel"),
        Some(&json!({"reason": "Not needed after all"})),
    );
    assert_eq!(status, 200);
    until("the cancel notice", || {
        (lines(&log).len() == 3).then_some(())
    });
    assert_eq!(
        lines(&log),
        [
            format!("bot {first} []"),
            format!("bot {second} []"),
            format!("bot {second} []")
        ]
    );
    let texts = read(&out.join("texts")).unwrap();
    assert!(
        texts.contains(&format!(
            "«Taskkeeper» Task {second} from owner was canceled, the reason given: Not needed after all"
        )),
        "{texts}"
    );
    // Nothing more to tell: the next run is the next task's alone, not a repeat (runs go
    // one at a time per desk, and an unclaimed notice would ride along with it).
    let third = d.add_task("bot", "Then compress them");
    until("the third delivery", || {
        (lines(&log).len() >= 4).then_some(())
    });
    assert_eq!(lines(&log)[3..], [format!("bot {third} []")]);
}

/// A command that fails delivers nothing and changes nothing; the owner fixes the command
/// and the same task goes through. The owner's refusals change nothing either.
#[test]
fn a_failing_command_changes_nothing_until_it_is_fixed() {
    let d = TestDaemon::start();
    let out = d.data_dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let failing = format!(
        "echo tried >> {}/tries; echo 'inbox full' >&2; exit 3",
        out.display()
    );
    bot_desk(&d, &failing);
    let id = d.add_task("bot", "Rotate the logs");
    until("the command to run", || read(&out.join("tries")));
    // What proves the failure claimed nothing is below: the fixed command gets this same task
    // (a claimed task is never sent again).
    let t = d.task(&id);
    assert!(t["deliveredAt"].is_null(), "{t}");
    assert_eq!(t["state"], "working");

    // Refusals.
    for (body, status, needle) in [
        (json!({}), 400, "nothing to change"),
        (json!({"deliverCommand": "a\nb"}), 400, "one line"),
        (json!({"deliverCommand": 3}), 400, "deliverCommand"),
        (json!({"command": "x"}), 400, "command"),
    ] {
        let (got, answer) = d.call("PATCH", "/api/desks/bot", Some(&body));
        assert_eq!(got, status, "{body}: {answer}");
        assert!(answer.to_string().contains(needle), "{body}: {answer}");
    }
    let (got, answer) = d.call(
        "PATCH",
        "/api/desks/nope",
        Some(&json!({"deliverCommand": "true"})),
    );
    assert_eq!(got, 404, "{answer}");
    let (_, desks) = d.call("GET", "/api/desks", None);
    assert_eq!(desks["desks"][0]["deliverCommand"], failing.as_str());

    let fixed = format!("cat > {}/delivered", out.display());
    let (got, desk) = d.call(
        "PATCH",
        "/api/desks/bot",
        Some(&json!({"deliverCommand": fixed})),
    );
    assert_eq!(got, 200, "{desk}");
    let text = until("the fixed command to deliver", || {
        read(&out.join("delivered"))
    });
    assert!(text.contains(&id), "{text}");
    until("the task marked delivered", || delivered(&d, &id));

    // Removing the command: null.
    let (got, desk) = d.call(
        "PATCH",
        "/api/desks/bot",
        Some(&json!({"deliverCommand": null})),
    );
    assert_eq!(got, 200, "{desk}");
    assert!(desk["deliverCommand"].is_null(), "{desk}");
}

/// An idle session whose tmux pane cannot be pasted into falls back to the next method in
/// the ranked list: the desk's command, which learns the session.
#[test]
fn a_paste_that_fails_falls_back_to_the_command() {
    let d = TestDaemon::start();
    let h = Hooks::new(&d);
    let work = Path::new(&h.cwd).to_owned();
    std::fs::create_dir_all(&work).unwrap();
    let out = d.data_dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let command = format!(
        r#"cat > {o}/text; echo "$TASKKEEPER_SESSION" > {o}/session"#,
        o = out.display()
    );
    let (status, _) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": work, "deliverCommand": command})),
    );
    assert_eq!(status, 201);
    // The session reports a pane on a tmux server that does not exist.
    let missing = d.data_dir.join("no-such-tmux-socket");
    let (status, _) = h.send(
        "s-1",
        "SessionStart",
        json!({"source": "startup"}),
        &[
            ("x-taskkeeper-tmux-pane", "%1".to_owned()),
            ("x-taskkeeper-tmux", format!("{},1,0", missing.display())),
        ],
    );
    assert_eq!(status, 200);
    assert_eq!(h.session("s-1")["tmuxPane"], "%1");
    let id = d.add_task("web", "Fix the login page");
    let session = until("the command to deliver", || read(&out.join("session")));
    assert_eq!(session.trim(), "s-1");
    let text = until("the text", || read(&out.join("text")));
    assert!(text.contains(&format!("Task {id} from owner")), "{text}");
    until("the task marked delivered", || delivered(&d, &id));
}

/// Launching needs a claude-code, codex or gemini desk with a directory and its agent's
/// binary that starts; stopping needs a session this daemon launched. Each refusal says
/// which, and changes nothing.
#[test]
fn launch_and_stop_refuse_what_they_cannot_do() {
    let d = TestDaemon::start_configured(|c| {
        c.claude = "/nonexistent/bin/claude".into();
        c.codex = "/nonexistent/bin/codex".into();
        c.gemini = "/nonexistent/bin/gemini".into();
    });
    d.with_desk("bot");
    let (status, _) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "gone", "dir": d.data_dir.join("missing")})),
    );
    assert_eq!(status, 201);
    let (status, _) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": d.data_dir})),
    );
    assert_eq!(status, 201);
    for (name, agent) in [("cx", "codex"), ("gm", "gemini")] {
        let (status, _) = d.call(
            "POST",
            "/api/desks",
            Some(&json!({"name": name, "dir": d.data_dir, "agent": agent})),
        );
        assert_eq!(status, 201);
    }
    for (path, status, needle) in [
        (
            "/api/desks/bot/launch",
            400,
            "launches headless sessions for claude-code, codex and gemini desks",
        ),
        (
            "/api/desks/cx/launch",
            500,
            "install Codex CLI, or point TASKKEEPER_CODEX",
        ),
        (
            "/api/desks/gm/launch",
            500,
            "install Gemini CLI, or point TASKKEEPER_GEMINI",
        ),
        ("/api/desks/nope/launch", 404, "no desk named nope"),
        ("/api/desks/gone/launch", 400, "does not exist"),
        ("/api/desks/web/launch", 500, "TASKKEEPER_CLAUDE"),
        (
            "/api/sessions/s-9/stop",
            404,
            "not launched by this Taskkeeper",
        ),
    ] {
        let (got, answer) = d.call("POST", path, Some(&json!({})));
        assert_eq!(got, status, "{path}: {answer}");
        assert!(answer.to_string().contains(needle), "{path}: {answer}");
    }
    let (_, sessions) = d.call("GET", "/api/sessions", None);
    assert_eq!(sessions["sessions"], json!([]), "no session was stored");
    assert!(
        std::fs::read_dir(d.data_dir.join("launched"))
            .map(|r| r.count() == 0)
            .unwrap_or(true),
        "no MCP configuration was left behind"
    );
}

/// Tasks given one after another, each ended as soon as it arrived, all go through: a task
/// that starts while the delivery loop is busy with the one before is not missed (the
/// benchmark found the loop sleeping through such a change).
#[test]
fn back_to_back_tasks_are_each_delivered() {
    let d = TestDaemon::start();
    let out = d.data_dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let command = format!(
        r#"cat > /dev/null; echo "$TASKKEEPER_TASKS" >> {}/log"#,
        out.display()
    );
    bot_desk(&d, &command);
    let log = out.join("log");
    let mut ids = Vec::new();
    for i in 0..30 {
        let id = d.add_task("bot", &format!("Step {i}"));
        until(&format!("task {i} delivered"), || {
            (lines(&log).last() == Some(&id)).then_some(())
        });
        until("marked delivered", || delivered(&d, &id));
        let (status, _) = d.call(
            "POST",
            &format!("/api/tasks/{id}/update"),
            Some(&json!({"status": "done", "text": "ok"})),
        );
        assert_eq!(status, 200);
        ids.push(id);
    }
    assert_eq!(lines(&log), ids);
}

/// One push at a time per target: a follow-up that arrives while the task's first delivery
/// is still running waits for it, and goes next with the new words, never alongside.
#[test]
fn a_follow_up_during_a_slow_delivery_goes_after_it() {
    let d = TestDaemon::start();
    let out = d.data_dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // Started, then 0.8 s later the text and the end: two runs at once would interleave.
    let command = format!(
        r#"echo start >> {o}/log; sleep 0.8; cat >> {o}/texts; echo end >> {o}/log"#,
        o = out.display()
    );
    bot_desk(&d, &command);
    let id = d.add_task("bot", "Rotate the logs");
    let log = out.join("log");
    until("the first delivery to start", || {
        (lines(&log) == ["start"]).then_some(())
    });
    let answer = d.rpc(
        "/a2a/bot",
        crate::support::TOKEN,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "m-more", "role": "ROLE_USER", "taskId": id,
                        "parts": [{"text": "Also the error log, please"}]},
            "configuration": {"returnImmediately": true}}}),
    );
    assert!(answer.get("result").is_some(), "{answer}");
    until("the second delivery to end", || {
        (lines(&log).len() == 4).then_some(())
    });
    assert_eq!(lines(&log), ["start", "end", "start", "end"]);
    let texts = read(&out.join("texts")).unwrap();
    assert_eq!(texts.matches(&format!("Task {id} from owner")).count(), 2);
    assert!(
        texts
            .split("«Taskkeeper» Task ")
            .last()
            .unwrap()
            .contains("Also the error log, please"),
        "the second delivery carries the follow-up: {texts}"
    );
    until("marked delivered", || delivered(&d, &id));
}

/// What the daemon does with a launched session's permission request, with a stand-in for
/// `claude -p` that asks once and records what it is told (the real Claude Code does the
/// same in the CLI's tests): the owner hears it as a notice, the session shows it, the
/// desk's task is marked, and the answer reaches the process's stdin as a control response.
#[cfg(unix)]
#[test]
fn a_permission_request_is_a_notice_and_the_answer_reaches_the_session() {
    use std::os::unix::fs::PermissionsExt as _;
    let scratch = tempfile::tempdir().unwrap();
    let answers = scratch.path().join("answers");
    let stand_in = scratch.path().join("claude");
    std::fs::write(
        &stand_in,
        format!(
            "#!/bin/sh\n\
             printf '%s\\n' '{{\"type\":\"system\",\"subtype\":\"session_state_changed\",\"state\":\"requires_action\"}}'\n\
             printf '%s\\n' '{{\"type\":\"control_request\",\"request_id\":\"r-1\",\"request\":{{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":{{\"command\":\"touch x\"}},\"description\":\"touch x\"}}}}'\n\
             exec cat > {}\n",
            answers.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&stand_in, std::fs::Permissions::from_mode(0o755)).unwrap();
    let d = TestDaemon::start_configured(|c| c.claude = stand_in.clone());
    let (status, _) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": d.data_dir})),
    );
    assert_eq!(status, 201);
    let fix = d.add_task("web", "Fix the login page");
    let notices = crate::watchdog::owner_events(&d, "notice");
    let (status, session) = d.call("POST", "/api/desks/web/launch", Some(&json!({})));
    assert_eq!(status, 201, "{session}");
    let id = session["id"].as_str().unwrap().to_owned();

    let notice = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        notice,
        json!({"kind": "permission-asked", "session": id, "desk": "web", "tool": "Bash",
               "description": "touch x", "requestId": "r-1"})
    );
    let (_, list) = d.call("GET", "/api/sessions", None);
    let s = &list["sessions"][0];
    assert_eq!(
        (
            s["activity"].as_str(),
            s["permission"]["requestId"].as_str()
        ),
        (Some("waiting-on-owner"), Some("r-1")),
        "{s}"
    );
    assert_eq!(d.task(&fix)["waitingOnOwner"], true);

    // Refusals change nothing: a malformed answer, a session that was not launched here.
    for (path, body, code) in [
        (
            format!("/api/sessions/{id}/permission"),
            json!({"allow": "yes"}),
            400,
        ),
        (format!("/api/sessions/{id}/permission"), json!({}), 400),
        (
            "/api/sessions/nope/permission".to_owned(),
            json!({"allow": true}),
            404,
        ),
    ] {
        let (got, answer) = d.call("POST", &path, Some(&body));
        assert_eq!(got, code, "{path} {body}: {answer}");
    }
    let (_, list) = d.call("GET", "/api/sessions", None);
    assert_eq!(list["sessions"][0]["permission"]["requestId"], "r-1");
    assert!(
        !read(&answers)
            .unwrap_or_default()
            .contains("control_response"),
        "nothing was answered"
    );

    let (status, after) = d.call(
        "POST",
        &format!("/api/sessions/{id}/permission"),
        Some(&json!({"allow": true, "requestId": "r-1"})),
    );
    assert_eq!(status, 200, "{after}");
    assert!(after["permission"].is_null(), "{after}");
    assert_eq!(d.task(&fix)["waitingOnOwner"], false);
    let line = until("the answer on the session's stdin", || {
        read(&answers).filter(|a| a.contains("control_response"))
    });
    let answer: serde_json::Value = serde_json::from_str(
        line.lines()
            .find(|l| l.contains("control_response"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(answer["response"]["request_id"], "r-1");
    assert_eq!(answer["response"]["response"]["behavior"], "allow");
    assert_eq!(
        answer["response"]["response"]["updatedInput"]["command"],
        "touch x"
    );
    let (status, _) = d.call(
        "POST",
        &format!("/api/sessions/{id}/stop"),
        Some(&json!({})),
    );
    assert_eq!(status, 202);
}
