//! The real window through WebDriver: `tauri-driver` 2.1.0 in front of Debian's
//! `WebKitWebDriver` (package `webkit2gtk-driver`), on a private Xvfb display and D-Bus
//! session, spoken to in plain W3C WebDriver over HTTP (no Node).
//!
//! A task created over A2A (an asker's `SendMessage`) must appear in the open-tasks list, which
//! the page fills through the Tauri transport (commands and events); the row is found by its
//! `data-task-id`. The same session calls `set_autostart` through the page's IPC, and the login
//! entry appears in (and leaves) the app's own config home.
//!
//! tauri-driver is not packaged: the first run installs it with
//! `cargo install tauri-driver --version 2.1.0 --locked` into `<target>/tools/`, where later
//! runs find it (about a minute on two cores).

use std::fs;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{APP, AppEnv, Desktop, Group};
use crate::support::{Owner, free_port, wait_for};

const TAURI_DRIVER_VERSION: &str = "2.1.0";
/// The W3C name of an element reference in WebDriver answers.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

#[test]
fn the_open_tasks_list_shows_a_task_created_over_a2a() {
    let driver_bin = tauri_driver();
    let tmp = tempfile::tempdir().unwrap();
    let desktop = Desktop::start(tmp.path());
    let env = AppEnv::new(tmp.path());
    let (port, native_port) = (free_port(), free_port());
    let driver_log = tmp.path().join("tauri-driver.log");
    let mut command = Command::new(&driver_bin);
    command
        .args(["--port", &port.to_string()])
        .args(["--native-port", &native_port.to_string()])
        .stdin(Stdio::null())
        .stdout(fs::File::create(&driver_log).unwrap())
        .stderr(fs::File::create(tmp.path().join("tauri-driver.stderr")).unwrap());
    desktop.env(&mut command);
    // tauri-driver starts WebKitWebDriver, which starts the app with this environment.
    env.apply(&mut command);
    let _driver = Group::spawn("tauri-driver", &mut command);
    let diagnostics = || {
        let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
        format!(
            "--- tauri-driver ---\n{}{}\n--- app log ---\n{}",
            read(&driver_log),
            read(&tmp.path().join("tauri-driver.stderr")),
            read(&env.log())
        )
    };
    wait_for("tauri-driver to listen", Duration::from_secs(20), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .unwrap_or_else(|why| panic!("{why}\n{}", diagnostics()));

    let wd = WebDriver::new(port);
    let (status, session) = wd.call(
        "POST",
        "/session",
        Some(
            json!({ "capabilities": { "alwaysMatch": { "tauri:options": {
                "application": APP,
                "args": ["--show"],
            }}}}),
        ),
    );
    assert_eq!(status, 200, "new session: {session}\n{}", diagnostics());
    let sid = session["value"]["sessionId"].as_str().unwrap().to_owned();
    let s = |path: &str| format!("/session/{sid}{path}");

    let owner = Owner::new(env.port, &env.token);
    wait_for("the app's daemon", Duration::from_secs(30), || {
        owner.healthy().then_some(())
    })
    .unwrap_or_else(|why| panic!("{why}\n{}", diagnostics()));
    let work = tmp.path().join("web");
    fs::create_dir_all(&work).unwrap();
    let (status, body) = owner.post(
        "/api/desks",
        json!({ "name": "web", "dir": work.to_string_lossy(), "agent": "claude-code" }),
    );
    assert_eq!(status, 201, "{body}");
    let (status, asker) = owner.post("/api/askers", json!({ "name": "reviewer" }));
    assert_eq!(status, 201, "{asker}");
    let asker_token = asker["token"].as_str().unwrap();

    // An asker gives the desk a task over A2A.
    let (status, sent) = owner.send(
        "POST",
        "/a2a/web",
        asker_token,
        &[("A2A-Version", "1.0")],
        Some(
            json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "wd-1", "role": "ROLE_USER",
                        "parts": [{"text": "Add a --json flag\nand a test for it"}]},
            "configuration": {"returnImmediately": true}}}),
        ),
    );
    assert_eq!(status, 200, "{sent}");
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();

    // The row appears in the window, put there by the page's Tauri transport.
    let selector = format!("[data-task-id=\"{id}\"]");
    let element = wait_for("the task's row", Duration::from_secs(20), || {
        let (status, found) = wd.call(
            "POST",
            &s("/element"),
            Some(json!({ "using": "css selector", "value": selector })),
        );
        (status == 200).then(|| found["value"][ELEMENT].as_str().unwrap().to_owned())
    })
    .unwrap_or_else(|why| panic!("{why}\n{}", diagnostics()));
    // The row's DOM text: what the page put there, however the stylesheet lays it out.
    let (_, text) = wd.call(
        "POST",
        &s("/execute/sync"),
        Some(
            json!({ "script": "return arguments[0].textContent", "args": [{ ELEMENT: element }] }),
        ),
    );
    let text = text["value"].as_str().unwrap_or_default();
    assert!(text.contains("Add a --json flag"), "the row says {text:?}");
    let (_, transport) = wd.call(
        "POST",
        &s("/execute/sync"),
        Some(json!({ "script": "return '__TAURI_INTERNALS__' in window", "args": [] })),
    );
    assert_eq!(transport["value"], true, "the page runs inside Tauri");

    // Autostart through the page's IPC writes, then removes, the login entry.
    let autostart_dir = env.config_home.join("autostart");
    let entries = || -> Vec<PathBuf> {
        fs::read_dir(&autostart_dir)
            .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
            .unwrap_or_default()
    };
    assert_eq!(
        invoke(&wd, &sid, "get_autostart", json!({})),
        json!({ "ok": false })
    );
    assert_eq!(
        invoke(&wd, &sid, "set_autostart", json!({ "enabled": true })),
        json!({ "ok": true })
    );
    let entry = entries();
    assert_eq!(entry.len(), 1, "one login entry: {entry:?}");
    let desktop_file = fs::read_to_string(&entry[0]).unwrap();
    assert!(
        desktop_file.contains(APP),
        "the entry starts this app: {desktop_file}"
    );
    assert_eq!(
        invoke(&wd, &sid, "set_autostart", json!({ "enabled": false })),
        json!({ "ok": false })
    );
    assert!(entries().is_empty(), "the login entry is gone");

    let (status, _) = wd.call("DELETE", &s(""), None);
    assert_eq!(status, 200);
}

