//! The real app, headless: the built `taskkeeper-app` on a private Xvfb display and D-Bus
//! session ([`crate::harness`]), with its own data directory, port and token.
//!
//! * With a recording notification server on the bus, a task driven to a stall over the hook
//!   intake (a ladder of seconds) must reach the server as a `Notify` call naming the desk and
//!   the request, turn the tray to its stalled state, show in the window (a screenshot is kept
//!   in `tests/artifacts/`), and a click on the notification must open the window on the task.
//! * With no notification service at all, the same stall is a logged warning and nothing
//!   else; a second launch shows the first instance's window and exits 0.
//! * With a service that owns the name but never answers, the stall still turns the tray, the
//!   daemon keeps answering, and the notifier gives up with a warning.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{APP, AppEnv, Desktop, RunningApp, SCREEN};
use crate::notification_server::Recorder;
use crate::support::{Owner, wait_for};
use crate::xwd::Screen;

const REQUEST: &str = "Add a --json flag\nand a test for it";

#[test]
fn a_stall_is_a_desktop_notification_and_the_tray_turns_stalled() {
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let recorder = Recorder::start(&desktop.bus);
    let env = AppEnv::new(tmp.path());
    let mut app = RunningApp::start(&desktop, &env, tmp.path(), &["--show"]);
    let owner = Owner::new(env.port, &env.token);
    app.wait("the daemon's /healthz", Duration::from_secs(60), || {
        owner.healthy()
    });
    app.wait_for_log("tray ready", Duration::from_secs(30));
    app.wait_for_log("tray state idle", Duration::from_secs(30));
    // The page's first report proves it loaded and asked the daemon.
    app.wait_for_log("ui rendered 0 open tasks", Duration::from_secs(60));

    let id = drive_to_stall(&owner, tmp.path());
    app.wait_for_log("tray state stalled", Duration::from_secs(30));

    let call = wait_for("a Notify call", Duration::from_secs(20), || {
        recorder.calls().into_iter().next()
    })
    .unwrap_or_else(|why| panic!("{why}:\n{}", app.diagnostics()));
    assert_eq!(call.app_name, "Taskkeeper");
    assert_eq!(call.summary, "Task stalled at web", "{call:?}");
    assert_eq!(call.body, "Add a --json flag", "{call:?}");
    assert!(
        call.actions.chunks(2).any(|a| a[0] == "default"),
        "no default action to click: {call:?}"
    );

    // The window shows the stalled task; keep a picture for people to look at.
    app.wait_for_log("ui rendered 1 open tasks", Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(500));
    let screen = Screen::read_xwd(&desktop.fb_dir.join("Xvfb_screen0")).unwrap();
    let window = screen.crop(420, 600);
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts");
    fs::create_dir_all(&artifacts).unwrap();
    fs::write(artifacts.join("app-window.png"), window.to_png()).unwrap();
    // A blank or unpainted window is one or two colours; text and badges give many.
    assert!(
        window.distinct_colours() > 20,
        "the window looks empty ({} colours)",
        window.distinct_colours()
    );
    assert!(screen.width == SCREEN.0 && screen.height == SCREEN.1);

    // The owner clicks the notification: the window opens on the task.
    recorder.click(call.id);
    app.wait_for_log("notification clicked", Duration::from_secs(10));
    app.wait_for_log(
        &format!("navigate to=Task {{ task: \"{id}\" }}"),
        Duration::from_secs(10),
    );

    assert_eq!(recorder.calls().len(), 1, "one stall, one notification");
    let status = app.stop();
    assert!(
        status.success(),
        "the app exited with {status}:\n{}",
        app.diagnostics()
    );
    assert!(app.log_contains("daemon stopped"), "no graceful shutdown");
}

