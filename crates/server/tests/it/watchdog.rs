//! The watchdog end to end, on a ladder of seconds: a session (through the hook intake and
//! the waiter) is reminded with the request and its last words, and the stall reaches the
//! owner's event stream. Also the settings API.

use std::io::{BufRead as _, Read as _, Write as _};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{TOKEN, TestDaemon};

/// Give the desk a task; the session's Stop hands it over, the session works on it and
/// stops without task_update. The task's id.
pub(crate) fn handed_over_then_quiet(d: &TestDaemon, request: &str, last_words: &str) -> String {
    let (_, t) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "work", "text": request})),
    );
    let id = t["id"].as_str().unwrap().to_owned();
    let out = hook(
        d,
        "Stop",
        json!({"last_assistant_message": "Hi", "background_tasks": []}),
    );
    assert!(out.contains("\"decision\":\"block\""), "handed over: {out}");
    hook(
        d,
        "Stop",
        json!({"last_assistant_message": last_words, "background_tasks": []}),
    );
    id
}

pub(crate) fn hook(d: &TestDaemon, event: &str, extra: Value) -> String {
    let cwd = d.data_dir.join("work").to_string_lossy().into_owned();
    let mut body = json!({"session_id": "s-1", "hook_event_name": event, "cwd": cwd});
    if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
        b.extend(e);
    }
    let hs = vec![
        ("Authorization".to_owned(), format!("Bearer {TOKEN}")),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    let (status, out) = d.raw(
        "POST",
        "/hooks/claude-code",
        &d.host(),
        &hs,
        &body.to_string(),
    );
    assert_eq!(status, 200, "{out}");
    out
}

/// What the waiter gets (blocks until the daemon answers).
fn wait(d: &TestDaemon) -> Value {
    let cwd = d.data_dir.join("work").to_string_lossy().into_owned();
    let body = json!({"session_id": "s-1", "hook_event_name": "Stop", "cwd": cwd}).to_string();
    let mut s = std::net::TcpStream::connect(d.addr).unwrap();
    write!(s, "POST /hooks/claude-code/wait HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", d.host(), body.len()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    serde_json::from_str(out.split_once("\r\n\r\n").unwrap().1).unwrap()
}

#[test]
fn a_quiet_session_is_reminded_then_the_task_stalls_and_the_owner_hears() {
    let d = TestDaemon::start();
    let (status, v) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.first_after.claude-code": "1s", "reminders.ladder": "1s", "reminders.stall_after": "1s"})),
    );
    assert_eq!(status, 200, "{v}");

    let notices = owner_events(&d, "notice");

    hook(&d, "SessionStart", json!({"source": "startup"}));
    hook(&d, "UserPromptSubmit", json!({"prompt": "hello"}));
    let id = handed_over_then_quiet(&d, "Add a --json flag", "Now writing the probe…");

    let first = wait(&d);
    assert_eq!(first["action"], "deliver", "{first}");
    let text = first["text"].as_str().unwrap();
    assert!(text.starts_with("«Taskkeeper» Reminder #1:"), "{text}");
    assert!(
        text.contains(&format!("Task {id} from owner"))
            && text.contains("  Request:\n  «Taskkeeper» Begin of owner's request")
            && text.contains("\n  │ Add a --json flag\n"),
        "{text}"
    );
    assert!(
        text.contains("Your last words:\n  │ Now writing the probe…\n"),
        "{text}"
    );
    let (_, task) = d.call("GET", &format!("/api/tasks/{id}"), None);
    assert_eq!(task["remindersSent"], 1);

    // The reminder wakes the session; it stops again without ending the task.
    hook(
        &d,
        "UserPromptSubmit",
        json!({"prompt": "<task-notification>…</task-notification>"}),
    );
    hook(
        &d,
        "Stop",
        json!({"last_assistant_message": "Still on it", "background_tasks": []}),
    );
    let second = wait(&d);
    assert!(
        second["text"]
            .as_str()
            .unwrap()
            .starts_with("«Taskkeeper» Reminder #2:"),
        "{second}"
    );
    hook(
        &d,
        "UserPromptSubmit",
        json!({"prompt": "<task-notification>…</task-notification>"}),
    );
    hook(
        &d,
        "Stop",
        json!({"last_assistant_message": "Hmm", "background_tasks": []}),
    );

    let stall = wait(&d);
    assert!(
        stall["text"].as_str().unwrap().contains(&format!(
            "Note #3: task {id} from owner is now marked stalled"
        )),
        "{stall}"
    );
    let notice = notices
        .recv_timeout(Duration::from_secs(20))
        .expect("a notice");
    assert_eq!(
        (notice["kind"].as_str(), notice["task"]["id"].as_str()),
        (Some("stalled"), Some(id.as_str())),
        "{notice}"
    );
    let (_, task) = d.call("GET", &format!("/api/tasks/{id}"), None);
    assert!(task["stalledAt"].is_string());
    assert_eq!(task["state"], "working");

    // The owner resumes it: a new ladder.
    let (status, task) = d.call("POST", &format!("/api/tasks/{id}/resume"), Some(&json!({})));
    assert_eq!(status, 200, "{task}");
    assert_eq!(
        (task["stalledAt"].clone(), task["remindersSent"].clone()),
        (Value::Null, json!(0))
    );
}

