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
    assert!(stdout(&out).contains("input-required"), "{}", stderr(&out));
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
