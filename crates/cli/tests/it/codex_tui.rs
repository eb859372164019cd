//! The real Codex CLI 0.171.0 TUI, idle at a desk, woken through the app server that runs its
//! thread: an asker's task sent over A2A goes in as a `turn/start` into the session's thread
//! on the app server's control socket (not the tmux paste), and the model's `task_update`
//! over MCP completes the asker's blocking SendMessage. Offline, against
//! `tests/agents/fake_model.py`, inside a network namespace with only loopback, as the other
//! real-agent tests (`codex_gemini.rs`, whose harness this uses).
//!
//! Codex runs a TUI's hooks from its first turn on, so the owner says hello first: a session
//! Taskkeeper knows, idle after its turn, no Stop running and nothing waiting.
//!
//! The app server is the one a TUI shares with its hooks, as in Codex's default daemon mode,
//! but started by the test (`codex app-server --listen unix://` in the test's Codex home)
//! and joined by the TUI with `--remote unix://`: the managed daemon the TUI would start
//! itself copies Codex's 424 MB package into the home and outlives the TUI
//! (docs/agents.md). The socket, the hooks running in the server and the thread are the
//! same.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::codex_gemini::{
    FakeModel, Kind, RUN, in_a_loopback_namespace, install, offline_config, path_with, post,
    the_task_was_a_taskkeeper_turn,
};
use crate::support::{Served, bin, ok, request, stderr, stdout};

/// A child process killed with the test.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Codex's control socket, a link to a socket under `/tmp/codex-daemon-<uid>/`: what it
/// links to goes with the test (Codex leaves it behind when its server is killed).
struct ControlSocket(PathBuf);

impl Drop for ControlSocket {
    fn drop(&mut self) {
        if let Ok(target) = fs::read_link(&self.0) {
            let _ = fs::remove_file(&target);
            let mut lock = target.into_os_string();
            lock.push(".lock");
            let _ = fs::remove_file(lock);
        }
    }
}

/// A tmux server on its own socket, killed with the test.
pub(crate) struct Tmux(pub(crate) PathBuf);

