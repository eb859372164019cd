//! Nothing acknowledged is lost: a daemon child takes a stream of writes from several
//! clients and is killed with SIGKILL at random moments; after each restart every write it
//! answered for is there, a resend of an unanswered write duplicates nothing, and SQLite's
//! integrity check passes.
//!
//! The seed is printed so a failure can be replayed with `TASKKEEPER_KILL_SEED`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng as _};
use serde_json::{Value, json};
use taskkeeper_core::{Store, StoreOptions};

use crate::support::{Served, request};

/// What the clients were told.
#[derive(Default)]
struct Ledger {
    /// messageId → task id, for every create the daemon answered.
    created: BTreeMap<String, String>,
    /// Task ids whose `done` the daemon answered.
    done: BTreeSet<String>,
    /// Creates sent without an answer (the daemon died first).
    unanswered: BTreeSet<String>,
}

fn create(port: u16, message_id: &str) -> Option<String> {
    let body =
        json!({"desk": "web", "text": format!("request {message_id}"), "messageId": message_id})
            .to_string();
    let (status, answer) = request(port, "POST", "/api/tasks", &body)?;
    assert_eq!(status, 201, "{answer}");
    let v: Value = serde_json::from_str(&answer).unwrap();
    Some(v["id"].as_str().unwrap().to_owned())
}

fn finish(port: u16, id: &str) -> bool {
    let body = json!({"status": "done", "text": "finished"}).to_string();
    match request(port, "POST", &format!("/api/tasks/{id}/update"), &body) {
        Some((status, answer)) => {
            assert_eq!(status, 200, "{answer}");
            true
        }
        None => false,
    }
}

/// Every acknowledged write is there, and nothing else.
fn verify(port: u16, ledger: &mut Ledger) {
    // Resend what was never answered: the same messageId must not make a second task.
    for message_id in std::mem::take(&mut ledger.unanswered) {
        let id = create(port, &message_id).expect("the restarted daemon answers");
        if let Some(before) = ledger.created.insert(message_id.clone(), id.clone()) {
            assert_eq!(
                before, id,
                "{message_id} was answered twice with different tasks"
            );
        }
    }
    let (status, body) = request(port, "GET", "/api/tasks", "").expect("list");
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_str(&body).unwrap();
    let states: BTreeMap<String, String> = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (message_id, id) in &ledger.created {
        assert!(
            states.contains_key(id),
            "acknowledged task {id} ({message_id}) is lost"
        );
    }
    for id in &ledger.done {
        assert_eq!(
            states[id], "completed",
            "acknowledged ending of {id} is lost"
        );
    }
    assert_eq!(
        states.len(),
        ledger.created.len(),
        "a task exists that no write created, or one was duplicated"
    );
}

