//! What the owner sees after being away, over the owner API on an injected clock: each
//! task's timeline (the ladder as the watchdog will run it), the digest and its offer, and
//! desks that have work and no session, launching one by themselves behind their guard.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_core::{Clock as _, ManualClock, Timestamp};

use crate::support::{TestDaemon, read, until};
use crate::watchdog::{handed_over_then_quiet, hook, owner_events};

/// 2026-12-01T10:00:00Z: the injected clock's start.
const START: Timestamp = Timestamp::from_millis(1_796_119_200_000);

fn minutes(m: u64) -> Duration {
    Duration::from_secs(m * 60)
}

fn ts(t: Timestamp) -> Value {
    json!(t.to_rfc3339())
}

fn clocked(
    change: impl FnOnce(&mut taskkeeper_server::DaemonConfig),
) -> (TestDaemon, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(START));
    let c = clock.clone();
    let d = TestDaemon::start_configured(move |config| {
        config.clock = c;
        config.utc_offset_s = Some(0);
        change(config);
    });
    (d, clock)
}

/// A quiet session holding a task: its timeline is the ladder to the minute (5, 6, 8, 13,
/// 23, then the stall at 53); the open list carries the same; a queued task says why
/// nothing is due for it; a reminder sent shows as sent.
#[test]
fn a_tasks_timeline_is_the_ladder_the_watchdog_will_run() {
    let (d, clock) = clocked(|_| {});
    std::fs::create_dir_all(d.data_dir.join("work")).unwrap();
    hook(&d, "SessionStart", json!({"source": "startup"}));
    let id = handed_over_then_quiet(&d, "Add a --json flag", "Now writing the probe…");
    let (_, queued) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "work", "text": "And the docs"})),
    );

    let (status, task) = d.call("GET", &format!("/api/tasks/{id}"), None);
    assert_eq!(status, 200, "{task}");
    let due: Vec<Value> = [5, 6, 8, 13, 23]
        .iter()
        .map(|m| json!({"at": ts(START.plus(minutes(*m))), "kind": "remind"}))
        .chain([json!({"at": ts(START.plus(minutes(53))), "kind": "stall"})])
        .collect();
    let timeline = &task["timeline"];
    assert_eq!(timeline["quietSince"], ts(START));
    assert_eq!(timeline["deliveredAt"], ts(START));
    assert_eq!(timeline["due"], json!(due), "{timeline}");
    assert_eq!(timeline["reminders"], json!([]));
    assert_eq!(timeline["hold"], Value::Null);
    assert_eq!(timeline["expiresAt"], ts(START.plus(minutes(24 * 60))));
    assert_eq!(
        timeline["turns"].as_array().map(Vec::len),
        Some(1),
        "the turn that took the task: {timeline}"
    );

    let (_, open) = d.call("GET", "/api/tasks?state=open", None);
    let listed = open["tasks"].as_array().unwrap();
    let mine = listed.iter().find(|t| t["id"] == id.as_str()).unwrap();
    assert_eq!(
        mine["timeline"], *timeline,
        "the list carries the same timeline"
    );
    let other = listed.iter().find(|t| t["id"] == queued["id"]).unwrap();
    assert_eq!(other["timeline"]["hold"], "queued");
    assert_eq!(other["timeline"]["due"], json!([]));

    // Five minutes on, the watchdog sends the first reminder: it shows as sent, and the
    // next is a minute after it.
    clock.advance(minutes(5));
    // Wakes the watchdog (a setting changed), which reads the moved clock.
    assert_eq!(
        d.call("POST", "/api/reminders/resume", Some(&json!({}))).0,
        200
    );
    // The watchdog records the task's rung, then the session's message (which moves its quiet
    // clock): wait for both.
    let next = json!({"at": ts(START.plus(minutes(6))), "kind": "remind"});
    let task = until("the first reminder, recorded", || {
        let (_, t) = d.call("GET", &format!("/api/tasks/{id}"), None);
        (t["remindersSent"] == 1 && t["timeline"]["due"][0] == next).then_some(t)
    });
    assert_eq!(
        task["timeline"]["reminders"],
        json!([ts(START.plus(minutes(5)))])
    );
    assert_eq!(
        task["timeline"]["due"][0],
        json!({"at": ts(START.plus(minutes(6))), "kind": "remind"})
    );
}

