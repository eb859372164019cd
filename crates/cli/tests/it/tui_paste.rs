//! The tmux paste into a real idle TUI: Gemini CLI 0.61.0 (`gemini` in tmux), and Codex CLI
//! 0.171.0 running its thread in its own process (`codex --no-daemon`, so no app server can
//! start a turn in it). Neither agent names its pid to its hooks; `taskkeeper hook
//! codex|gemini` finds the session's process among its own ancestors, and with it the daemon
//! checks that the pane its hooks name is the session's own before it pastes. An asker's task
//! sent over A2A goes in by the paste (the daemon's log names the way), and the model's
//! `task_update` over MCP completes the asker's blocking SendMessage. Offline, against
//! `tests/agents/fake_model.py`, inside a network namespace with only loopback, with the
//! harness of `codex_gemini.rs` and `codex_tui.rs`.
//!
//! The owner says hello first (Codex runs a TUI's hooks from its first turn on): the session
//! is then known, idle after its turn, with its pane and its process.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::codex_gemini::{
    FakeModel, Kind, RUN, agent_desk, in_a_loopback_namespace, install, offline_config, path_with,
    post, the_task_was_a_taskkeeper_turn,
};
use crate::codex_tui::{Tmux, wait_for};
use crate::support::{Served, bin, ok, request, stderr, stdout};

/// `pid` and its ancestors, nearest first (to tell whose process the session's is).
fn process_and_ancestors(pid: u32) -> Vec<u32> {
    let mut line = vec![pid];
    let mut at = pid;
    while at > 1 && line.len() < 64 {
        let Ok(stat) = fs::read_to_string(format!("/proc/{at}/stat")) else {
            break;
        };
        let Some(parent) = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            break;
        };
        line.push(parent);
        at = parent;
    }
    line
}

fn paste_scenario(kind: Kind, program: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("web"));
    for d in [&home, &work] {
        fs::create_dir_all(d).unwrap();
    }
    let model = FakeModel::start(dir.path());
    let d = Served::start(&dir.path().join("data"));
    agent_desk(&d, "web", &work, kind);
    offline_config(kind, &home, &work, model.port);
    // `connect` finds `codex` on the PATH, to trust the hooks through its app server.
    let path = path_with(program);
    let env: Vec<(&str, String)> = vec![
        ("PATH", path.to_string_lossy().into_owned()),
        ("HOME", home.to_string_lossy().into_owned()),
        (
            "CODEX_HOME",
            home.join(".codex").to_string_lossy().into_owned(),
        ),
        ("TASKKEEPER_URL", d.url()),
        (
            "TASKKEEPER_DATA_DIR",
            d.data_dir.to_string_lossy().into_owned(),
        ),
        ("FAKE_API_KEY", "offline".into()),
        ("GEMINI_API_KEY", "offline".into()),
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        ),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        ("NO_BROWSER", "1".into()),
        ("TERM", "xterm-256color".into()),
    ];
    let mut connect = Command::new(bin());
    connect
        .args(["connect", kind.name(), "--force"])
        .env_clear();
    connect.envs(env.iter().map(|(k, v)| (k, v)));
    ok(connect.output().unwrap());

    let tmux = Tmux(dir.path().join("tmux.sock"));
    let (tui, prompt_box) = match kind {
        // No --dangerously-bypass-hook-trust: `connect` trusted the hooks as Codex does.
        Kind::Codex => (
            format!("exec '{}' --no-daemon", program.display()),
            "Ask Codex",
        ),
        Kind::Gemini => (
            format!("exec node '{}'", program.display()),
            "Type your message",
        ),
    };
    let command = format!("cd '{}' && {tui}", work.display());
    tmux.start(&command, &env);
    let report = || {
        format!(
            "\n--- the TUI:\n{}\n--- the daemon's log:\n{}",
            tmux.screen(),
            fs::read_to_string(d.data_dir.join("taskkeeper.log")).unwrap_or_default(),
        )
    };

    wait_for("the TUI's prompt box", &report, || {
        tmux.screen().contains(prompt_box).then_some(())
    });
    // A moment for the TUI to take keys after drawing its box.
    std::thread::sleep(Duration::from_millis(500));
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
    assert_eq!(session["agent"], kind.name(), "{session}");
    // The pid the hooks named is the agent's own long-lived process, in the pane.
    let pid = session["pid"]
        .as_u64()
        .and_then(|p| u32::try_from(p).ok())
        .unwrap_or_else(|| panic!("the hooks named no pid: {session}"));
    let pane = stdout(&tmux.run(&["display-message", "-p", "-t", "cx", "#{pane_pid}"]));
    let pane: u32 = pane.trim().parse().unwrap();
    assert!(
        process_and_ancestors(pid).contains(&pane),
        "the session's process {pid} is in the pane of process {pane}: {session}"
    );
    let name = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    let expected = match kind {
        Kind::Codex => "codex",
        Kind::Gemini => "node",
    };
    assert_eq!(name.trim(), expected, "{session}");

    let (code, body) = request(d.port, "POST", "/api/askers", r#"{"name":"ci-bot"}"#).unwrap();
    assert_eq!(code, 201, "{body}");
    let asker: Value = serde_json::from_str(&body).unwrap();
    let token = asker["token"].as_str().unwrap().to_owned();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "Add a --json flag"}]},
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
        "{} TUI: A2A send to the blocking answer, through the tmux paste, in {:.1?}",
        kind.name(),
        sent.elapsed()
    );
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(
        task["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{answer}{}",
        report()
    );
    assert!(
        answer.to_string().contains("Finished it offline."),
        "{answer}"
    );
    let mine = task["id"].as_str().unwrap().to_owned();

    let log = fs::read_to_string(d.data_dir.join("taskkeeper.log")).unwrap_or_default();
    assert!(
        log.lines()
            .any(|l| l.contains("delivered") && l.contains("tmux paste")),
        "delivered by the tmux paste{}",
        report()
    );
    assert!(
        !log.contains("refused to paste"),
        "the pane was the session's own:\n{log}"
    );
    // `codex --no-daemon` names its home but runs no app server: that way in is passed over
    // without a warning.
    assert!(
        !log.lines().any(|l| l.contains("WARN")),
        "no warning on the way:\n{log}"
    );
    the_task_was_a_taskkeeper_turn(&d, &model, &mine);
}

#[test]
fn an_idle_gemini_tui_takes_an_askers_task_by_the_tmux_paste_and_ends_it_over_mcp() {
    let program = install(Kind::Gemini);
    if in_a_loopback_namespace(
        "tui_paste::an_idle_gemini_tui_takes_an_askers_task_by_the_tmux_paste_and_ends_it_over_mcp",
    ) {
        paste_scenario(Kind::Gemini, &program);
    }
}

#[test]
fn an_idle_codex_tui_without_a_daemon_takes_an_askers_task_by_the_tmux_paste_and_ends_it_over_mcp()
{
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "tui_paste::an_idle_codex_tui_without_a_daemon_takes_an_askers_task_by_the_tmux_paste_and_ends_it_over_mcp",
    ) {
        paste_scenario(Kind::Codex, &program);
    }
}
