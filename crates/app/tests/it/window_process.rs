//! The window process on its own (`crates/app/src/window/process.rs`): the real `taskkeeper-app`
//! started with the window process's mark on a private Xvfb display, this test playing the
//! app at the other end of its pipes. It makes its webview when told to show (or hidden,
//! ahead of a show, when told to prepare: its page then loads unseen and counts its first
//! frame from the show), hands every call of its page over its stdout and waits for the
//! answer, opens no data directory, and exits when told to quit or when its stdin ends, its
//! WebKit processes with it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{APP, Desktop, Group};
use crate::support::wait_for;

/// The window process, with its reports read into a channel.
struct WindowProcess {
    group: Group,
    stdin: Option<ChildStdin>,
    reports: mpsc::Receiver<Value>,
}

impl WindowProcess {
    fn start(desktop: &Desktop, scratch: &std::path::Path) -> WindowProcess {
        let mut command = Command::new(APP);
        command
            .env("TASKKEEPER_APP_WINDOW", "1")
            .env("HOME", scratch.join("home"))
            .env("TASKKEEPER_DATA_DIR", scratch.join("data"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        desktop.env(&mut command);
        let mut group = Group::spawn("taskkeeper-app (window process)", &mut command);
        let stdin = group.child.stdin.take();
        let stdout = group.child.stdout.take().unwrap();
        let (tx, reports) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(report) = serde_json::from_str::<Value>(&line) {
                    let _ = tx.send(report);
                }
            }
        });
        WindowProcess {
            group,
            stdin,
            reports,
        }
    }

    fn order(&mut self, order: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{order}").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> Value {
        self.reports
            .recv_timeout(Duration::from_secs(60))
            .expect("a report from the window process")
    }

    fn exits(&mut self) -> std::process::ExitStatus {
        let started = Instant::now();
        loop {
            if let Some(status) = self.group.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the window process did not exit"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// What the app would answer a call with, near enough for the page to draw.
fn answer(command: &str) -> Value {
    match command {
        c if c.starts_with("list_") => json!([]),
        "get_settings" => json!({}),
        _ => Value::Null,
    }
}

#[test]
fn the_window_process_shows_its_page_over_its_pipes_and_holds_nothing_of_the_app() {
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());

    // Its stdin ending (the app gone) ends it, webview or not.
    let mut orphan = WindowProcess::start(&desktop, tmp.path());
    assert_eq!(orphan.next(), json!({ "report": "up" }));
    orphan.stdin = None;
    assert!(orphan.exits().success());

    let mut window = WindowProcess::start(&desktop, tmp.path());
    assert_eq!(window.next(), json!({ "report": "up" }));
    window.order(json!({ "order": "show" }));
    let (mut shown, mut calls) = (None, Vec::new());
    // Every call of the page comes over the pipe; it waits for each answer (the page's list
    // draws only once `list_*` is answered, and reports it).
    while !calls
        .iter()
        .any(|(c, _): &(String, Value)| c == "ui_rendered")
        || !calls.iter().any(|(c, _)| c == "ui_first_frame")
    {
        let report = window.next();
        match report["report"].as_str() {
            Some("shown") => shown = Some(report),
            Some("call") => {
                let command = report["command"].as_str().unwrap().to_owned();
                window.order(json!({
                    "order": "answer", "call": report["call"], "ok": true, "value": answer(&command)
                }));
                calls.push((command, report["args"].clone()));
            }
            _ => panic!("an unexpected report: {report}"),
        }
    }
    let shown = shown.expect("the window was shown");
    assert!(shown["error"].is_null(), "{shown}");
    assert!(shown["created_ms"].is_u64(), "{shown}");
    let (_, frame) = calls.iter().find(|(c, _)| c == "ui_first_frame").unwrap();
    assert!(frame["pageMs"].is_u64(), "the page's clock: {frame}");
    assert!(
        calls.iter().any(|(c, _)| c.starts_with("list_")),
        "the page read nothing: {calls:?}"
    );
    // A web process draws the page (in its process group).
    assert!(
        window
            .group
            .members()
            .iter()
            .any(|pid| std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "WebKitWebProces")),
        "no web process"
    );

    // An event reaches the page and changes nothing here; a hide is answered.
    window.order(json!({ "order": "emit", "event": "taskkeeper://sessions", "payload": {} }));
    window.order(json!({ "order": "hide" }));
    loop {
        let report = window.next();
        if report == json!({ "report": "hidden" }) {
            break;
        }
        // The page may re-read after the event.
        if report["report"] == "call" {
            let command = report["command"].as_str().unwrap().to_owned();
            window.order(json!({
                "order": "answer", "call": report["call"], "ok": true, "value": answer(&command)
            }));
        }
    }
    window.order(json!({ "order": "quit" }));
    assert!(window.exits().success());
    wait_for("WebKit's processes to go", Duration::from_secs(20), || {
        window.group.members().is_empty().then_some(())
    })
    .unwrap();
    // It opened nothing of the app's: no data directory, so no database, log or port.
    assert!(!tmp.path().join("data").exists(), "a data directory");
}