/// Wait until the watchdog has read everything and planned at `now` or later (or found the
/// wall clock stepped back and planned nothing): from then on, what it did at `now` is all
/// it does (an observable signal, not a sleep).
pub(crate) fn watchdog_looked(d: &TestDaemon, before: u64, now: taskkeeper_core::Timestamp) {
    let passes = d.daemon().watchdog_passes();
    crate::support::until("a watchdog pass", || {
        let looked = passes.borrow().looked_at_all;
        looked
            .is_some_and(|(number, at)| number > before && at >= now)
            .then_some(())
    });
}

/// Wake the watchdog (a settings write makes it read everything) and wait until it has
/// planned at the clock's `now`.
fn wake_watchdog(d: &TestDaemon, now: taskkeeper_core::Timestamp) {
    let before = d.daemon().watchdog_passes().borrow().number;
    assert_eq!(
        d.call(
            "PUT",
            "/api/settings",
            Some(&json!({"reminders.hourly_cap": "6"}))
        )
        .0,
        200
    );
    watchdog_looked(d, before, now);
}

#[test]
fn paused_reminders_stay_silent_and_remind_now_speaks() {
    use taskkeeper_core::{Clock as _, ManualClock, SystemClock};
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(std::sync::Arc::new(clock.clone()));
    d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.first_after.claude-code": "1s"})),
    );
    let (status, _) = d.call("POST", "/api/reminders/pause", Some(&json!({})));
    assert_eq!(status, 200);
    hook(&d, "SessionStart", json!({"source": "startup"}));
    let id = handed_over_then_quiet(&d, "x", "…");
    clock.advance(Duration::from_secs(5));
    wake_watchdog(&d, clock.now());
    let (_, task) = d.call("GET", &format!("/api/tasks/{id}"), None);
    assert_eq!(task["remindersSent"], 0, "paused: nothing sent");
    let (status, _) = d.call("POST", &format!("/api/tasks/{id}/remind"), Some(&json!({})));
    assert_eq!(status, 200);
    let note = wait(&d);
    assert!(
        note["text"]
            .as_str()
            .unwrap()
            .contains(&format!("Task {id}")),
        "{note}"
    );
}

