//! The CLI's verbs against a real daemon.

use serde_json::Value;

use crate::support::{Served, stderr, stdout};

#[test]
fn desks_and_tasks_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Served::start(dir.path());

    let out = d.cli(&[
        "desk", "add", "web", "--dir", "/src/web", "--agent", "generic",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("added desk web (generic) in /src/web"));
    let list: Value = serde_json::from_str(&stdout(&d.cli(&["desk", "list", "--json"]))).unwrap();
    assert_eq!(list["desks"][0]["name"], "web");

    let out = d.cli(&["task", "add", "web", "Add a --json flag\nwith tests"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let id = stdout(&out).trim().to_owned();
    let second = stdout(&d.cli(&["task", "add", "web", "Write docs"]))
        .trim()
        .to_owned();

    let listing = stdout(&d.cli(&["task", "list"]));
    assert!(
        listing.contains(&id)
            && listing.contains("working")
            && listing.contains("Add a --json flag"),
        "{listing}"
    );
    assert!(
        !listing.contains("with tests"),
        "only the first line: {listing}"
    );
    assert!(listing.contains("queued #1"), "{listing}");

    let out = d.cli(&["task", "update", &id, "blocked", "Which format?"]);
    assert!(stdout(&out).contains("is blocked"), "{}", stderr(&out));
    let tasks: Value = serde_json::from_str(&stdout(&d.cli(&["task", "list", "--json"]))).unwrap();
    let state_of = |id: &str| {
        tasks["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["state"]
            .clone()
    };
    assert_eq!(state_of(&second), "working", "blocked frees the desk");

    let out = d.cli(&["task", "update", &second, "done", "Docs written"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let detail = stdout(&d.cli(&["task", "get", &second]));
    assert!(
        detail.contains("completed") && detail.contains("Docs written"),
        "{detail}"
    );

    // A worker declines a task: it ends rejected with the reason; once ended, it stays so.
    let third = stdout(&d.cli(&["task", "add", "web", "Design a logo"]))
        .trim()
        .to_owned();
    let out = d.cli(&[
        "task",
        "update",
        &third,
        "rejected",
        "Not this desk's work.",
    ]);
    assert!(stdout(&out).contains("rejected"), "{}", stderr(&out));
    let out = d.cli(&["task", "update", &third, "done", "Did it anyway."]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already ended"), "{}", stderr(&out));
    let detail = stdout(&d.cli(&["task", "get", &third]));
    assert!(
        detail.contains("rejected") && detail.contains("Not this desk's work."),
        "{detail}"
    );

    let out = d.cli(&["task", "cancel", &id]);
    assert!(stdout(&out).contains("canceled"), "{}", stderr(&out));
    let out = d.cli(&["task", "cancel", &second]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be canceled"),
        "{}",
        stderr(&out)
    );

    let out = d.cli(&["desk", "remove", "web"]);
    assert!(out.status.success(), "{}", stderr(&out));

    // SIGTERM stops it cleanly.
    assert!(d.sigterm().success());
    let log = std::fs::read_to_string(dir.path().join("taskkeeper.log")).unwrap();
    assert!(log.contains("daemon stopped"), "{log}");
}

#[test]
fn a_wrong_token_or_no_daemon_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    let out = std::process::Command::new(crate::support::bin())
        .args(["task", "list"])
        .env("TASKKEEPER_URL", d.url())
        .env("TASKKEEPER_TOKEN", "not-it")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("wrong bearer token"),
        "{}",
        stderr(&out)
    );

    let out = std::process::Command::new(crate::support::bin())
        .args(["task", "list"])
        .env("TASKKEEPER_URL", "http://127.0.0.1:1")
        .env("TASKKEEPER_TOKEN", "x")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot reach the daemon"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn askers_and_the_a2a_verbs() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    assert!(
        d.cli(&["desk", "add", "web", "--dir", "/tmp"])
            .status
            .success()
    );
    let out = d.cli(&["asker", "add", "ci-bot"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let token = stdout(&out).trim().to_owned();
    assert_eq!(token.len(), 64);
    assert!(stdout(&d.cli(&["asker", "list"])).contains("ci-bot"));

    let as_bot = |args: &[&str]| {
        std::process::Command::new(crate::support::bin())
            .args(args)
            .env("TASKKEEPER_URL", d.url())
            .env("TASKKEEPER_A2A_TOKEN", &token)
            .env_remove("TASKKEEPER_TOKEN")
            .output()
            .unwrap()
    };
    let out = as_bot(&["send", "web", "Add a --json flag", "--no-wait", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let task: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let id = task["id"].as_str().unwrap().to_owned();
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING");

    // A blocking send returns when the worker ends the task.
    let waiting = std::thread::scope(|s| {
        let h = s.spawn(|| as_bot(&["send", "web", "Second", "--wait"]));
        let out = as_bot(&["list", "--json"]);
        let list: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert!(
            list["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["id"] == id.as_str())
        );
        assert!(
            d.cli(&["task", "update", &id, "done", "Added it"])
                .status
                .success()
        );
        // The second task is now the desk's; end it so the blocked send returns.
        let second = loop {
            let open: Value =
                serde_json::from_str(&stdout(&d.cli(&["task", "list", "--json"]))).unwrap();
            if let Some(t) = open["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["state"] == "working")
            {
                break t["id"].as_str().unwrap().to_owned();
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        assert!(
            d.cli(&["task", "update", &second, "blocked", "Which format?"])
                .status
                .success()
        );
        h.join().unwrap()
    });
    assert!(
        stdout(&waiting).contains("input-required  Which format?"),
        "{}",
        stdout(&waiting)
    );

    let out = as_bot(&["get", &id]);
    assert!(
        stdout(&out).contains("completed  Added it"),
        "{}",
        stdout(&out)
    );
    let out = as_bot(&["ack", &id, "--json"]);
    let acked: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(acked["metadata"].to_string().contains("acknowledgedAt"));
    let out = as_bot(&["watch", &id]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("A2A error -32004"),
        "{}",
        stderr(&out)
    );
    let out = as_bot(&["cancel", &id]);
    assert!(
        stderr(&out).contains("cannot be canceled"),
        "{}",
        stderr(&out)
    );

    // The owner reads every task (`asker::may_read`), an asker's too; an unknown one is not
    // found.
    let out = d.cli(&["get", &id]);
    assert!(
        stdout(&out).contains("completed  Added it"),
        "{}",
        stderr(&out)
    );
    let out = d.cli(&["get", "no-such-task"]);
    assert!(stderr(&out).contains("Task not found"), "{}", stderr(&out));
    assert!(d.cli(&["asker", "remove", "ci-bot"]).status.success());
    let out = as_bot(&["list"]);
    assert!(!out.status.success());
}

/// A reader that goes away early (`| grep -q`, `| head`) ends the CLI quietly, with no panic.
/// The reading end is closed before the CLI starts, so its first write meets the closed pipe.
#[test]
fn a_closed_pipe_ends_the_cli_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    assert!(
        d.cli(&["desk", "add", "web", "--dir", "/src/web"])
            .status
            .success()
    );
    for args in [&["status", "--json"][..], &["desk", "list"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(crate::support::bin())
            .args(args)
            .env("TASKKEEPER_URL", d.url())
            .env("TASKKEEPER_TOKEN", crate::support::TOKEN)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let errors = String::from_utf8_lossy(&out.stderr);
        assert!(errors.is_empty(), "{args:?} quiet: {errors}");
        assert!(out.status.success(), "{args:?}: {:?}", out.status);
    }
}

/// `taskkeeper digest` takes the digest (`--peek` only shows it); `desk set --auto-launch`
/// turns a desk's launching by itself on and off, and `desk list` says when a desk has work
/// and no session; a bad value is refused by the CLI and changes nothing.
#[test]
fn the_digest_and_a_desk_that_launches_by_itself_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    // Never a real `claude`: the desk's launch by itself fails, and is held by its guard.
    let d = Served::start_in(
        dir.path(),
        &[("TASKKEEPER_CLAUDE".into(), "/nonexistent/claude".into())],
    );
    let out = d.cli(&["desk", "add", "web", "--dir", "/src/web"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let first = stdout(&d.cli(&["task", "add", "web", "Add a --json flag"]))
        .trim()
        .to_owned();
    let out = d.cli(&["task", "update", &first, "done", "Added."]);
    assert!(out.status.success(), "{}", stderr(&out));
    d.cli(&["task", "add", "web", "Write the docs"]);

    let peek = stdout(&d.cli(&["digest", "--peek"]));
    assert!(
        peek.starts_with("Digest (the first: everything Taskkeeper keeps)")
            && peek.contains("Finished: 1\n")
            && peek.contains(&first)
            && peek.contains("Stalled: 0\n")
            && peek.contains("Reminders sent: 0\n")
            && peek.contains("(not taken"),
        "{peek}"
    );
    let taken = stdout(&d.cli(&["digest"]));
    assert!(taken.contains("Finished: 1\n"), "{taken}");
    let json: Value =
        serde_json::from_str(&stdout(&d.cli(&["digest", "--json", "--peek"]))).unwrap();
    assert!(
        json["since"].is_string(),
        "taken: the next starts then: {json}"
    );
    assert_eq!(json["counts"]["finished"], 0);

    let list = stdout(&d.cli(&["desk", "list"]));
    assert!(
        list.contains("NO SESSION: work waits (`taskkeeper session launch web`)"),
        "{list}"
    );
    // A generic desk's agent is not launched by Taskkeeper: no launch is offered.
    let notes = tempfile::tempdir().unwrap();
    let out = d.cli(&[
        "desk",
        "add",
        "wiki",
        "--dir",
        &notes.path().to_string_lossy(),
        "--agent",
        "generic",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = d.cli(&["task", "add", "wiki", "Write it down"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = stdout(&d.cli(&["desk", "list"]));
    assert!(
        list.contains("NO SESSION: work waits (start its agent in its directory)")
            && !list.contains("session launch wiki"),
        "{list}"
    );
    let out = d.cli(&["desk", "set", "web", "--auto-launch", "maybe"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--auto-launch"), "{}", stderr(&out));
    let out = d.cli(&["desk", "set", "web"]);
    assert!(
        stderr(&out).contains("--auto-launch on|off"),
        "{}",
        stderr(&out)
    );
    let off: Value = serde_json::from_str(&stdout(&d.cli(&["desk", "list", "--json"]))).unwrap();
    assert_eq!(off["desks"][0]["autoLaunch"], false);

    let out = d.cli(&["desk", "set", "web", "--auto-launch", "on"]);
    assert!(
        stdout(&out).contains("desk web: launches a headless session by itself"),
        "{}{}",
        stdout(&out),
        stderr(&out)
    );
    let on: Value = serde_json::from_str(&stdout(&d.cli(&["desk", "list", "--json"]))).unwrap();
    assert_eq!(on["desks"][0]["autoLaunch"], true);
    let out = d.cli(&["desk", "set", "web", "--auto-launch", "off"]);
    assert!(
        stdout(&out).contains("desk web: launches only when you do"),
        "{}",
        stdout(&out)
    );
}

/// `taskkeeper settings list` prints the daemon's settings catalogue (core's settings table):
/// every setting by group, with its value, default, what it takes and what it does; a value
/// outside what it takes is refused in the same words.
#[test]
fn settings_list_prints_the_daemons_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    assert!(
        d.cli(&["settings", "set", "reminders.hourly_cap", "4"])
            .status
            .success()
    );
    let out = d.cli(&["settings", "list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list = stdout(&out);
    assert!(
        list.starts_with("Reminders\n")
            && list.contains(
                "\n  reminders.hourly_cap = 4  (default 6; a whole number from 1 to 60)\n      \
                 Reminders per hour: At most this many messages into one session per hour.\n"
            )
            && list.contains("\nLimits\n  limits.open_tasks_per_asker = 100  (default 100; "),
        "{list}"
    );
    let json: Value =
        serde_json::from_str(&stdout(&d.cli(&["settings", "list", "--json"]))).unwrap();
    assert_eq!(
        json["catalogue"].as_array().unwrap().len(),
        json["settings"].as_object().unwrap().len(),
        "every setting the daemon has is described"
    );
    let out = d.cli(&["settings", "set", "reminders.hourly_cap", "61"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("a whole number from 1 to 60"),
        "{}",
        stderr(&out)
    );
}
