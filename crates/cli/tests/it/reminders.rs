//! The watchdog's reminder reaching the real Codex CLI (0.171.0) and Gemini CLI (0.61.0),
//! offline against `tests/agents/fake_model.py` inside a loopback-only namespace (the
//! harness of `codex_gemini`). Issue 15's proof: "a quiet session is reminded with the
//! request and its last words".
//!
//! A headless session Taskkeeper launched (`codex app-server` / `gemini --acp`) takes an
//! asker's task, says some last words and ends its turn without `task_update`: it holds the
//! task and has gone quiet. On a ladder of seconds the watchdog reminds it, through the same
//! way in the task came by (a turn on the session's stdin); the model reads the reminder (the
//! fake's log of requests shows its text: the task, its request and the session's last
//! words), ends the task with `task_update` over MCP, and the asker's blocking SendMessage
//! returns COMPLETED. The owner API shows the reminder recorded on the task.
//!
//! And an idle Codex TUI (the `codex_tui` scenario, quiet): the task and then the reminder
//! each start a turn through the app server that runs its thread, never the tmux paste.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::codex_gemini::{
    FakeModel, Kind, RUN, agent_desk, in_a_loopback_namespace, install, launched_env,
    offline_config, post,
};
use crate::support::{Served, bin, ok, request, stdout};

/// What the fake model says when a task's request holds "GO QUIET", then nothing more.
const LAST_WORDS: &str = "Now writing the probe.";
/// What the model's `task_update` after a reminder says.
const SUMMARY: &str = "Finished it after the reminder.";
/// Long enough for a turn, the first rung (6 s) and the reminder's turn on two busy cores.
const REMINDED: Duration = Duration::from_secs(60);

/// The model's requests show the task's turn ending with last words and no `task_update`,
/// then the first reminder as a turn's input naming the task, its request (`request`) and
/// those words; the owner API shows the task ended by the model, one reminder recorded.
fn assert_reminded(kind: Kind, requests: &[Value], shown: &Value, request: &str) {
    let id = shown["id"].as_str().unwrap();
    assert!(
        requests.iter().any(|r| r["answer"][0] == "text"
            && r["answer"][1] == LAST_WORDS
            && r["text"]
                .as_str()
                .is_some_and(|t| t.contains(&format!("«Taskkeeper» Task {id} from ci-bot")))),
        "the task's turn ended with last words and no task_update: {requests:?}"
    );
    let reminder = requests
        .iter()
        .filter(|r| r["kind"] == kind.name() && r["last"] == "user")
        .filter_map(|r| r["text"].as_str())
        .find(|t| t.contains("«Taskkeeper» Reminder #1:"))
        .unwrap_or_else(|| panic!("no reminder reached the model: {requests:?}"));
    assert!(
        reminder.contains(&format!("• Task {id} from ci-bot at desk web, reminder 1:"))
            && reminder.contains(request)
            && reminder.contains(&format!("Your last words:\n  │ {LAST_WORDS}\n")),
        "the reminder names the task, its request and the session's last words: {reminder}"
    );
    assert_eq!(shown["state"], "completed", "{shown}");
    assert_eq!(shown["statusText"], SUMMARY, "{shown}");
    assert_eq!(
        shown["remindersSent"], 1,
        "one rung, then it answered: {shown}"
    );
    assert!(shown["lastReminderAt"].is_string(), "{shown}");
    assert_eq!(shown["lastWords"], LAST_WORDS, "{shown}");
}

