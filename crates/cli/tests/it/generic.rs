//! An agent without a Taskkeeper adapter: it reports its session with `taskkeeper report`
//! from its own hooks, and the desk's command is its way in. Together they give it the whole
//! product: its task arrives, the watchdog sees it go quiet, and the reminder arrives the
//! same way, quoting its last words.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

use crate::support::{Served, TOKEN, bin, request, until};

/// `taskkeeper ARGS` in `dir`, as the agent's hook would run it.
fn run_in(d: &Served, dir: &Path, args: &[&str], session: Option<&str>) -> Output {
    let mut c = Command::new(bin());
    c.args(args)
        .current_dir(dir)
        .env("TASKKEEPER_URL", d.url())
        .env("TASKKEEPER_TOKEN", TOKEN)
        .env("TASKKEEPER_DATA_DIR", &d.data_dir)
        .env_remove("TASKKEEPER_SESSION")
        .env_remove("TASKKEEPER_DESK")
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .stdin(Stdio::null());
    if let Some(s) = session {
        c.env("TASKKEEPER_SESSION", s);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn get(d: &Served, path: &str) -> Value {
    let (status, body) = request(d.port, "GET", path, "").unwrap();
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The generic desk `bot` in `work`, delivering through `command`; what `desk add` said.
fn command_desk(d: &Served, work: &Path, command: &str) -> Output {
    let added = d.cli(&[
        "desk",
        "add",
        "bot",
        "--dir",
        work.to_str().unwrap(),
        "--agent",
        "generic",
        "--deliver-command",
        command,
    ]);
    assert!(added.status.success(), "{}", text(&added));
    added
}

#[test]
fn a_reporting_agent_is_given_its_task_and_reminded_through_its_command() {
    let root = tempfile::tempdir().unwrap();
    let d = Served::start(&root.path().join("data"));
    let (work, out) = (root.path().join("bot"), root.path().join("out"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let command = format!(
        r#"cat >> {o}/texts; echo "$TASKKEEPER_SESSION" >> {o}/log"#,
        o = out.display()
    );
    let added = command_desk(&d, &work, &command);
    assert!(text(&added).contains("delivers by:"), "{}", text(&added));
    for (k, v) in [
        ("reminders.first_after.default", "1s"),
        ("reminders.ladder", "1s,1s,5s,10s"),
    ] {
        assert!(d.cli(&["settings", "set", k, v]).status.success());
    }

    let report = |args: &[&str]| {
        let mut all = vec!["report"];
        all.extend_from_slice(args);
        let o = run_in(&d, &work, &all, Some("g-1"));
        assert!(o.status.success(), "report {args:?}: {}", text(&o));
        assert_eq!(text(&o), "", "quiet on success");
    };
    report(&["started"]);
    let session = until("the session", || {
        get(&d, "/api/sessions")["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["id"] == "g-1")
            .cloned()
    });
    assert_eq!(
        (session["desk"].as_str(), session["agent"].as_str()),
        (Some("bot"), Some("generic")),
        "attached by its directory: {session}"
    );

    let task = d.cli(&["task", "add", "bot", "Rotate the logs"]);
    assert!(task.status.success(), "{}", text(&task));
    let id = String::from_utf8_lossy(&task.stdout).trim().to_owned();
    let texts = out.join("texts");
    until("the task through the command", || {
        std::fs::read_to_string(&texts)
            .ok()
            .filter(|t| t.contains(&id))
    });
    // The command writes its log line after it has read the text: wait for it too.
    let log = until("the command's log line", || {
        std::fs::read_to_string(out.join("log"))
            .ok()
            .filter(|l| l.ends_with('\n'))
    });
    assert_eq!(log.trim(), "g-1");

    // The agent works on it, then stops without ending it.
    report(&["turn-started"]);
    report(&["turn-ended", "--words", "Rotating the access log next."]);
    let reminded = until("the reminder through the command", || {
        std::fs::read_to_string(&texts)
            .ok()
            .filter(|t| t.contains("Reminder #1"))
    });
    assert!(
        reminded.contains(&format!("Task {id} from owner"))
            && reminded.contains("Your last words:\n  │ Rotating the access log next.\n"),
        "{reminded}"
    );
    report(&["turn-started"]);
    let done = d.cli(&["task", "update", &id, "done", "Rotated."]);
    assert!(done.status.success(), "{}", text(&done));
    report(&["turn-ended"]);
    report(&["ended"]);
    let session = get(&d, "/api/sessions")["sessions"][0].clone();
    assert_eq!(session["activity"], "ended", "{session}");
}

#[test]
fn bad_reports_are_refused_with_the_reason_and_change_nothing() {
    let root = tempfile::tempdir().unwrap();
    let d = Served::start(&root.path().join("data"));
    let work = root.path().join("bot");
    std::fs::create_dir_all(&work).unwrap();
    assert!(
        d.cli(&[
            "desk",
            "add",
            "bot",
            "--dir",
            work.to_str().unwrap(),
            "--agent",
            "generic"
        ])
        .status
        .success()
    );
    for (args, session, needle) in [
        (
            vec!["report", "finished"],
            Some("g-1"),
            "invalid value 'finished'",
        ),
        (vec!["report", "started"], None, "--session"),
        (
            vec!["report", "started", "--agent", "cursor"],
            Some("g-1"),
            "unknown agent kind",
        ),
        (
            vec!["report", "started", "--agent", "claude-code"],
            Some("g-1"),
            "report through their hooks",
        ),
    ] {
        let o = run_in(&d, &work, &args, session);
        assert!(!o.status.success(), "{args:?} was accepted");
        assert!(text(&o).contains(needle), "{args:?}: {}", text(&o));
    }
    // Outside every desk's directory, with desks created only on request.
    assert!(
        d.cli(&["settings", "set", "sessions.create_desks", "false"])
            .status
            .success()
    );
    let o = run_in(&d, root.path(), &["report", "started"], Some("g-2"));
    assert!(!o.status.success());
    assert!(text(&o).contains("desk add"), "{}", text(&o));
    // Garbage over HTTP is a 400 too.
    let (status, body) = request(d.port, "POST", "/hooks/generic", "{\"session\": 3}").unwrap();
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        get(&d, "/api/sessions")["sessions"],
        serde_json::json!([]),
        "nothing was attached"
    );
}

/// The daemon runs with the owner's token in its environment (and another token of ours):
/// the desk's command, whatever the owner configured and fed an asker's words, gets neither;
/// the rest of the environment and the variables meant for it still reach it. The daemon is
/// the real binary as a child process, so its environment is its own and no test shares it.
#[test]
fn a_desk_command_gets_none_of_the_daemons_tokens() {
    let root = tempfile::tempdir().unwrap();
    let env: Vec<(String, String)> = [
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("HOME", root.path().display().to_string()),
        (
            "TASKKEEPER_ASKER_TOKEN_CI",
            "second-secret-0123456789".to_owned(),
        ),
        ("TASKKEEPER_KEEP_ME", "visible".to_owned()),
    ]
    .map(|(k, v)| (k.to_owned(), v))
    .into();
    let d = Served::start_in(&root.path().join("data"), &env);
    let (work, out) = (root.path().join("bot"), root.path().join("out"));
    std::fs::create_dir_all(&work).unwrap();
    std::fs::create_dir_all(&out).unwrap();
    let command = format!("env > {}/env.tmp && mv {0}/env.tmp {0}/env", out.display());
    command_desk(&d, &work, &command);
    let task = d.cli(&["task", "add", "bot", "Rotate the logs"]);
    assert!(task.status.success(), "{}", text(&task));
    let id = String::from_utf8_lossy(&task.stdout).trim().to_owned();

    let seen = until("the command's environment", || {
        std::fs::read_to_string(out.join("env")).ok()
    });
    let names: Vec<&str> = seen
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(!seen.contains(TOKEN), "the owner's token leaked: {seen}");
    assert!(!seen.contains("second-secret"), "a token leaked: {seen}");
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("TASKKEEPER_") && n.contains("TOKEN")),
        "{names:?}"
    );
    for kept in [
        "PATH",
        "HOME",
        "TASKKEEPER_KEEP_ME",
        "TASKKEEPER_DESK",
        "TASKKEEPER_TASKS",
    ] {
        assert!(names.contains(&kept), "{kept} missing: {names:?}");
    }
    assert!(seen.contains(&format!("TASKKEEPER_TASKS={id}")), "{seen}");
}

/// The CLI prints the owner API's label (`core::Task::label`), the words the window shows:
/// a task whose ladder ran out is `stalled` in the task list, its detail and the digest's
/// Stalled section; one the worker blocked on its asker is `blocked`.
#[test]
fn a_stalled_task_reads_stalled_in_the_list_the_detail_and_the_digest() {
    let root = tempfile::tempdir().unwrap();
    let d = Served::start(&root.path().join("data"));
    let work = root.path().join("bot");
    std::fs::create_dir_all(&work).unwrap();
    command_desk(&d, &work, "cat > /dev/null");
    for (k, v) in [
        ("reminders.first_after.default", "1s"),
        ("reminders.ladder", "1s"),
        ("reminders.stall_after", "1s"),
    ] {
        assert!(d.cli(&["settings", "set", k, v]).status.success());
    }
    let report = |args: &[&str]| {
        let mut all = vec!["report"];
        all.extend_from_slice(args);
        let o = run_in(&d, &work, &all, Some("g-1"));
        assert!(o.status.success(), "report {args:?}: {}", text(&o));
    };
    report(&["started"]);
    let out = d.cli(&["task", "add", "bot", "Rotate the logs"]);
    let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    report(&["turn-started"]);
    report(&["turn-ended", "--words", "Rotating."]);

    let line = until("the task listed as stalled", || {
        let list = String::from_utf8_lossy(&d.cli(&["task", "list"]).stdout).into_owned();
        list.lines()
            .find(|l| l.starts_with(&id) && l.contains(" stalled "))
            .map(str::to_owned)
    });
    assert!(line.contains("Rotate the logs"), "{line}");
    let listed: Value = serde_json::from_slice(&d.cli(&["task", "list", "--json"]).stdout).unwrap();
    assert_eq!(
        (
            listed["tasks"][0]["label"].as_str(),
            listed["tasks"][0]["state"].as_str()
        ),
        (Some("stalled"), Some("working")),
        "the API's label, which the CLI prints: {listed}"
    );
    let detail = text(&d.cli(&["task", "get", &id]));
    assert!(detail.contains("state    stalled\n"), "{detail}");
    let digest = text(&d.cli(&["digest", "--peek"]));
    assert!(
        digest.contains(&format!(
            "Stalled: 1\n  {id}  bot  stalled  Rotate the logs\n"
        )),
        "{digest}"
    );

    let out = d.cli(&["task", "update", &id, "blocked", "Which logs?"]);
    assert_eq!(text(&out), format!("{id} is blocked\n"));
}

/// A way in that did not deliver is shown where the owner looks: `taskkeeper status` names
/// the session's problem (the method and why) until something is delivered to it.
#[test]
fn status_says_why_a_sessions_task_waits() {
    let root = tempfile::tempdir().unwrap();
    let d = Served::start(&root.path().join("data"));
    let work = root.path().join("bot");
    std::fs::create_dir_all(&work).unwrap();
    command_desk(
        &d,
        &work,
        "cat > /dev/null; echo 'the agent is busy' >&2; exit 3",
    );
    let o = run_in(&d, &work, &["report", "started"], Some("g-1"));
    assert!(o.status.success(), "{}", text(&o));
    let sent = d.cli(&["task", "add", "bot", "Rotate the logs"]);
    assert!(sent.status.success(), "{}", text(&sent));
    let shown = until("the problem in status", || {
        let o = d.cli(&["status"]);
        let out = text(&o);
        out.contains("its task waits: the command did not deliver")
            .then_some(out)
    });
    assert!(shown.contains("session g-1"), "{shown}");
    assert!(shown.contains("exit"), "the reason is named: {shown}");
}
