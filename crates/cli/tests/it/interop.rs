//! Interoperability with the A2A reference SDK: the Python `a2a-sdk` client (pinned below)
//! fetches the card (the public one without credentials, then the extended one), sends, gets,
//! lists, sets a webhook (and gets its first push), streams, subscribes and cancels against a
//! real daemon, in v1.0 over JSON-RPC, over HTTP+JSON (the SDK's REST transport, picked from
//! the card's HTTP+JSON interface) and over gRPC (its gRPC transport, on the card's GRPC
//! interface and tenant), and in v0.3 (the same package's v0.3 compatibility client), through
//! `tests/interop/a2a_sdk_client.py`; it sends file, file-URL and data parts and gets file and
//! data artifacts back, fetching the file's bytes from the daemon. This test plays the worker:
//! when the script asks, it ends the task through the owner API (after checking the asker's
//! file part was saved for it, and attaching the files and data the script names), so a
//! blocking send can come back INPUT_REQUIRED, then COMPLETED with the summary.
//!
//! The SDK is installed from PyPI into a venv cached under the Cargo target directory, keyed
//! by its version, so only the first run pays for `pip install`. No network (or no PyPI) is a
//! failure with the reason, never a silent pass: the requirement is that a stock client works.

use std::io::{BufRead as _, BufReader, Read as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{Served, TOKEN, bin, request};

/// The reference SDK release the test pins; its v0.3 client is `a2a.compat.v0_3`. Installed
/// with its `signing` extra (PyJWT), whose verifier checks the signed cards (`signed_cards.rs`),
/// and its `grpc` extra (grpcio), whose transport speaks the gRPC binding.
const A2A_SDK: &str = "1.3.0";
/// The extras installed with it; the venv's name says them, so a new extra makes a new venv.
const EXTRAS: &str = "grpc,signing";
/// `pip install` of the SDK and its dependencies (~40 packages); generous for a slow mirror.
const PIP_DEADLINE: Duration = Duration::from_secs(600);
/// One run of the script: a dozen calls, two of them waiting on the worker.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(120);

pub(crate) fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/interop/a2a_sdk_client.py")
}

/// The Cargo target directory, found from the binary under test (`<target>/<profile>/taskkeeper`)
/// so the cache follows `CARGO_TARGET_DIR` without the variable being set at run time.
pub(crate) fn target_dir() -> PathBuf {
    let exe = Path::new(bin());
    exe.parent()
        .and_then(Path::parent)
        .map(Path::to_owned)
        .unwrap_or_else(std::env::temp_dir)
}

/// Wait for a child with a deadline; kill it when the deadline passes.
pub(crate) fn wait_deadline(
    child: &mut Child,
    deadline: Duration,
    what: &str,
) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not finish within {deadline:?}; killed it");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A venv with `a2a-sdk[EXTRAS]==A2A_SDK`, built once and reused. It is built under a temporary name
/// and renamed into place, so a run killed halfway never leaves a venv that looks ready.
pub(crate) fn sdk_python() -> PathBuf {
    let root = target_dir().join("a2a-interop");
    let spec = format!("a2a-sdk[{EXTRAS}]=={A2A_SDK}");
    let venv = root.join(format!(
        "venv-a2a-sdk-{}-{A2A_SDK}",
        EXTRAS.replace(',', "-")
    ));
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    if ready.exists() {
        return python;
    }
    std::fs::create_dir_all(&root).unwrap();
    let building = root.join(format!(
        "venv-a2a-sdk-{}-{A2A_SDK}.building-{}",
        EXTRAS.replace(',', "-"),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&building);
    let made = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&building)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run python3 to make a venv (is Python 3 installed?): {e}")
        });
    assert!(
        made.status.success(),
        "python3 -m venv failed (Debian needs the python3-venv package): {}",
        String::from_utf8_lossy(&made.stderr)
    );
    let mut pip = Command::new(building.join("bin/python"))
        .args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "--timeout",
            "30",
            "--retries",
            "2",
        ])
        .arg(&spec)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Drain stderr while waiting: a full pipe would block pip.
    let mut err = pip.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let status = wait_deadline(&mut pip, PIP_DEADLINE, &format!("pip install {spec}"));
    let stderr = reader.join().unwrap_or_default();
    if !status.success() {
        let _ = std::fs::remove_dir_all(&building);
        panic!(
            "could not install {spec} from PyPI into a venv ({status}). The A2A \
             interoperability test needs the reference SDK and cannot pass without it: check the \
             network or the pip index. pip said:\n{stderr}"
        );
    }
    std::fs::write(building.join(".installed"), format!("{spec}\n")).unwrap();
    // Another run may have finished first; either venv is as good.
    if std::fs::rename(&building, &venv).is_err() {
        let _ = std::fs::remove_dir_all(&building);
        assert!(
            ready.exists(),
            "could not move the new venv into {}",
            venv.display()
        );
    }
    python
}