fn done(d: &TestDaemon, id: &str) {
    let (status, t) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": "done", "text": "Done."})),
    );
    assert_eq!(status, 200, "{t}");
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

/// `GET /api/digest` shows the digest without taking it; `POST` takes it, and the next
/// starts from then. The offer at a time of day is one notice with the counts.
#[test]
fn the_digest_is_shown_taken_and_offered_at_its_time() {
    let (d, clock) = clocked(|_| {});
    d.with_desk("ops");
    d.with_desk("web");
    let first = d.add_task("ops", "Rotate the logs");
    done(&d, &first);
    let second = d.add_task("web", "Fix the header");

    let (status, peek) = d.call("GET", "/api/digest", None);
    assert_eq!(status, 200, "{peek}");
    assert_eq!(peek["since"], Value::Null);
    assert_eq!(peek["until"], ts(START));
    assert_eq!(ids(&peek["finished"]), [first.as_str()]);
    assert_eq!(
        peek["counts"],
        json!({"stalled": 0, "finished": 1, "waitingOnOwner": 0, "ackPending": 0, "reminders": 0})
    );
    let (_, again) = d.call("GET", "/api/digest", None);
    assert_eq!(again, peek, "a peek takes nothing");

    let (status, taken) = d.call("POST", "/api/digest", Some(&json!({})));
    assert_eq!(status, 200, "{taken}");
    assert_eq!(taken, peek);
    clock.advance(minutes(10));
    done(&d, &second);
    let (_, next) = d.call("GET", "/api/digest", None);
    assert_eq!(next["since"], ts(START));
    assert_eq!(ids(&next["finished"]), [second.as_str()]);

    // Refused: a query it does not know (nothing taken).
    let (status, refused) = d.call("GET", "/api/digest?since=yesterday", None);
    assert_eq!(status, 400, "{refused}");
    let (status, refused) = d.call("PUT", "/api/settings", Some(&json!({"digest.at": "9am"})));
    assert_eq!(status, 400, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("digest.at") && message.contains("08:30"),
        "{message}"
    );

    // At 10:30 UTC (the clock is at 10:10) the daemon offers it: one notice, the counts.
    let notices = owner_events(&d, "notice");
    let (status, _) = d.call("PUT", "/api/settings", Some(&json!({"digest.at": "10:30"})));
    assert_eq!(status, 200);
    clock.advance(minutes(25));
    d.daemon().wake_digest();
    let notice = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        notice,
        json!({"kind": "digest", "counts": {"stalled": 0, "finished": 1, "waitingOnOwner": 0,
               "ackPending": 0, "reminders": 0}})
    );
}

/// A stand-in for `claude -p` that records each start and exits at once: a session that
/// dies as soon as it is launched.
#[cfg(unix)]
fn dying_claude(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let log = dir.join("starts");
    let program = dir.join("claude");
    std::fs::write(
        &program,
        format!("#!/bin/sh\necho start >> {}\nexit 0\n", log.display()),
    )
    .unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    (program, log)
}

fn starts(log: &std::path::Path) -> usize {
    read(log).map_or(0, |l| l.lines().count())
}

fn desk(d: &TestDaemon, name: &str) -> Value {
    let (_, list) = d.call("GET", "/api/desks", None);
    list["desks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .cloned()
        .unwrap()
}

/// The sessions desk `name` has had, live or ended.
fn sessions_of(d: &TestDaemon, name: &str) -> usize {
    let (_, list) = d.call("GET", "/api/sessions", None);
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["desk"] == name)
        .count()
}

/// Wake the auto-launch loop and wait until a look that began after the caller moved the
/// clock has finished. A look already under way when the clock moved may have read the old
/// time and finish first; the loop looks one at a time, so the look that finishes after a
/// second wake began after the first had finished, with the clock already moved.
fn looked_since_the_clock_moved(d: &TestDaemon) {
    for _ in 0..2 {
        let before = d.daemon().auto_launch_looks();
        d.daemon().wake_auto_launch();
        until("the auto-launch loop looked", || {
            (d.daemon().auto_launch_looks() > before).then_some(())
        });
    }
}

/// The session of this desk has ended (the stand-in exited).
fn no_live_session(d: &TestDaemon, name: &str) -> Option<()> {
    let v = desk(d, name);
    (v["liveSession"] == false).then_some(())
}

