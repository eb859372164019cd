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
//! * With a StatusNotifierItem host on the bus ([`crate::sni_host`]), the tray is our own item:
//!   `Activate` opens the window (its webview made then, and gone again a little after the
//!   window is hidden, WebKit's web process with it), the tooltip carries the counts; and
//!   each kind of notification comes with its actions, which the owner's `ActionInvoked`
//!   carries out through the owner service (a reminder recorded, a session launched, its
//!   permission answered).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{APP, AppEnv, Desktop, RunningApp, SCREEN};
use crate::notification_server::{NotifyCall, Recorder};
use crate::sni_host::Host;
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
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/artifacts");
    fs::create_dir_all(&artifacts).unwrap();
    fs::write(artifacts.join("app-window.png"), window.to_png()).unwrap();
    // A blank or unpainted window is one or two colours; text and badges give many.
    assert!(
        window.distinct_colours() > 20,
        "the window looks empty ({} colours):\n{}",
        window.distinct_colours(),
        app.diagnostics()
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

/// How many lines of the app's log have `needle`.
fn log_count(log: &Path, needle: &str) -> usize {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(needle))
        .count()
}

/// The app's processes whose command is WebKit's web process.
fn web_processes(pgid: i32) -> usize {
    webkit_processes(pgid, "WebKitWebProces")
}

/// The app's processes whose command (as the kernel shortens it, 15 bytes) is `comm`.
fn webkit_processes(pgid: i32, comm: &str) -> usize {
    crate::harness::processes_in_group(pgid)
        .iter()
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == comm)
        })
        .count()
}

/// The app's window processes: its program run again, with the window process's mark (which
/// WebKit's processes inherit, so the program's name too).
fn window_processes(pgid: i32) -> Vec<i32> {
    crate::harness::processes_in_group(pgid)
        .into_iter()
        .filter(|pid| {
            let comm = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            comm.trim() == "taskkeeper-app"
                && fs::read(format!("/proc/{pid}/environ")).is_ok_and(|env| {
                    env.split(|b| *b == 0)
                        .any(|v| v == b"TASKKEEPER_APP_WINDOW=1")
                })
        })
        .collect()
}

/// The app's processes running WebKit's network process.
fn network_processes(pgid: i32) -> usize {
    webkit_processes(pgid, "WebKitNetworkPr")
}

/// The shared libraries mapped into `pid` whose file name has one of `needles`.
fn mapped_libraries(pid: i32, needles: &[&str]) -> Vec<String> {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let mut found: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|path| {
            let name = path.rsplit('/').next().unwrap_or(path);
            needles.iter().any(|n| name.contains(n))
        })
        .map(str::to_owned)
        .collect();
    found.dedup();
    found
}

/// The first `Notify` call with this summary, waiting for it.
fn notification(recorder: &Recorder, app: &RunningApp, summary: &str) -> NotifyCall {
    nth_notification(recorder, app, summary, 0)
}

/// The `n`th (from 0) `Notify` call with this summary, waiting for it.
fn nth_notification(recorder: &Recorder, app: &RunningApp, summary: &str, n: usize) -> NotifyCall {
    wait_for(
        &format!("a notification {summary:?}"),
        Duration::from_secs(20),
        || {
            recorder
                .calls()
                .into_iter()
                .filter(|c| c.summary == summary)
                .nth(n)
        },
    )
    .unwrap_or_else(|why| {
        panic!(
            "{why}; calls: {:#?}\n{}",
            recorder.calls(),
            app.diagnostics()
        )
    })
}

/// The notification's actions as (key, label) pairs.
fn actions(call: &NotifyCall) -> Vec<(&str, &str)> {
    call.actions
        .chunks(2)
        .map(|a| (a[0].as_str(), a[1].as_str()))
        .collect()
}