#[test]
fn settings_are_read_and_written_and_bad_values_change_nothing() {
    let d = TestDaemon::start();
    let (status, v) = d.call("GET", "/api/settings", None);
    assert_eq!(status, 200);
    assert_eq!(v["settings"]["reminders.ladder"], "1m,2m,5m,10m");
    assert_eq!(v["settings"]["reminders.hourly_cap"], "6");
    let (status, v) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.ladder": "10s,20s", "reminders.hourly_cap": 4})),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["settings"]["reminders.ladder"], "10s,20s");
    let before = d.call("GET", "/api/settings", None).1;
    for (body, names) in [
        (
            json!({"reminders.ladder": "1m", "reminders.stall_after": "soon"}),
            "reminders.stall_after",
        ),
        (json!({"reminders.nope": "1"}), "unknown setting"),
        (json!({"reminders.hourly_cap": [1]}), "reminders.hourly_cap"),
    ] {
        let (status, v) = d.call("PUT", "/api/settings", Some(&body));
        assert_eq!(status, 400, "{body}: {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(names),
            "{v}"
        );
    }
    assert_eq!(
        d.call("GET", "/api/settings", None).1,
        before,
        "nothing changed"
    );
}

/// The owner API serves core's settings table as the catalogue: every setting it has, with
/// the default it starts at and the range and words its refusals use, so the panel and the
/// CLI restate none of it.
#[test]
fn the_settings_catalogue_is_the_table_the_api_checks_by() {
    let d = TestDaemon::start();
    let (status, catalogue) = d.call("GET", "/api/settings/catalogue", None);
    assert_eq!(status, 200, "{catalogue}");
    let rows = catalogue["settings"].as_array().unwrap();
    let (_, settings) = d.call("GET", "/api/settings", None);
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    let mut known: Vec<&str> = settings["settings"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut listed = keys.clone();
    listed.sort_unstable();
    known.sort_unstable();
    assert_eq!(listed, known, "every setting, once");
    for row in rows {
        let key = row["key"].as_str().unwrap();
        assert_eq!(
            row["default"], settings["settings"][key],
            "{key} starts at its default"
        );
        assert!(
            row["label"].as_str().is_some_and(|l| !l.is_empty()),
            "{row}"
        );
        assert!(
            row["group"].as_str().is_some_and(|g| !g.is_empty()),
            "{row}"
        );
    }
    let cap = rows
        .iter()
        .find(|r| r["key"] == "reminders.hourly_cap")
        .unwrap();
    assert_eq!(
        (&cap["kind"], &cap["min"], &cap["max"], &cap["group"]),
        (&json!("count"), &json!(1), &json!(60), &json!("Reminders"))
    );
    let size = rows
        .iter()
        .find(|r| r["key"] == "limits.file_bytes")
        .unwrap();
    assert_eq!(
        (&size["kind"], &size["min"], &size["units"]),
        (&json!("bytes"), &json!(1024), &json!(["B", "KiB", "MiB"]))
    );
    // One past the catalogue's range is refused in the catalogue's words.
    let (status, v) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.hourly_cap": "61"})),
    );
    assert_eq!(status, 400, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.ends_with(cap["expected"].as_str().unwrap()),
        "{message} / {cap}"
    );
}

/// The scheduler on an injected clock: a 3 h suspend moves the quiet clock (no burst, no
/// early reminder), and a wall clock stepped back an hour sends nothing.
#[test]
fn a_suspend_moves_the_ladder_and_a_clock_stepped_back_sends_nothing() {
    use taskkeeper_core::{Clock as _, ManualClock, SystemClock};
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(std::sync::Arc::new(clock.clone()));
    let settings = json!({"reminders.first_after.claude-code": "60s", "reminders.ladder": "60s", "reminders.stall_after": "1h"});
    assert_eq!(d.call("PUT", "/api/settings", Some(&settings)).0, 200);
    hook(&d, "SessionStart", json!({"source": "startup"}));
    let id = handed_over_then_quiet(&d, "Add a --json flag", "Now writing the probe…");
    let reminders = || {
        d.call("GET", &format!("/api/tasks/{id}"), None).1["remindersSent"]
            .as_u64()
            .unwrap()
    };
    // A settings write wakes the scheduler at once; it has planned when it says so.
    let wake = || wake_watchdog(&d, clock.now());

    clock.advance(Duration::from_secs(30));
    wake();
    assert_eq!(reminders(), 0, "30 s of quiet: nothing yet");
    clock.suspend(Duration::from_secs(3 * 3600));
    wake();
    assert_eq!(
        reminders(),
        0,
        "asleep 3 h: the session slept too; 30 s of quiet is still 30 s"
    );
    clock.advance(Duration::from_secs(40));
    wake();
    assert_eq!(reminders(), 1, "70 s awake and quiet: the first rung");
    clock.step_wall(-3_600_000);
    clock.advance(Duration::from_secs(120));
    wake();
    assert_eq!(
        reminders(),
        1,
        "the wall clock stepped back an hour: no message"
    );
}