/// A desk with work and no session says so; set to launch by itself, it launches at once,
/// and when each session dies straight away the guard waits 1, 2, 4, 8 minutes (on the
/// injected clock) and gives up after five launches; the owner's own launch resets it. After a
/// restart (a reboot) the desk launches again by itself.
#[cfg(unix)]
#[test]
fn a_desk_with_work_and_no_session_launches_one_by_itself_behind_its_guard() {
    let scratch = tempfile::tempdir().unwrap();
    let (program, log) = dying_claude(scratch.path());
    let p = program.clone();
    let (mut d, clock) = clocked(move |c| c.claude = p);
    let (status, _) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": d.data_dir})),
    );
    assert_eq!(status, 201);
    let web = desk(&d, "web");
    assert_eq!(
        (&web["needsSession"], &web["autoLaunch"], &web["openTasks"]),
        (&json!(false), &json!(false), &json!(0))
    );
    d.add_task("web", "Fix the login page");
    let web = desk(&d, "web");
    assert_eq!(
        (&web["needsSession"], &web["liveSession"], &web["openTasks"]),
        (&json!(true), &json!(false), &json!(1)),
        "{web}"
    );
    assert_eq!(starts(&log), 0, "off by default: nothing launched");

    // Refusals change nothing.
    for (path, body, code) in [
        ("/api/desks/web", json!({"autoLaunch": "yes"}), 400),
        ("/api/desks/web", json!({}), 400),
        ("/api/desks/nope", json!({"autoLaunch": true}), 404),
    ] {
        let (got, answer) = d.call("PATCH", path, Some(&body));
        assert_eq!(got, code, "{path} {body}: {answer}");
    }
    assert_eq!(desk(&d, "web")["autoLaunch"], false);

    let (status, web) = d.call(
        "PATCH",
        "/api/desks/web",
        Some(&json!({"autoLaunch": true})),
    );
    assert_eq!(status, 200, "{web}");
    assert_eq!(web["autoLaunch"], true);
    until("the first launch", || (starts(&log) == 1).then_some(()));
    until("the session ended", || no_live_session(&d, "web"));
    let mut now = clock.now();
    for (n, wait) in [(2, 1), (3, 2), (4, 4), (5, 8)] {
        let held = until("the guard's wait", || {
            let v = desk(&d, "web");
            v["autoLaunchRetryAt"].as_str().map(str::to_owned)
        });
        assert_eq!(
            held,
            now.plus(minutes(wait)).to_rfc3339(),
            "before launch {n}"
        );
        assert_eq!(starts(&log), n - 1, "held: no launch before its time");
        clock.advance(minutes(wait));
        now = clock.now();
        d.daemon().wake_auto_launch();
        until("the next launch", || (starts(&log) == n).then_some(()));
        until("the session ended", || no_live_session(&d, "web"));
    }
    let gave_up = until("the guard gives up", || {
        let v = desk(&d, "web");
        (v["autoLaunchGaveUp"] == true).then_some(v)
    });
    assert_eq!(gave_up["needsSession"], true);
    // Hours later (the task has not expired yet) it still waits for the owner: the loop looks
    // at the moved clock and launches nothing (a launch is a new session of the desk).
    let sessions = sessions_of(&d, "web");
    assert_eq!(sessions, 5, "one session a launch");
    clock.advance(minutes(6 * 60));
    looked_since_the_clock_moved(&d);
    assert_eq!(desk(&d, "web")["autoLaunchGaveUp"], true);
    assert_eq!(
        sessions_of(&d, "web"),
        sessions,
        "hours later: still waiting for the owner"
    );
    assert_eq!(starts(&log), 5, "hours later: still waiting for the owner");

    // The owner launches: the guard starts afresh (and launches again once that one died).
    let (status, s) = d.call("POST", "/api/desks/web/launch", Some(&json!({})));
    assert_eq!(status, 201, "{s}");
    until("the owner's launch and a fresh one by itself", || {
        (starts(&log) == 7).then_some(())
    });

    // A reboot: the daemon starts again, and the desk brings its work back by itself.
    d.restart_configured(move |c| {
        c.claude = program;
        c.utc_offset_s = Some(0);
    });
    until("a launch after the restart", || {
        (starts(&log) == 8).then_some(())
    });
}