fn reminded_scenario(kind: Kind, program: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("web"));
    for d in [&home, &work] {
        fs::create_dir_all(d).unwrap();
    }
    let model = FakeModel::start(dir.path());
    offline_config(kind, &home, &work, model.port);
    let data = dir.path().join("data");
    let env = launched_env(kind, program, &home, &data, model.port);
    let d = Served::start_in_on(&data, 7717, &env);
    agent_desk(&d, "web", &work, kind);
    // Codex and Gemini sessions go by the default first rung; seconds, so the ladder runs here.
    // Quiet time counts from the delivery until the session's turn is seen to start, so the
    // first rung leaves a loaded machine room to start the agent's turn (at 2 s, a busy CI
    // machine reminded a Gemini session before it had read its task), and the next one room
    // for the reminder's turn to end the task.
    ok(d.cli(&["settings", "set", "reminders.first_after.default", "6s"]));
    ok(d.cli(&["settings", "set", "reminders.ladder", "10s,10s,10s"]));
    ok(Command::new(bin())
        .args(["connect", kind.name(), "--force"])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap());
    let launched = ok(d.cli(&["session", "launch", "web"]));
    let session = stdout(&launched).trim().to_owned();

    let (code, body) = request(d.port, "POST", "/api/askers", r#"{"name":"ci-bot"}"#).unwrap();
    assert_eq!(code, 201, "{body}");
    let asker: Value = serde_json::from_str(&body).unwrap();
    let token = asker["token"].as_str().unwrap().to_owned();
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER",
                    "parts": [{"text": "Write the probe. GO QUIET"}]},
        "configuration": {"returnImmediately": false}}})
    .to_string();
    // Returns only once the task ended: after the quiet turn, the reminder and its turn.
    // The answer comes only once the task ended: after the quiet turn, the reminder and its
    // turn.
    let (tx, rx) = mpsc::channel();
    let port = d.port;
    std::thread::spawn(move || {
        let _ = tx.send(post(port, "/a2a/web", &token, &send, RUN));
    });
    let (code, answer) = rx.recv_timeout(REMINDED).unwrap_or_else(|_| {
        let (_, tasks) = request(d.port, "GET", "/api/tasks?desk=web", "").unwrap_or_default();
        panic!(
            "the task never ended: the reminder did not reach the session or the model did \
             not answer it\n--- the desk's tasks: {tasks}\n--- the model's requests: {:?}\n\
             --- the daemon's log:\n{}",
            model.requests(),
            fs::read_to_string(data.join("taskkeeper.log")).unwrap_or_default()
        )
    });
    assert_eq!(code, 200, "{answer}");
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert!(answer.to_string().contains(SUMMARY), "{answer}");
    let id = task["id"].as_str().unwrap();
    let (_, shown) = request(d.port, "GET", &format!("/api/tasks/{id}"), "").unwrap();
    let shown: Value = serde_json::from_str(&shown).unwrap();
    assert_reminded(kind, &model.requests(), &shown, "Write the probe.");
    ok(d.cli(&["session", "stop", &session]));
}

#[test]
fn a_quiet_codex_app_server_session_is_reminded_with_the_request_and_its_last_words() {
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "reminders::a_quiet_codex_app_server_session_is_reminded_with_the_request_and_its_last_words",
    ) {
        reminded_scenario(Kind::Codex, &program);
    }
}

#[test]
fn a_quiet_gemini_acp_session_is_reminded_with_the_request_and_its_last_words() {
    let program = install(Kind::Gemini);
    if in_a_loopback_namespace(
        "reminders::a_quiet_gemini_acp_session_is_reminded_with_the_request_and_its_last_words",
    ) {
        reminded_scenario(Kind::Gemini, &program);
    }
}

#[test]
fn a_quiet_codex_tui_is_reminded_through_its_app_server_with_the_request_and_its_last_words() {
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "reminders::a_quiet_codex_tui_is_reminded_through_its_app_server_with_the_request_and_its_last_words",
    ) {
        let ran = crate::codex_tui::tui_scenario(&program, true);
        assert_reminded(Kind::Codex, &ran.requests, &ran.task, "Add a --json flag.");
        let turns = ran
            .log
            .lines()
            .filter(|l| l.contains("delivered") && l.contains("app-server turn/start"))
            .count();
        assert_eq!(
            turns, 2,
            "the task and the reminder each a turn/start on the app server:\n{}",
            ran.log
        );
    }
}