impl Tmux {
    pub(crate) fn run(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.0)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run tmux (apt package tmux): {e}"))
    }

    /// Its one session, `cx` (180×50), running `command` with exactly `env`.
    pub(crate) fn start(&self, command: &str, env: &[(&str, String)]) {
        let status = Command::new("tmux")
            .arg("-S")
            .arg(&self.0)
            .args(["-f", "/dev/null", "new-session", "-d", "-s", "cx"])
            .args(["-x", "180", "-y", "50", command])
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .status()
            .unwrap_or_else(|e| panic!("cannot run tmux (apt package tmux): {e}"));
        assert!(status.success(), "tmux new-session failed: {status}");
    }

    pub(crate) fn screen(&self) -> String {
        stdout(&self.run(&["capture-pane", "-p", "-J", "-t", "cx"]))
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

pub(crate) fn wait_for<T>(
    what: &str,
    report: &dyn Fn() -> String,
    f: impl FnMut() -> Option<T>,
) -> T {
    crate::support::until_reported(what, RUN, report, f)
}

/// What a run of [`tui_scenario`] leaves to check: the model's requests, the asker's task (as
/// the owner API shows it) and the daemon's log.
pub(crate) struct Ran {
    pub(crate) requests: Vec<Value>,
    pub(crate) task: Value,
    pub(crate) log: String,
}

/// The idle TUI takes an asker's task through its app server and ends it over MCP. With
/// `quiet`, the task's request makes the model end its turn with last words and no
/// `task_update`, on a ladder of seconds, so it ends the task only once the watchdog's
/// reminder reached it (the `reminders` module checks that).
pub(crate) fn tui_scenario(program: &Path, quiet: bool) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("web"));
    for d in [&home, &work] {
        fs::create_dir_all(d).unwrap();
    }
    let codex_home = home.join(".codex");
    let model = FakeModel::start(dir.path());
    let d = Served::start(&dir.path().join("data"));
    ok(d.cli(&[
        "desk",
        "add",
        "web",
        "--dir",
        &work.to_string_lossy(),
        "--agent",
        "codex",
    ]));
    offline_config(Kind::Codex, &home, &work, model.port);
    // `connect` finds `codex` on the PATH, to trust the hooks through its app server.
    let path = path_with(program);
    let env: Vec<(&str, String)> = vec![
        ("PATH", path.to_string_lossy().into_owned()),
        ("HOME", home.to_string_lossy().into_owned()),
        ("CODEX_HOME", codex_home.to_string_lossy().into_owned()),
        ("TASKKEEPER_URL", d.url()),
        (
            "TASKKEEPER_DATA_DIR",
            d.data_dir.to_string_lossy().into_owned(),
        ),
        ("FAKE_API_KEY", "offline".into()),
        ("TERM", "xterm-256color".into()),
    ];
    let mut connect = Command::new(bin());
    connect.args(["connect", "codex", "--force"]).env_clear();
    connect.envs(env.iter().map(|(k, v)| (k, v)));
    ok(connect.output().unwrap());

    // The shared app server; the session's hooks run in it.
    let socket = ControlSocket(codex_home.join("app-server-control/app-server-control.sock"));
    let log = fs::File::create(dir.path().join("app-server.log")).unwrap();
    let _server = Killed(
        Command::new(program)
            .args(["app-server", "--listen", "unix://"])
            .current_dir(&work)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    wait_for("the app server's control socket", &String::new, || {
        fs::metadata(&socket.0).is_ok().then_some(())
    });
    let tmux = Tmux(dir.path().join("tmux.sock"));
    let command = format!(
        "cd '{}' && exec '{}' --remote unix://",
        work.display(),
        program.display()
    );
    tmux.start(&command, &env);

    let report = || {
        let read = |p: &Path| fs::read_to_string(p).unwrap_or_default();
        format!(
            "\n--- the TUI:\n{}\n--- the app server's log:\n{}\n--- the daemon's log:\n{}",
            tmux.screen(),
            read(&dir.path().join("app-server.log")),
            read(&d.data_dir.join("taskkeeper.log")),
        )
    };
    // Codex runs a TUI's hooks from its first turn on (SessionStart included): the owner
    // says hello, and the session is idle at the desk after that turn.
    wait_for("the TUI's prompt box", &report, || {
        tmux.screen().contains("Ask Codex").then_some(())
    });
    let typed = tmux.run(&["send-keys", "-t", "cx", "-l", "hello"]);
    assert!(typed.status.success(), "{}", stderr(&typed));
    std::thread::sleep(Duration::from_millis(300));
    let typed = tmux.run(&["send-keys", "-t", "cx", "Enter"]);
    assert!(typed.status.success(), "{}", stderr(&typed));
    let session = wait_for(
        "the TUI's session, idle after its first turn",
        &report,
        || {
            let (_, list) = request(d.port, "GET", "/api/sessions", "")?;
            let list: Value = serde_json::from_str(&list).ok()?;
            let s = list["sessions"].get(0)?.clone();
            (s["activity"] == "idle" && s["lastWords"] == "Hello.").then_some(s)
        },
    );
    assert_eq!(session["agent"], "codex", "{session}");
    // Its hooks ran in the shared app server, which runs threads for every TUI joined to it
    // and is in none of their panes: they name no process, so no pane is pasted into.
    assert!(session["pid"].is_null(), "{session}");

    let (code, body) = request(d.port, "POST", "/api/askers", r#"{"name":"ci-bot"}"#).unwrap();
    assert_eq!(code, 201, "{body}");
    let asker: Value = serde_json::from_str(&body).unwrap();
    let token = asker["token"].as_str().unwrap().to_owned();
    let (text, summary) = if quiet {
        // Codex sessions go by the default first rung; seconds, so the ladder runs here.
        ok(d.cli(&["settings", "set", "reminders.first_after.default", "2s"]));
        ok(d.cli(&["settings", "set", "reminders.ladder", "2s,2s,5s,10s"]));
        (
            "Add a --json flag. GO QUIET",
            "Finished it after the reminder.",
        )
    } else {
        ("Add a --json flag", "Finished it offline.")
    };
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": false}}})
    .to_string();
    let (tx, rx) = mpsc::channel();
    let port = d.port;
    let sent = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(post(port, "/a2a/web", &token, &send, RUN));
    });
    let (code, answer) = rx
        .recv_timeout(RUN)
        .unwrap_or_else(|_| panic!("no answer to the asker{}", report()));
    eprintln!(
        "codex TUI: A2A send to the blocking answer, through the app server, in {:.1?}",
        sent.elapsed()
    );
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert!(answer.to_string().contains(summary), "{answer}");
    let mine = task["id"].as_str().unwrap().to_owned();

    let log = fs::read_to_string(d.data_dir.join("taskkeeper.log")).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains("delivered") && l.contains("app-server turn/start")),
        "delivered by a turn/start on the app server{}",
        report()
    );
    assert!(
        !log.contains("tmux paste"),
        "the paste was not tried:\n{log}"
    );
    the_task_was_a_taskkeeper_turn(&d, &model, &mine);
    let requests = model.requests();
    let (_, t) = request(d.port, "GET", &format!("/api/tasks/{mine}"), "").unwrap();
    let t: Value = serde_json::from_str(&t).unwrap();
    // The TUI shows the turn as its own.
    wait_for("the TUI to show the task", &report, || {
        tmux.screen()
            .contains(&format!("«Taskkeeper» Task {mine}"))
            .then_some(())
    });
    Ran {
        requests,
        task: t,
        log,
    }
}

#[test]
fn an_idle_codex_tui_takes_an_askers_task_through_its_app_server_and_ends_it_over_mcp() {
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "codex_tui::an_idle_codex_tui_takes_an_askers_task_through_its_app_server_and_ends_it_over_mcp",
    ) {
        tui_scenario(&program, false);
    }
}