/// The auto-launch loop looks again on every change of any task. It reads, of each desk set
/// to launch, whether it has work (from the store's indexes) and its sessions: never the
/// store's open tasks, which it used to decode all of on every look (issue 13).
/// The window's desk list shows each desk's open count and whether it needs a session
/// without decoding the tasks behind them, however deep the queues.
#[test]
fn the_desk_list_counts_open_tasks_without_reading_them() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.with_desk("idle");
    let queued = 40;
    for i in 0..queued {
        d.add_task("web", &format!("task {i}"));
    }
    let before = d.daemon().store().reads();
    let (status, list) = d.call("GET", "/api/desks", None);
    let read = d.daemon().store().reads() - before;
    assert_eq!(status, 200, "{list}");
    let web = desk(&d, "web");
    assert_eq!(web["openTasks"], queued, "{web}");
    assert_eq!(web["needsSession"], true, "{web}");
    assert_eq!(desk(&d, "idle")["openTasks"], 0);
    assert_eq!(desk(&d, "idle")["needsSession"], false);
    // What the other loops still read of the last submits is a few, never the queue.
    assert!(
        read.tasks_decoded < queued / 2,
        "the desk list decoded the queue: {read:?}"
    );
}

#[test]
fn the_auto_launch_loop_reads_no_task_however_deep_the_queues() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.with_desk("auto");
    let (status, auto) = d.call(
        "PATCH",
        "/api/desks/auto",
        Some(&json!({"autoLaunch": true})),
    );
    assert_eq!(status, 200, "{auto}");
    let queued = 100;
    for i in 0..queued {
        d.add_task("web", &format!("task {i}"));
    }
    let looks = d.daemon().auto_launch_looks();
    let before = d.daemon().store().reads();
    d.daemon().wake_auto_launch();
    until("the loop looked", || {
        (d.daemon().auto_launch_looks() > looks).then_some(())
    });
    let read = d.daemon().store().reads() - before;
    // The look itself decodes none; what the other loops still read of the last submits
    // (the watchdog's desk: its working task, its earliest) is a few.
    assert!(
        read.tasks_decoded < queued / 2,
        "a look decoded the queue: {read:?}"
    );
    assert_eq!(
        desk(&d, "auto")["needsSession"],
        false,
        "no work, no launch"
    );
}

/// A stall the owner snoozes for an hour ("Snooze 1 h") is told again once the hour has
/// passed on the daemon's clock, and not before: at 59 minutes the snooze looks and tells
/// nothing (the next notice is a later one), at 61 it tells the stall.
#[test]
fn a_snoozed_stall_is_told_again_once_the_snooze_has_passed_on_the_daemons_clock() {
    let (d, clock) = clocked(|_| {});
    d.with_desk("web");
    let notices = owner_events(&d, "notice");
    let stalled = d.add_task("web", "Port the parser");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let tasks = d.daemon().tasks().clone();
    let stall = taskkeeper_core::Event::Stall;
    runtime
        .block_on(tasks.apply(&taskkeeper_core::TaskId::from(stalled.as_str()), stall))
        .unwrap();
    // The stall frees the desk: the next task starts, for a notice of its own later.
    let other = d.add_task("web", "Add a --json flag");
    assert_eq!(d.task(&other)["state"], "working");

    let owner = d.daemon().owner();
    let looks = d.daemon().snooze_looks();
    runtime
        .block_on(owner.snooze_task(&stalled, minutes(60)))
        .unwrap();
    until("the snooze looked at the clock", || {
        (d.daemon().snooze_looks() > looks).then_some(())
    });

    clock.advance(minutes(59));
    let looks = d.daemon().snooze_looks();
    d.daemon().wake_snoozes();
    until("the snooze looked at the moved clock", || {
        (d.daemon().snooze_looks() > looks).then_some(())
    });
    // Not yet: the next notice is the one that comes after this look.
    let (status, out) = d.call(
        "POST",
        &format!("/api/tasks/{other}/update"),
        Some(&json!({"status": "blocked", "text": "Which flag?"})),
    );
    assert_eq!(status, 200, "{out}");
    let next = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        (next["kind"].as_str(), next["task"]["id"].as_str()),
        (Some("blocked"), Some(other.as_str())),
        "nothing told before the snooze passed: {next}"
    );

    clock.advance(minutes(2));
    d.daemon().wake_snoozes();
    let again = notices.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(
        (again["kind"].as_str(), again["task"]["id"].as_str()),
        (Some("stalled"), Some(stalled.as_str())),
        "told again once the snooze passed: {again}"
    );
}