/// Answers the page's calls until `command` has come; what came, in order.
fn answer_until(window: &mut WindowProcess, command: &str) -> Vec<(String, Value)> {
    let mut calls = Vec::new();
    while !calls.iter().any(|(c, _): &(String, Value)| c == command) {
        let report = window.next();
        assert_eq!(report["report"], "call", "an unexpected report: {report}");
        let name = report["command"].as_str().unwrap().to_owned();
        window.order(json!({
            "order": "answer", "call": report["call"], "ok": true, "value": answer(&name)
        }));
        calls.push((name, report["args"].clone()));
    }
    calls
}

#[test]
fn a_window_made_ahead_loads_its_page_hidden_and_counts_its_first_frame_from_the_show() {
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let mut window = WindowProcess::start(&desktop, tmp.path());
    assert_eq!(window.next(), json!({ "report": "up" }));
    window.order(json!({ "order": "prepare" }));
    let prepared = window.next();
    assert_eq!(prepared["report"], "prepared", "{prepared}");
    assert!(prepared["created_ms"].is_u64(), "{prepared}");
    assert!(prepared["error"].is_null(), "{prepared}");
    // Hidden, the page loads, reads and draws its list, but reports no first frame.
    let hidden = answer_until(&mut window, "ui_rendered");
    assert!(
        !hidden.iter().any(|(c, _)| c == "ui_first_frame"),
        "a first frame while hidden: {hidden:?}"
    );
    window.order(json!({ "order": "show" }));
    // The page may still be reading (a call) when the show is reported, and its first frame
    // may come before or after that report: answer calls until both have come.
    let (mut shown, mut frame) = (None, None);
    while shown.is_none() || frame.is_none() {
        let report = window.next();
        if report["report"] == "shown" {
            shown = Some(report);
            continue;
        }
        assert_eq!(report["report"], "call", "an unexpected report: {report}");
        let name = report["command"].as_str().unwrap().to_owned();
        window.order(json!({
            "order": "answer", "call": report["call"], "ok": true, "value": answer(&name)
        }));
        if name == "ui_first_frame" {
            frame = Some(report["args"].clone());
        }
    }
    let (shown, frame) = (shown.unwrap(), frame.unwrap());
    assert!(shown["error"].is_null(), "{shown}");
    assert!(
        shown["created_ms"].is_null(),
        "the show made a webview: {shown}"
    );
    assert!(frame["pageMs"].is_u64(), "the page's clock: {frame}");
    assert!(
        frame["hiddenMs"].is_u64(),
        "not counted from the show: {frame}"
    );
    // Its stdin ending ends it with its webview, WebKit's processes with it.
    window.stdin = None;
    assert!(window.exits().success());
    wait_for("WebKit's processes to go", Duration::from_secs(20), || {
        window.group.members().is_empty().then_some(())
    })
    .unwrap();
}