#[test]
fn the_tray_item_opens_the_window_and_each_notification_acts_through_the_owner_service() {
    use std::os::unix::fs::PermissionsExt as _;
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let recorder = Recorder::start(&desktop.bus);
    let host = Host::start(&desktop.bus);
    // A stand-in for `claude -p`: it asks once to use a tool and keeps what it is told.
    let answers = tmp.path().join("answers");
    let stand_in = tmp.path().join("claude");
    fs::write(
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
    fs::set_permissions(&stand_in, fs::Permissions::from_mode(0o755)).unwrap();
    let mut env = AppEnv::new(tmp.path());
    env.extra
        .push(("TASKKEEPER_CLAUDE", stand_in.to_string_lossy().into_owned()));
    env.extra
        .push(("TASKKEEPER_WINDOW_KEEP_MS", "500".to_owned()));
    let mut app = RunningApp::start(&desktop, &env, tmp.path(), &[]);
    let owner = Owner::new(env.port, &env.token);
    app.wait("the daemon's /healthz", Duration::from_secs(60), || {
        owner.healthy()
    });
    app.wait_for_log("tray: a StatusNotifierItem", Duration::from_secs(30));
    app.wait_for_log("tray state idle", Duration::from_secs(30));
    let (pgid, log) = (app.pgid(), app.log_path.clone());
    let item = host
        .items()
        .into_iter()
        .next()
        .expect("the app registered its item");
    assert_eq!(
        host.tooltip(&item),
        ("Taskkeeper".into(), "nothing open".into())
    );
    // Hidden from the start: no webview, no web process, and no OpenGL driver in the app
    // (GTK started without its OpenGL probe: light.rs).
    assert_eq!(web_processes(pgid), 0, "a web process while hidden");
    let environ = fs::read(format!("/proc/{pgid}/environ")).unwrap_or_default();
    assert!(
        environ.split(|b| *b == 0).any(|v| v == b"GDK_GL=disable"),
        "the app did not restart with GTK's OpenGL off"
    );
    // (libEGL and libGLX themselves are linked by WebKit: only glvnd's dispatchers, small;
    // the driver behind them is what a probe loads.)
    let drivers = mapped_libraries(pgid, &["_mesa", "_dri.so", "libLLVM"]);
    assert!(
        drivers.is_empty(),
        "OpenGL loaded while hidden: {drivers:?}"
    );

    // A left click opens the window, a second hides it; a little later the webview goes.
    host.activate(&item);
    app.wait_for_log("webview created", Duration::from_secs(30));
    app.wait_for_log("window shown", Duration::from_secs(10));
    app.wait_for_log("ui rendered 0 open tasks", Duration::from_secs(60));
    let frame = desktop.fb_dir.join("Xvfb_screen0");
    app.wait("the window on the screen", Duration::from_secs(10), || {
        Screen::read_xwd(&frame).is_ok_and(|s| s.crop(420, 600).more_colours_than(20))
    });
    assert!(web_processes(pgid) > 0, "the window has no web process");
    // The webview is the window process's (window/process.rs): WebKit's OpenGL driver is
    // loaded there, never in the app.
    let windows = window_processes(pgid);
    assert_eq!(windows.len(), 1, "window processes: {windows:?}");
    let drivers = mapped_libraries(pgid, &["_mesa", "_dri.so", "libLLVM"]);
    assert!(drivers.is_empty(), "OpenGL loaded in the app: {drivers:?}");
    host.activate(&item);
    app.wait_for_log("window hidden", Duration::from_secs(10));
    app.wait_for_log("webview destroyed", Duration::from_secs(10));
    // The window process goes, and WebKit's web and network processes with it; the next
    // show starts them again.
    wait_for(
        "the window's processes to go",
        Duration::from_secs(20),
        || {
            (web_processes(pgid) == 0
                && network_processes(pgid) == 0
                && window_processes(pgid).is_empty())
            .then_some(())
        },
    )
    .unwrap_or_else(|why| panic!("{why}:\n{}", app.diagnostics()));
    let drivers = mapped_libraries(pgid, &["_mesa", "_dri.so", "libLLVM"]);
    assert!(
        drivers.is_empty(),
        "OpenGL stayed in the app after the window went: {drivers:?}"
    );
    // The menu opening starts a window process ahead of an Open, which makes its webview
    // hidden and loads the page with nothing on screen (window/process.rs follows the hidden
    // page further); unused, it goes again after the keep time, WebKit's processes with it.
    host.open_menu(&item);
    app.wait(
        "the window process started ahead",
        Duration::from_secs(10),
        || log_count(&log, "starts ahead of an open") == 1,
    );
    assert_eq!(log_count(&log, "window process started"), 2);
    app.wait("the webview made hidden", Duration::from_secs(60), || {
        log_count(&log, "webview created hidden") == 1
    });
    assert!(
        !Screen::read_xwd(&frame).is_ok_and(|s| s.crop(420, 600).more_colours_than(20)),
        "the window made ahead is on the screen"
    );
    app.wait(
        "the unused window process to go",
        Duration::from_secs(20),
        || {
            log_count(&log, "ending the window process") == 2
                && window_processes(pgid).is_empty()
                && web_processes(pgid) == 0
                && network_processes(pgid) == 0
        },
    );
    assert_eq!(log_count(&log, "window shown"), 1, "shown while unused");
    // The menu is on the item too (a panel's right button): opening it starts the window
    // process, and its first entry shows the window in that process.
    host.open_menu(&item);
    app.wait(
        "the window process started ahead",
        Duration::from_secs(10),
        || log_count(&log, "starts ahead of an open") == 2,
    );
    assert_eq!(host.click_menu(&item, "Open"), "Open — nothing open");
    app.wait("the window shown again", Duration::from_secs(30), || {
        log_count(&log, "window shown") == 2
    });
    // The page made hidden draws its first frame once shown: reported with the time since the
    // menu item, never from while it was hidden; the show made no webview.
    app.wait("the second first frame", Duration::from_secs(60), || {
        log_count(&log, "ms after the open") == 2
    });
    assert_eq!(log_count(&log, "webview created hidden"), 2);
    assert_eq!(
        log_count(&log, "webview created"),
        3,
        "the show made a webview"
    );
    assert_eq!(log_count(&log, "first frame while hidden"), 0);
    app.wait("the list rendered again", Duration::from_secs(60), || {
        log_count(&log, "ui rendered 0 open tasks") >= 2
    });
    assert_eq!(
        log_count(&log, "window process started"),
        3,
        "the open did not use the window process started ahead:\n{}",
        app.diagnostics()
    );
    host.activate(&item);
    app.wait("the window hidden again", Duration::from_secs(10), || {
        log_count(&log, "window hidden") == 2
    });

    // The two kinds that are off unless asked for.
    let (status, body) = owner.put(
        "/api/settings",
        json!({"notifications.blocked": "true", "notifications.finished": "true"}),
    );
    assert_eq!(status, 200, "{body}");

    // A stall: Open, Remind now, Snooze 1 h. Remind now records a reminder for the session.
    let id = drive_to_stall(&owner, tmp.path());
    let stall = notification(&recorder, &app, "Task stalled at web");
    assert_eq!(
        actions(&stall),
        [
            ("default", "Open"),
            ("open", "Open"),
            ("remind", "Remind now"),
            ("snooze", "Snooze 1 h")
        ]
    );
    app.wait("the tooltip's counts", Duration::from_secs(10), || {
        host.tooltip(&item).1 == "1 open · 1 stalled"
    });
    let work = tmp.path().join("web");
    // The ladder's last reminder is still waiting for the session: take it first.
    let before = owner.hook_wait("s-1", &work, Duration::from_secs(3));
    assert!(
        owner
            .hook_wait("s-1", &work, Duration::from_secs(2))
            .is_none(),
        "nothing more waits (had {before:?})"
    );
    recorder.invoke(stall.id, "remind");
    let reminder = owner
        .hook_wait("s-1", &work, Duration::from_secs(15))
        .unwrap_or_else(|| panic!("no reminder recorded:\n{}", app.diagnostics()));
    assert!(
        reminder.contains("Reminder #") && reminder.contains(&format!("Task {id}")),
        "{reminder}"
    );
    // A notification takes one action (the desktop closes it): the owner resumes the task,
    // it stalls again, and this time the owner snoozes it.
    let (status, body) = owner.post(&format!("/api/tasks/{id}/resume"), json!({}));
    assert_eq!(status, 200, "{body}");
    let again = nth_notification(&recorder, &app, "Task stalled at web", 1);
    recorder.invoke(again.id, "snooze");
    app.wait_for_log("stall snoozed", Duration::from_secs(10));

    // Blocked on its asker: Open only.
    let (status, body) = owner.post(
        &format!("/api/tasks/{id}/update"),
        json!({"status": "blocked", "text": "Which branch: main or dev?"}),
    );
    assert_eq!(status, 200, "{body}");
    let blocked = notification(&recorder, &app, "Task at web waits on its asker");
    assert_eq!(blocked.body, "Which branch: main or dev?");
    assert_eq!(actions(&blocked), [("default", "Open"), ("open", "Open")]);

    // The session ends holding the task: Launch a session, Open. Launch launches one.
    owner.hook("s-1", &work, "SessionEnd", json!({"reason": "exit"}));
    let ended = notification(&recorder, &app, "Session ended at web");
    assert_eq!(
        actions(&ended),
        [
            ("default", "Open"),
            ("launch", "Launch a session"),
            ("open", "Open")
        ]
    );
    recorder.invoke(ended.id, "launch");
    let launched = wait_for("a launched session", Duration::from_secs(20), || {
        let (_, list) = owner.get("/api/sessions");
        list["sessions"]
            .as_array()?
            .iter()
            .find(|s| s["headless"] == true && s["desk"] == "web")
            .cloned()
    })
    .unwrap_or_else(|why| panic!("{why}:\n{}", app.diagnostics()));

    // The launched session asks to use a tool: Allow, Deny, Open. Allow answers it.
    let asked = notification(&recorder, &app, "A session at web asks to use Bash");
    assert_eq!(asked.body, "touch x");
    assert_eq!(
        actions(&asked),
        [
            ("default", "Open"),
            ("allow", "Allow"),
            ("deny", "Deny"),
            ("open", "Open")
        ]
    );
    let session = launched["id"].as_str().unwrap().to_owned();
    recorder.invoke(asked.id, "allow");
    wait_for("the permission answered", Duration::from_secs(20), || {
        let (_, list) = owner.get("/api/sessions");
        list["sessions"]
            .as_array()?
            .iter()
            .any(|s| s["id"] == session.as_str() && s["permission"].is_null())
            .then_some(())
    })
    .unwrap_or_else(|why| panic!("{why}:\n{}", app.diagnostics()));
    let answer = wait_for(
        "the answer on the session's stdin",
        Duration::from_secs(10),
        || {
            fs::read_to_string(&answers)
                .ok()
                .filter(|a| a.contains("control_response"))
        },
    )
    .unwrap();
    assert!(answer.contains(r#""behavior":"allow""#), "{answer}");

    // A finished task: Open only.
    let (status, task) = owner.post("/api/tasks", json!({ "desk": "web", "text": "Tidy up" }));
    assert_eq!(status, 201, "{task}");
    let done = task["id"].as_str().unwrap();
    let (status, body) = owner.post(
        &format!("/api/tasks/{done}/update"),
        json!({"status": "done", "text": "Tidied"}),
    );
    assert_eq!(status, 200, "{body}");
    let finished = notification(&recorder, &app, "Task finished at web");
    assert_eq!(actions(&finished), [("default", "Open"), ("open", "Open")]);

    let status = app.stop();
    assert!(
        status.success(),
        "the app exited with {status}:\n{}",
        app.diagnostics()
    );
}

/// RSS and PSS (KiB) summed over the app's processes, from /proc.
fn memory_kib(pgid: i32) -> (u64, u64, usize) {
    let field = |text: &str, name: &str| -> u64 {
        text.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    let pids = crate::harness::processes_in_group(pgid);
    let (mut rss, mut pss) = (0, 0);
    for pid in &pids {
        rss += field(
            &fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default(),
            "VmRSS:",
        );
        pss += field(
            &fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap_or_default(),
            "Pss:",
        );
    }
    (rss, pss, pids.len())
}

/// Issue 13's figures for the app: what it weighs hidden (never opened, and after it was
/// opened and hidden again), and the time from the tray menu's Open to the window's first
/// painted frame (read from Xvfb's framebuffer). Not a test: run it on a quiet machine,
///
///     cargo build --profile dist -p taskkeeper-app
///     BENCH_APP=$CARGO_TARGET_DIR/dist/taskkeeper-app \
///         cargo test --release -p taskkeeper-app --test it -- --ignored --nocapture bench_
///
/// (`BENCH_APP`, default this test's own build: the app to measure, the shipped `dist` build
/// above or another commit's; `BENCH_IDLE_S`, default 60: each idle sample; `BENCH_RUNS`,
/// default 5: cold opens).
#[test]
#[ignore = "a benchmark (BENCHMARKS.md, The app)"]
fn bench_the_hidden_weight_and_the_open_from_the_tray_menu() {
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let (idle, runs) = (
        Duration::from_secs(number("BENCH_IDLE_S", 60)),
        number("BENCH_RUNS", 5),
    );
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let host = Host::start(&desktop.bus);
    let mut env = AppEnv::new(tmp.path());
    env.extra
        .push(("TASKKEEPER_WINDOW_KEEP_MS", "2000".to_owned()));
    let binary = std::env::var_os("BENCH_APP").map_or_else(|| APP.into(), PathBuf::from);
    println!("the app measured: {}", binary.display());
    let mut app = RunningApp::start_binary(&binary, &desktop, &env, tmp.path(), &[]);
    app.wait_for_log("tray state idle", Duration::from_secs(60));
    let (pgid, log) = (app.pgid(), app.log_path.clone());
    let item = host.items().into_iter().next().expect("the app's item");
    let frame = desktop.fb_dir.join("Xvfb_screen0");
    let painted = || Screen::read_xwd(&frame).is_ok_and(|s| s.crop(420, 600).more_colours_than(20));
    let sample = || {
        std::thread::sleep(idle);
        memory_kib(pgid)
    };
    std::thread::sleep(Duration::from_secs(10));
    let never_opened = sample();

    let open = |app: &mut RunningApp| {
        let shown = log_count(&log, "window shown");
        let started = Instant::now();
        host.click_menu(&item, "Open");
        // Polled every 10 ms (the harness's waits poll at 100 ms), leaving the cores to the app.
        while !painted() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no first frame:\n{}",
                app.diagnostics()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = started.elapsed();
        app.wait("the log", Duration::from_secs(10), || {
            log_count(&log, "window shown") > shown
        });
        took
    };
    let hide = |app: &mut RunningApp, gone: bool| {
        let destroyed = log_count(&log, "webview destroyed");
        host.activate(&item);
        app.wait("the window hidden", Duration::from_secs(10), || !painted());
        if gone {
            app.wait("the webview destroyed", Duration::from_secs(30), || {
                log_count(&log, "webview destroyed") > destroyed
                    && web_processes(pgid) == 0
                    && network_processes(pgid) == 0
            });
        }
    };
    let mut cold = Vec::new();
    for _ in 0..runs {
        cold.push(open(&mut app));
        std::thread::sleep(Duration::from_secs(1));
        hide(&mut app, true);
    }
    let mut warm = Vec::new();
    for _ in 0..runs {
        open(&mut app);
        std::thread::sleep(Duration::from_secs(1));
        hide(&mut app, false);
        // Within the 2 s the hidden window keeps its webview.
        warm.push(open(&mut app));
        hide(&mut app, true);
    }
    let shown_weight = {
        open(&mut app);
        let weight = sample();
        hide(&mut app, true);
        weight
    };
    let hidden_again = sample();

    // The app's own clock: from its `tray menu` line to the page's next render report.
    let seconds = |line: &str| -> Option<f64> {
        let time = line
            .split_whitespace()
            .next()?
            .split('T')
            .nth(1)?
            .trim_end_matches('Z');
        let mut parts = time.split(':').map(|p| p.parse::<f64>().ok());
        Some(parts.next()?? * 3600.0 + parts.next()?? * 60.0 + parts.next()??)
    };
    let text = fs::read_to_string(&log).unwrap_or_default();
    let mut in_app = Vec::new();
    let mut menu_at = None;
    for line in text.lines() {
        if line.contains("tray menu id=\"open\"") {
            menu_at = seconds(line);
        } else if line.contains("ui rendered")
            && let (Some(start), Some(end)) = (menu_at.take(), seconds(line))
        {
            in_app.push(Duration::from_secs_f64(end - start));
        }
    }
    // The app's own monotonic clock: from the open to the page's first frame on screen.
    let mut first_frames: Vec<Duration> = text
        .lines()
        .filter_map(|l| {
            let (before, _) = l.split_once(" ms after the open")?;
            before.rsplit(' ').next()?.parse().ok()
        })
        .map(Duration::from_millis)
        .collect();
    // Where a cold open's time goes: the window process's start (to its event loop), the
    // webview's creation in it, and the page's own clock at its first frame.
    let field = |needle: &str, key: &str| -> Vec<Duration> {
        text.lines()
            .filter(|l| l.contains(needle))
            .filter_map(|l| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(key)?.parse::<u64>().ok())
            })
            .map(Duration::from_millis)
            .collect()
    };
    let parts = [
        (
            "the window process's start, to its event loop",
            field("window process up", "ms="),
        ),
        ("the webview's creation", field("webview created", "ms=")),
        (
            "the page's own clock at its first frame",
            field("ms after the open", "page_ms="),
        ),
    ];
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let summary = |v: &mut Vec<Duration>| {
        if v.is_empty() {
            return "— | — | —".to_owned();
        }
        v.sort();
        format!(
            "{:.0} ms | {:.0} ms | {:.0} ms",
            ms(&v[v.len() / 2]),
            ms(&v[0]),
            ms(&v[v.len() - 1])
        )
    };
    println!("\n| tray menu Open to the first frame | median | min | max |\n|---|---|---|---|");
    println!(
        "| webview made on open (cold, {runs} runs) | {} |",
        summary(&mut cold)
    );
    println!(
        "| hidden < 2 s before, webview kept (warm, {runs} runs) | {} |",
        summary(&mut warm)
    );
    println!(
        "| the app's log: `tray menu` to the page's first render report (every cold open, {}) | {} |",
        in_app.len(),
        summary(&mut in_app)
    );
    println!(
        "| the app's clock: the open to the page's first frame (`ui_first_frame`, every cold open, {}) | {} |",
        first_frames.len(),
        summary(&mut first_frames)
    );
    for (what, mut times) in parts {
        println!(
            "| of which: {what} ({}) | {} |",
            times.len(),
            summary(&mut times)
        );
    }
    println!(
        "\n| {} s sample | RSS, all processes | PSS, all processes | processes |\n|---|---|---|---|",
        idle.as_secs()
    );
    for (what, (rss, pss, n)) in [
        ("hidden, never opened", never_opened),
        ("shown", shown_weight),
        ("hidden again, after the webview went", hidden_again),
    ] {
        println!("| {what} | {} MiB | {} MiB | {n} |", rss / 1024, pss / 1024);
    }
    // The menu opened ahead of its Open, as a person opens it (the panel's AboutToShow, the
    // click 300 ms later): the window process starts with the menu (window::prepare).
    let frames_before = log_count(&log, " ms after the open");
    let mut ahead = Vec::new();
    for _ in 0..runs {
        host.open_menu(&item);
        std::thread::sleep(Duration::from_millis(300));
        ahead.push(open(&mut app));
        std::thread::sleep(Duration::from_secs(1));
        hide(&mut app, true);
    }
    let text = fs::read_to_string(&log).unwrap_or_default();
    let mut ahead_clock: Vec<Duration> = text
        .lines()
        .filter_map(|l| {
            let (before, _) = l.split_once(" ms after the open")?;
            before.rsplit(' ').next()?.parse().ok()
        })
        .map(Duration::from_millis)
        .skip(frames_before)
        .collect();
    println!(
        "\n| the menu opened 300 ms before its Open (cold, {runs} runs) | {} |",
        summary(&mut ahead)
    );
    println!(
        "| the same, the app's clock ({}) | {} |",
        ahead_clock.len(),
        summary(&mut ahead_clock)
    );
    let _ = std::fs::read_to_string("/proc/loadavg").map(|l| println!("\nload: {l}"));
    app.stop();
}

/// Presses `keys` (X keysyms, in order) and lets them go again (in reverse), through XTEST on
/// the display: to the X server this is the keyboard.
fn press(display: &str, keys: &[u32]) {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::ConnectionExt as _;
    use x11rb::protocol::xtest::ConnectionExt as _;
    use x11rb::wrapper::ConnectionExt as _;
    let (conn, screen) = x11rb::connect(Some(display)).expect("the test's X display");
    let root = conn.setup().roots[screen].root;
    let (min, max) = (conn.setup().min_keycode, conn.setup().max_keycode);
    let map = conn
        .get_keyboard_mapping(min, max - min + 1)
        .unwrap()
        .reply()
        .unwrap();
    let per = usize::from(map.keysyms_per_keycode);
    let code = |sym: u32| {
        let at = map
            .keysyms
            .chunks(per)
            .position(|syms| syms.first() == Some(&sym))
            .unwrap_or_else(|| panic!("no key for keysym {sym:#x}"));
        min + u8::try_from(at).unwrap()
    };
    let codes: Vec<u8> = keys.iter().map(|k| code(*k)).collect();
    for c in &codes {
        conn.xtest_fake_input(
            x11rb::protocol::xproto::KEY_PRESS_EVENT,
            *c,
            0,
            root,
            0,
            0,
            0,
        )
        .unwrap();
    }
    for c in codes.iter().rev() {
        conn.xtest_fake_input(
            x11rb::protocol::xproto::KEY_RELEASE_EVENT,
            *c,
            0,
            root,
            0,
            0,
            0,
        )
        .unwrap();
    }
    conn.sync().unwrap();
}

const CONTROL_L: u32 = 0xffe3;
const ALT_L: u32 = 0xffe9;
const SHIFT_L: u32 = 0xffe1;
const KEY_K: u32 = 0x006b;
const F12: u32 = 0xffc9;

#[test]
fn the_global_shortcut_shows_and_hides_the_window_and_follows_its_setting() {
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let env = AppEnv::new(tmp.path());
    let mut app = RunningApp::start(&desktop, &env, tmp.path(), &[]);
    let owner = Owner::new(env.port, &env.token);
    let log = app.log_path.clone();
    app.wait_for_log(
        "global shortcut CmdOrCtrl+Alt+K registered",
        Duration::from_secs(60),
    );

    press(&desktop.display, &[CONTROL_L, ALT_L, KEY_K]);
    app.wait_for_log("window shown", Duration::from_secs(30));
    press(&desktop.display, &[CONTROL_L, ALT_L, KEY_K]);
    app.wait_for_log("window hidden", Duration::from_secs(10));

    // A new shortcut counts at once, and the old one is let go.
    let (status, body) = owner.put("/api/settings", json!({"app.shortcut": "Ctrl+Shift+F12"}));
    assert_eq!(status, 200, "{body}");
    app.wait_for_log(
        "global shortcut Ctrl+Shift+F12 registered",
        Duration::from_secs(10),
    );
    press(&desktop.display, &[CONTROL_L, ALT_L, KEY_K]);
    press(&desktop.display, &[CONTROL_L, SHIFT_L, F12]);
    app.wait(
        "the window shown by the new shortcut",
        Duration::from_secs(30),
        || log_count(&log, "window shown") == 2,
    );
    assert_eq!(
        log_count(&log, "global shortcut pressed"),
        3,
        "the old shortcut was still held:\n{}",
        app.diagnostics()
    );

    // A shortcut the setting refuses changes nothing.
    let (status, body) = owner.put("/api/settings", json!({"app.shortcut": "K"}));
    assert_eq!(status, 400, "{body}");
    assert!(body.to_string().contains("app.shortcut"), "{body}");

    let status = app.stop();
    assert!(
        status.success(),
        "the app exited with {status}:\n{}",
        app.diagnostics()
    );
}