fn run(kill_points: usize) {
    let seed: u64 = std::env::var("TASKKEEPER_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("kill test seed {seed} (TASKKEEPER_KILL_SEED={seed} replays it)");
    let mut rng = StdRng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("taskkeeper.db");
    let mut ledger = Ledger::default();

    for round in 0..kill_points {
        let mut daemon = Served::start(dir.path());
        let port = daemon.port;
        if round == 0 {
            let (status, body) = request(
                port,
                "POST",
                "/api/desks",
                r#"{"name":"web","dir":"/tmp","agent":"generic"}"#,
            )
            .expect("add desk");
            assert_eq!(status, 201, "{body}");
        }
        verify(port, &mut ledger);

        let shared = Arc::new(Mutex::new(std::mem::take(&mut ledger)));
        let writers: Vec<_> = (0..4)
            .map(|w| {
                let shared = Arc::clone(&shared);
                let finish_every = rng.random_range(1..4u32);
                thread::spawn(move || {
                    for n in 0.. {
                        let message_id = format!("r{round}-w{w}-{n}");
                        let Some(id) = create(port, &message_id) else {
                            shared.lock().unwrap().unanswered.insert(message_id);
                            return;
                        };
                        shared
                            .lock()
                            .unwrap()
                            .created
                            .insert(message_id, id.clone());
                        if n % finish_every == 0 {
                            if !finish(port, &id) {
                                return;
                            }
                            shared.lock().unwrap().done.insert(id);
                        }
                    }
                })
            })
            .collect();
        thread::sleep(Duration::from_millis(rng.random_range(5..200)));
        daemon.kill9();
        for w in writers {
            w.join().unwrap();
        }
        ledger = Arc::try_unwrap(shared).ok().unwrap().into_inner().unwrap();

        // The file the dead daemon left must be sound before anything else touches it.
        let store = Store::open(&db, StoreOptions::default()).unwrap();
        assert_eq!(store.integrity_check().unwrap(), "ok", "round {round}");
    }

    let daemon = Served::start(dir.path());
    verify(daemon.port, &mut ledger);
    assert!(
        ledger.created.len() > kill_points,
        "the clients got writes through: {}",
        ledger.created.len()
    );
    eprintln!(
        "{} tasks created, {} finished, over {kill_points} kills",
        ledger.created.len(),
        ledger.done.len()
    );
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    run(50);
}

/// The same at 1,000 kill points (or `TASKKEEPER_KILL_POINTS`): `bench/soak/run.sh`.
#[test]
#[ignore = "soak: bench/soak/run.sh"]
fn acknowledged_writes_survive_kill_9_soak() {
    let points = std::env::var("TASKKEEPER_KILL_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    run(points);
}

/// A reminder recorded just before a SIGKILL is neither lost nor repeated: the restarted
/// daemon hands the same numbered message to the session's next waiter, and the ladder goes
/// on from where the store says it was.
#[test]
fn a_recorded_reminder_survives_kill_9_and_is_not_repeated() {
    let dir = tempfile::tempdir().unwrap();
    let mut d = Served::start(dir.path());
    let work = dir.path().join("work").to_string_lossy().into_owned();
    let hook = |port: u16, event: &str, extra: Value| {
        let mut body = json!({"session_id": "s-1", "hook_event_name": event, "cwd": work});
        if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
            b.extend(e);
        }
        request(port, "POST", "/hooks/claude-code", &body.to_string()).expect("hook answered")
    };
    let settings = json!({"reminders.first_after.claude-code": "1s", "reminders.ladder": "1h", "reminders.stall_after": "1h"});
    let out = d.cli(&["settings", "set", "reminders.first_after.claude-code", "1s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    request(d.port, "PUT", "/api/settings", &settings.to_string()).unwrap();
    hook(d.port, "SessionStart", json!({"source": "startup"}));
    let (_, t) = request(
        d.port,
        "POST",
        "/api/tasks",
        r#"{"desk":"work","text":"Add a --json flag"}"#,
    )
    .unwrap();
    let id = serde_json::from_str::<Value>(&t).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    hook(
        d.port,
        "Stop",
        json!({"last_assistant_message": "Hi", "background_tasks": []}),
    );
    hook(
        d.port,
        "Stop",
        json!({"last_assistant_message": "Now writing the probe…", "background_tasks": []}),
    );

    // Wait until the reminder is recorded (nobody is waiting to deliver it).
    let reminded = |port: u16| {
        let (_, body) = request(port, "GET", &format!("/api/tasks/{id}"), "").unwrap();
        serde_json::from_str::<Value>(&body).unwrap()["remindersSent"]
            .as_u64()
            .unwrap()
    };
    for _ in 0..200 {
        if reminded(d.port) == 1 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(reminded(d.port), 1);
    d.kill9();

    let d = Served::start(dir.path());
    let out = {
        use std::io::Write as _;
        let mut child = std::process::Command::new(crate::support::bin())
            .args(["hook", "wait"])
            .env("TASKKEEPER_URL", d.url())
            // The helper sends the worker token from the data directory, as in a session.
            .env("TASKKEEPER_DATA_DIR", dir.path())
            .env_remove("TASKKEEPER_TOKEN")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stop = json!({"session_id": "s-1", "hook_event_name": "Stop", "cwd": work}).to_string();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stop.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.starts_with("[Taskkeeper] Reminder #1:") && text.contains(&id),
        "{text}"
    );
    assert_eq!(reminded(d.port), 1, "the restart repeated nothing");
}