/// A setting changed by anyone (here the CLI's route, `PUT /api/settings`, and the pause
/// route) reaches the owner's event stream at once as a `settings` event with every setting:
/// the tray's menu and the window follow it.
#[test]
fn a_settings_change_is_an_event_on_the_owners_stream() {
    let d = TestDaemon::start();
    let settings = owner_events(&d, "settings");
    let (status, _) = d.call("POST", "/api/reminders/pause", Some(&json!({})));
    assert_eq!(status, 200);
    let got = settings
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(got["reminders.paused"], "true", "{got}");
    let (status, _) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.ladder": "1m,2m"})),
    );
    assert_eq!(status, 200);
    let got = settings
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        (
            got["reminders.ladder"].as_str(),
            got["reminders.paused"].as_str()
        ),
        (Some("1m,2m"), Some("true")),
        "{got}"
    );
    // A refused change is no change.
    let (status, _) = d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.ladder": "soon"})),
    );
    assert_eq!(status, 400);
    assert!(
        settings
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_err()
    );
}

/// The owner's event stream (`/api/events`): the data of each event of `kind`, parsed. It
/// returns once the stream is subscribed (its answer has begun).
pub(crate) fn owner_events(d: &TestDaemon, kind: &'static str) -> std::sync::mpsc::Receiver<Value> {
    let mut events = std::net::TcpStream::connect(d.addr).unwrap();
    write!(
        events,
        "GET /api/events HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n",
        d.host()
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let (open_tx, open) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let mut current = String::new();
        for line in std::io::BufReader::new(events).lines() {
            let Ok(line) = line else { return };
            if line.starts_with("HTTP/") {
                let _ = open_tx.send(());
            } else if let Some(k) = line.strip_prefix("event: ") {
                current = k.to_owned();
            } else if let Some(data) = line.strip_prefix("data: ")
                && current == kind
                && tx.send(serde_json::from_str(data).unwrap()).is_err()
            {
                return;
            }
        }
    });
    open.recv_timeout(std::time::Duration::from_secs(10))
        .expect("the owner's event stream answers");
    rx
}

/// A session's change reaches the owner's event stream as a `sessions` event (read
/// `/api/sessions` again), so the window shows a session waiting on the owner at once.
#[test]
fn a_session_change_is_an_event_on_the_owners_stream() {
    let d = TestDaemon::start();
    let sessions = owner_events(&d, "sessions");
    let (status, _) = d.call("POST", "/api/reminders/pause", Some(&json!({})));
    assert_eq!(status, 200);
    assert!(
        sessions
            .recv_timeout(std::time::Duration::from_millis(500))
            .is_err(),
        "a settings change is no session change"
    );
    hook(&d, "SessionStart", json!({"source": "startup"}));
    hook(&d, "PermissionRequest", json!({"tool_name": "Bash"}));
    let got = sessions
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap();
    assert_eq!(got, json!({}));
    let (_, list) = d.call("GET", "/api/sessions", None);
    assert_eq!(
        list["sessions"][0]["activity"], "waiting-on-owner",
        "{list}"
    );
}