/// Calls a Tauri command from inside the page, as the UI does; answers `{"ok": value}` or
/// `{"err": error}`.
fn invoke(wd: &WebDriver, sid: &str, cmd: &str, args: Value) -> Value {
    let script = "const done = arguments[arguments.length - 1];\
        window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])\
          .then((ok) => done({ ok }), (err) => done({ err }));";
    let (status, answer) = wd.call(
        "POST",
        &format!("/session/{sid}/execute/async"),
        Some(json!({ "script": script, "args": [cmd, args] })),
    );
    assert_eq!(status, 200, "{cmd}: {answer}");
    answer["value"].clone()
}

/// A W3C WebDriver client: JSON over HTTP.
struct WebDriver {
    agent: ureq::Agent,
    base: String,
}

impl WebDriver {
    fn new(port: u16) -> WebDriver {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(90)))
            .http_status_as_error(false)
            .build()
            .into();
        WebDriver {
            agent,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let request = ureq::http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base));
        let result = match body {
            Some(body) => self.agent.run(
                request
                    .header("Content-Type", "application/json")
                    .body(body.to_string())
                    .unwrap(),
            ),
            None => self.agent.run(request.body(()).unwrap()),
        };
        let mut res = result.unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let status = res.status().as_u16();
        (status, res.body_mut().read_json().unwrap_or(Value::Null))
    }
}

/// The tauri-driver binary, installed on first use into the target directory's `tools/`. A
/// lock file keeps two test runs from installing at once.
fn tauri_driver() -> PathBuf {
    let target = Path::new(APP)
        .parent()
        .and_then(Path::parent)
        .expect("the app binary sits in <target>/<profile>/");
    let tools = target.join("tools");
    let root = tools.join(format!("tauri-driver-{TAURI_DRIVER_VERSION}"));
    let bin = root.join("bin/tauri-driver");
    if bin.exists() {
        return bin;
    }
    fs::create_dir_all(&tools).unwrap();
    let lock = fs::File::create(tools.join("tauri-driver.lock")).unwrap();
    lock.lock().unwrap();
    if !bin.exists() {
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        eprintln!(
            "installing tauri-driver {TAURI_DRIVER_VERSION} into {}",
            root.display()
        );
        let status = Command::new(cargo)
            .args(["install", "tauri-driver", "--locked", "--version"])
            .arg(TAURI_DRIVER_VERSION)
            .arg("--root")
            .arg(&root)
            .arg("--target-dir")
            .arg(tools.join("tauri-driver-build"))
            .env_remove("CARGO_TARGET_DIR")
            .env_remove("RUSTFLAGS")
            .status()
            .expect("running cargo install");
        assert!(status.success(), "cargo install tauri-driver failed");
    }
    bin
}