#[test]
fn with_no_notification_service_a_stall_is_a_warning_and_a_second_launch_shows_the_window() {
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let env = AppEnv::new(tmp.path());
    let mut app = RunningApp::start(&desktop, &env, tmp.path(), &[]);
    let owner = Owner::new(env.port, &env.token);
    app.wait("the daemon's /healthz", Duration::from_secs(60), || {
        owner.healthy()
    });
    app.wait_for_log("tray ready", Duration::from_secs(30));
    app.wait_for_log("tray state idle", Duration::from_secs(30));

    // A pause made outside the app (the owner API, as `taskkeeper settings` and the browser
    // use it) reaches the tray's menu at once, and so does the resume.
    for (action, menu) in [("pause", "Resume reminders"), ("resume", "Pause reminders")] {
        let (status, body) = owner.post(&format!("/api/reminders/{action}"), json!({}));
        assert_eq!(status, 200, "{body}");
        app.wait_for_log(&format!("tray menu: {menu}"), Duration::from_secs(10));
    }

    drive_to_stall(&owner, tmp.path());
    app.wait_for_log("tray state stalled", Duration::from_secs(30));
    app.wait_for_log("no desktop notification service", Duration::from_secs(20));
    assert!(owner.healthy(), "the daemon must go on");

    // A second launch on the same desktop hands over to this instance and leaves at once,
    // before it opens the database or the port.
    let started = Instant::now();
    let mut second = Command::new(APP);
    desktop.env(&mut second);
    env.apply(&mut second);
    let output = second
        .stdin(Stdio::null())
        .output()
        .expect("a second launch");
    assert!(
        output.status.success(),
        "the second launch: {}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    app.wait_for_log("another launch", Duration::from_secs(10));
    app.wait_for_log("window shown", Duration::from_secs(10));
    eprintln!("second launch handed over in {:?}", started.elapsed());
    assert!(owner.healthy(), "the first instance goes on");

    let status = app.stop();
    assert!(
        status.success(),
        "the app exited with {status}:\n{}",
        app.diagnostics()
    );
}

#[test]
fn a_hung_notification_service_holds_up_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let recorder = Recorder::start_hung(&desktop.bus);
    let mut env = AppEnv::new(tmp.path());
    env.extra
        .push(("TASKKEEPER_NOTIFY_TIMEOUT_MS", "2000".to_owned()));
    let mut app = RunningApp::start(&desktop, &env, tmp.path(), &[]);
    let owner = Owner::new(env.port, &env.token);
    app.wait("the daemon's /healthz", Duration::from_secs(60), || {
        owner.healthy()
    });
    app.wait_for_log("tray ready", Duration::from_secs(30));

    drive_to_stall(&owner, tmp.path());
    app.wait_for_log("tray state stalled", Duration::from_secs(30));
    wait_for("the hung Notify call", Duration::from_secs(20), || {
        recorder.calls().into_iter().next()
    })
    .unwrap_or_else(|why| panic!("{why}:\n{}", app.diagnostics()));
    // The send hangs on the notifier's thread; the daemon answers as ever meanwhile.
    let asked = Instant::now();
    assert!(owner.healthy());
    let (status, _) = owner.post("/api/reminders/pause", json!({}));
    assert_eq!(status, 200);
    assert!(
        asked.elapsed() < Duration::from_secs(1),
        "{:?}",
        asked.elapsed()
    );
    app.wait_for_log(
        "desktop notification failed (the notification service did not answer within 2s)",
        Duration::from_secs(10),
    );

    let status = app.stop();
    assert!(
        status.success(),
        "the app exited with {status}:\n{}",
        app.diagnostics()
    );
}

/// A desk, a session working there through the hook intake, a task handed to it, and a stop
/// without a word: on a ladder of seconds the watchdog reminds twice (recorded even with no
/// waiter to deliver them) and then marks the task stalled. Returns the task's id.
fn drive_to_stall(owner: &Owner, scratch: &Path) -> String {
    let (status, body) = owner.put(
        "/api/settings",
        json!({
            "reminders.first_after.claude-code": "1s",
            "reminders.ladder": "1s",
            "reminders.stall_after": "1s",
        }),
    );
    assert_eq!(status, 200, "settings: {body}");
    let work = scratch.join("web");
    fs::create_dir_all(&work).unwrap();
    let (status, body) = owner.post(
        "/api/desks",
        json!({ "name": "web", "dir": work.to_string_lossy(), "agent": "claude-code" }),
    );
    assert_eq!(status, 201, "creating the desk: {body}");
    owner.hook("s-1", &work, "SessionStart", json!({"source": "startup"}));
    owner.hook("s-1", &work, "UserPromptSubmit", json!({"prompt": "hello"}));
    let (status, task) = owner.post("/api/tasks", json!({ "desk": "web", "text": REQUEST }));
    assert_eq!(status, 201, "creating the task: {task}");
    let handover = owner.hook(
        "s-1",
        &work,
        "Stop",
        json!({"last_assistant_message": "Hi", "background_tasks": []}),
    );
    assert_eq!(handover["decision"], "block", "handed over: {handover}");
    owner.hook(
        "s-1",
        &work,
        "Stop",
        json!({"last_assistant_message": "Now writing the flag…", "background_tasks": []}),
    );
    task["id"].as_str().map(str::to_owned).unwrap_or_else(|| {
        panic!("no id in {task}");
    })
}