/// The scheduler keeps due times between wakes: a change to one session reads and plans its
/// desk, not every desk (the old scheduler read every session and open task on every change).
#[test]
fn a_change_to_one_session_plans_only_its_desk() {
    let d = TestDaemon::start();
    for i in 0..6 {
        d.with_desk(&format!("d{i}"));
        let (status, _) = d.call(
            "POST",
            "/api/tasks",
            Some(&json!({"desk": format!("d{i}"), "text": "elsewhere"})),
        );
        assert_eq!(status, 201);
    }
    hook(&d, "SessionStart", json!({"source": "startup"}));
    let passes = d.daemon().watchdog_passes();
    // Everything so far is planned (a settings write makes the scheduler read all).
    let before = passes.borrow().number;
    assert_eq!(
        d.call(
            "PUT",
            "/api/settings",
            Some(&json!({"reminders.hourly_cap": "6"}))
        )
        .0,
        200
    );
    let full = crate::support::until("a full pass", || {
        let p = *passes.borrow();
        p.looked_at_all
            .is_some_and(|(n, _)| n > before)
            .then_some(p)
    });
    assert_eq!(
        full.scheduled, 6,
        "each desk with an open task has its expiry: {full:?}"
    );
    let before = passes.borrow().number;
    hook(&d, "UserPromptSubmit", json!({"prompt": "hello"}));
    let p = crate::support::until("the pass for the change", || {
        let p = *passes.borrow();
        (p.number > before).then_some(p)
    });
    assert!(!p.full && p.desks <= 2, "one session changed: {p:?}");
    assert_eq!(
        p.scheduled, 6,
        "the other desks keep their due times: {p:?}"
    );
}

/// A full pass (the start, a setting, a suspend) walks the desks a batch at a time and reads
/// of each desk's queue only what the plan needs: it never holds every desk's sessions and
/// tasks at once (issue 13: a full read of 10,000 desks left the process 43 MiB larger).
#[test]
fn a_full_pass_reads_a_batch_of_desks_at_a_time_and_no_queue() {
    use taskkeeper_server::watchdog::BATCH;
    let d = TestDaemon::start();
    let desks = BATCH + 6;
    for i in 0..desks {
        d.with_desk(&format!("d{i}"));
        let (status, _) = d.call(
            "POST",
            "/api/tasks",
            Some(&json!({"desk": format!("d{i}"), "text": "one"})),
        );
        assert_eq!(status, 201);
    }
    // A deep queue at one desk: the plan needs its earliest task, not all of them.
    let queued = 30;
    for _ in 1..queued {
        let (status, _) = d.call(
            "POST",
            "/api/tasks",
            Some(&json!({"desk": "d0", "text": "queued"})),
        );
        assert_eq!(status, 201);
    }
    let passes = d.daemon().watchdog_passes();
    let before = passes.borrow().number;
    assert_eq!(
        d.call(
            "PUT",
            "/api/settings",
            Some(&json!({"reminders.hourly_cap": "6"}))
        )
        .0,
        200
    );
    let full = crate::support::until("a full pass", || {
        let p = *passes.borrow();
        p.looked_at_all
            .is_some_and(|(n, _)| n > before)
            .then_some(p)
    });
    assert_eq!(full.desks, desks, "every desk in use is planned: {full:?}");
    assert_eq!(full.scheduled, desks, "each has its expiry: {full:?}");
    assert!(
        full.largest_read <= BATCH,
        "at most {BATCH} desks held at once: {full:?}"
    );
    assert_eq!(
        full.tasks, desks,
        "one task a desk (d0's earliest of its {queued}): {full:?}"
    );
}