/// The desk's directory and the daemon's data directory, as the worker's side sees them.
pub(crate) struct Worker<'a> {
    pub(crate) desk_dir: &'a Path,
    pub(crate) data_dir: &'a Path,
}

/// The worker's side: end the open, WORKING task whose request is `ask["request"]`, as the
/// worker's `task update` would, with `ask["status"]` and `ask["text"]`. WORKING matters for
/// the follow-up: after `blocked` the task waits on the asker, and only the asker's answer
/// makes it WORKING again. `ask["saved"]` is the content of a file part the daemon must have
/// saved for the worker; `ask["files"]` ({name: content}) are written in the desk's directory
/// and attached, `ask["data"]` attached as data.
fn end_as_worker(port: u16, desk: &str, worker: &Worker<'_>, ask: &Value) {
    let text = ask["request"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, body) = request(
            port,
            "GET",
            &format!("/api/tasks?state=open&desk={desk}"),
            "",
        )
        .expect("the daemon answers the owner API");
        assert_eq!(code, 200, "{body}");
        let tasks: Value = serde_json::from_str(&body).unwrap();
        let found = tasks["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["request"] == text && t["state"] == "working")
            .map(|t| t["id"].as_str().unwrap().to_owned());
        if let Some(id) = found {
            if let Some(saved) = ask["saved"].as_str() {
                // The daemon saves a file part after the task's commit (the task may be seen
                // WORKING a moment before) and before it answers the send.
                let dir = worker.data_dir.join("files").join(&id).join("in");
                let read = || -> Vec<String> {
                    std::fs::read_dir(&dir)
                        .map(|entries| {
                            entries
                                .filter_map(|e| std::fs::read_to_string(e.ok()?.path()).ok())
                                .collect()
                        })
                        .unwrap_or_default()
                };
                let saved_by = Instant::now() + Duration::from_secs(10);
                let mut contents = read();
                while !contents.iter().any(|c| c == saved) && Instant::now() < saved_by {
                    std::thread::sleep(Duration::from_millis(25));
                    contents = read();
                }
                assert!(
                    contents.iter().any(|c| c == saved),
                    "the asker's file part was not saved for the worker in {}: {contents:?}",
                    dir.display()
                );
            }
            let mut files = Vec::new();
            for (name, content) in ask["files"].as_object().into_iter().flatten() {
                let path = worker.desk_dir.join(name);
                std::fs::write(&path, content.as_str().unwrap()).unwrap();
                files.push(path.display().to_string());
            }
            let body = json!({"status": ask["status"], "text": ask["text"], "files": files,
                              "data": ask.get("data").cloned().unwrap_or(json!([]))})
            .to_string();
            let (code, answer) = request(port, "POST", &format!("/api/tasks/{id}/update"), &body)
                .expect("the daemon answers the owner API");
            assert_eq!(code, 200, "{answer}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "no working task with request {text:?} appeared: {body}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Run the script for one protocol version and binding; return its check lines, or fail with
/// all of them.
fn run_script(
    python: &Path,
    served: &Served,
    worker: &Worker<'_>,
    desk: &str,
    version: &str,
    binding: &str,
) -> Vec<Value> {
    let url = format!("{}/a2a/{desk}", served.url());
    let mut command = Command::new(python);
    command
        .arg(script())
        .args(["--url", &url, "--token", TOKEN, "--version", version])
        .args(["--binding", binding]);
    run_client(
        command,
        served.port,
        worker,
        desk,
        &format!("the reference SDK's v{version} {binding} client"),
    )
}

/// Run an SDK client script (`command`) that prints one JSON line per check and asks the
/// worker's side to end tasks (`{"await": "worker", ...}`), playing that side through the
/// owner API on `port`; its check lines, or a failure with all of them.
pub(crate) fn run_client(
    mut command: Command,
    port: u16,
    worker: &Worker<'_>,
    desk: &str,
    what: &str,
) -> Vec<Value> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut err = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });

    let deadline = Instant::now() + SCRIPT_DEADLINE;
    let mut lines = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("the script printed a non-JSON line ({e}): {line}"));
                if v["await"] == "worker" {
                    end_as_worker(port, desk, worker, &v);
                } else {
                    lines.push(v);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not finish within {SCRIPT_DEADLINE:?}: {lines:#?}");
            }
        }
    }
    let status = wait_deadline(&mut child, Duration::from_secs(10), "the SDK script");
    let stderr = err_reader.join().unwrap_or_default();
    let failed: Vec<&Value> = lines.iter().filter(|l| l["ok"] != true).collect();
    assert!(
        status.success() && failed.is_empty() && lines.last().is_some_and(|l| l["check"] == "all"),
        "{what} disagrees with our server ({status}).\n\
         failed checks:\n{failed:#?}\nall lines:\n{lines:#?}\nstderr:\n{stderr}"
    );
    lines
}