/// The worker's word that a task is blocked on its asker, or done, is a notice for the owner
/// (the app shows them when those kinds are on); a stall the owner snoozed is told again.
#[test]
fn blocked_and_finished_tasks_are_notices_and_a_snoozed_stall_is_told_again() {
    let d = TestDaemon::start();
    d.call(
        "PUT",
        "/api/settings",
        Some(&json!({"reminders.first_after.claude-code": "1s", "reminders.ladder": "1s", "reminders.stall_after": "1s"})),
    );
    let notices = owner_events(&d, "notice");
    hook(&d, "SessionStart", json!({"source": "startup"}));
    let id = handed_over_then_quiet(&d, "Port the parser", "…");
    let (status, out) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": "blocked", "text": "Which branch?"})),
    );
    assert_eq!(status, 200, "{out}");
    let notice = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        (
            notice["kind"].as_str(),
            notice["task"]["id"].as_str(),
            notice["task"]["statusText"].as_str()
        ),
        (Some("blocked"), Some(id.as_str()), Some("Which branch?")),
        "{notice}"
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let owner = d.daemon().owner();
    // Only a stalled task can be snoozed; the refusal says so.
    let refused = runtime
        .block_on(owner.snooze_task(&id, Duration::from_millis(1)))
        .unwrap_err();
    assert!(
        refused.message.contains("not stalled") && refused.message.contains(&id),
        "{refused:?}"
    );

    let next = handed_over_then_quiet(&d, "Add a --json flag", "…");
    let stalled = notices.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(
        (stalled["kind"].as_str(), stalled["task"]["id"].as_str()),
        (Some("stalled"), Some(next.as_str())),
        "{stalled}"
    );
    runtime
        .block_on(owner.snooze_task(&next, Duration::from_millis(200)))
        .unwrap();
    let again = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        (again["kind"].as_str(), again["task"]["id"].as_str()),
        (Some("stalled"), Some(next.as_str())),
        "told again after the snooze: {again}"
    );

    let (status, out) = d.call(
        "POST",
        &format!("/api/tasks/{next}/update"),
        Some(&json!({"status": "done", "text": "Added"})),
    );
    assert_eq!(status, 200, "{out}");
    let finished = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        (finished["kind"].as_str(), finished["task"]["id"].as_str()),
        (Some("finished"), Some(next.as_str())),
        "{finished}"
    );
}

/// With two live sessions at a desk, the task handed to the older one is reminded there:
/// that session alone may end it (`queue::session_may_end`), though the newer one holds the
/// desk (`session::works_on`). The owner's "remind now" goes there too.
#[test]
fn a_task_handed_to_the_older_of_two_live_sessions_is_reminded_there() {
    use taskkeeper_core::{Clock as _, ManualClock, SessionId, SystemClock};
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(std::sync::Arc::new(clock.clone()));
    d.set_setting("reminders.first_after.claude-code", "1m");
    let h = crate::hooks::Hooks::new(&d);
    h.ok("s-1", "SessionStart", json!({"source": "startup"}));
    let id = d.add_task("work", "Add a --json flag");
    let handed = h.ok(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "Hi", "background_tasks": []}),
    );
    assert!(handed.contains("\"decision\":\"block\""), "{handed}");
    h.ok(
        "s-1",
        "Stop",
        json!({"last_assistant_message": "On it", "background_tasks": []}),
    );
    // A second session starts at the desk later: the newest live one, idle, holding nothing.
    clock.advance(Duration::from_secs(1));
    h.ok("s-2", "SessionStart", json!({"source": "startup"}));
    let store = d.daemon().store();
    let task = store
        .task(&taskkeeper_core::TaskId::from(id.as_str()))
        .unwrap()
        .unwrap();
    assert_eq!(task.delivered_to, Some(SessionId::from("s-1")));
    let note = |s: &str| {
        store
            .session(&SessionId::from(s))
            .unwrap()
            .unwrap()
            .watch
            .pending
            .map(|(seq, _)| seq)
    };

    clock.advance(Duration::from_secs(120));
    wake_watchdog(&d, clock.now());
    assert_eq!(d.task(&id)["remindersSent"], 1);
    assert_eq!(
        (note("s-1"), note("s-2")),
        (Some(1), None),
        "the reminder goes to the session handed the task"
    );

    let (status, body) = d.call("POST", &format!("/api/tasks/{id}/remind"), Some(&json!({})));
    assert_eq!(status, 200, "{body}");
    assert_eq!((note("s-1"), note("s-2")), (Some(2), None), "remind now");
}