/// A daemon with the desk `web` for an SDK's script, whose webhook receiver is on this
/// machine (which the owner allows).
struct Stage {
    served: Served,
    data_dir: tempfile::TempDir,
    desk_dir: tempfile::TempDir,
}

impl Stage {
    fn web() -> Self {
        let data_dir = tempfile::tempdir().unwrap();
        let served = Served::start(data_dir.path());
        let desk_dir = tempfile::tempdir().unwrap();
        let desk = json!({"name": "web", "dir": desk_dir.path(), "agent": "generic"}).to_string();
        let (code, body) = request(served.port, "POST", "/api/desks", &desk).unwrap();
        assert_eq!(code, 201, "{body}");
        let allow = json!({"push.allow_loopback_targets": "true"}).to_string();
        let (code, body) = request(served.port, "PUT", "/api/settings", &allow).unwrap();
        assert_eq!(code, 200, "{body}");
        Self {
            served,
            data_dir,
            desk_dir,
        }
    }

    fn worker(&self) -> Worker<'_> {
        Worker {
            desk_dir: self.desk_dir.path(),
            data_dir: self.data_dir.path(),
        }
    }
}

#[test]
fn the_reference_sdk_client_works_against_us_in_v1_0_and_v0_3_and_over_http_json_and_grpc() {
    let python = sdk_python();
    let stage = Stage::web();
    let (served, worker) = (&stage.served, stage.worker());

    // One desk for both runs: each run ends every task it opens, so the next starts on an
    // idle desk (its first send must come back WORKING, not queued).
    let runs = [
        ("1.0", "jsonrpc"),
        ("1.0", "http+json"),
        ("1.0", "grpc"),
        ("0.3", "jsonrpc"),
    ];
    for (version, binding) in runs {
        let lines = run_script(&python, served, &worker, "web", version, binding);
        let checks: Vec<&str> = lines.iter().filter_map(|l| l["check"].as_str()).collect();
        for must in [
            "card",
            "extended-card",
            "send-nonblocking",
            "get-task",
            "push-config",
            "cancel",
            "stream",
            "subscribe-cancel",
            "blocking-input-required",
            "blocking-completed",
            "file-parts-artifacts",
        ] {
            assert!(
                checks.contains(&must),
                "v{version} {binding}: check {must} did not run: {checks:?}"
            );
        }
    }
}

/// The JavaScript SDK's client (`@a2a-js/sdk`, `tests/interop/js`) on this machine, over each
/// binding the card names: JSON-RPC and HTTP+JSON at the desk's URL, gRPC at the daemon's port
/// with the desk as tenant and the token in metadata. Card, send, get, cancel, a stream to the
/// task's end, a subscription to a task sent without waiting, ListTasks without and with its
/// filters (state, context, pages) and a webhook's first push. Over TLS from another machine
/// the same script runs in `network_asker.rs`.
#[test]
fn the_js_sdk_client_works_against_us_over_json_rpc_http_json_and_grpc() {
    let script = crate::network_asker::js_client();
    let node = crate::network_asker::which("node");
    let stage = Stage::web();
    let (served, worker) = (&stage.served, stage.worker());
    let url = format!("{}/a2a/web", served.url());
    for binding in ["JSONRPC", "HTTP+JSON", "GRPC"] {
        let mut command = Command::new(&node);
        command.arg(&script).args([
            "--url",
            &url,
            "--token",
            TOKEN,
            "--binding",
            binding,
            "--webhook-host",
            "127.0.0.1",
        ]);
        let what = format!("the JS SDK's {binding} client");
        let lines = run_client(command, served.port, &worker, "web", &what);
        let checks: Vec<&str> = lines.iter().filter_map(|l| l["check"].as_str()).collect();
        assert_eq!(checks, crate::network_asker::JS_CHECKS, "{binding}");
    }
}
