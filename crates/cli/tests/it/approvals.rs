//! The owner answers what a launched headless Codex or Gemini session asks, as for Claude
//! Code: the real Codex CLI (0.171.0, `codex app-server`) and Gemini CLI (0.61.0, `gemini
//! --acp`), offline against `tests/agents/fake_model.py` inside a loopback-only network
//! namespace (the harness of `codex_gemini.rs`).
//!
//! One scenario per agent: an asker's task has the model run a shell command (`RUN SHELL:`
//! makes the fake call the agent's own shell tool), the agent asks before it runs it, and
//! the session waits on the owner with the request shown; the owner allows it, the command
//! runs (its file appears), and the model ends the task with `task_update` (Taskkeeper's own
//! tool, never asked about: were it asked, the task would stay open). The next task's command
//! is denied: the model reads the refusal (the model request after it carries it; Codex's
//! with the owner's message, steered into the turn) and fails the task, and the command's
//! file never appears.

use std::fs;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::codex_gemini::{
    FakeModel, Kind, agent_desk, in_a_loopback_namespace, install, offline_config, post,
};
use crate::support::{Served, ok, request, stderr, stdout};

/// The longest one step may take (a Gemini session takes some 5 s to start on busy cores).
const STEP: Duration = Duration::from_secs(120);

/// Wait for `what`; `report` says what was seen when it never comes.
fn wait<T>(what: &str, report: &dyn Fn() -> String, f: impl FnMut() -> Option<T>) -> T {
    crate::support::until_reported(what, STEP, &|| format!("; {}", report()), f)
}

fn get(port: u16, path: &str) -> Value {
    let (code, body) = request(port, "GET", path, "").expect("the daemon answers");
    assert_eq!(code, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap()
}

fn scenario(kind: Kind, program: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let (home, work) = (dir.path().join("home"), dir.path().join("web"));
    for d in [&home, &work] {
        fs::create_dir_all(d).unwrap();
    }
    let model = FakeModel::start(dir.path());
    // Its own configuration says `approval_policy = "never"`: the launched session asks all
    // the same.
    offline_config(kind, &home, &work, model.port);
    let env: Vec<(String, String)> = [
        ("HOME", home.to_string_lossy().into_owned()),
        (
            "CODEX_HOME",
            home.join(".codex").to_string_lossy().into_owned(),
        ),
        ("FAKE_API_KEY", "offline".into()),
        ("GEMINI_API_KEY", "offline".into()),
        (
            "GOOGLE_GEMINI_BASE_URL",
            format!("http://127.0.0.1:{}", model.port),
        ),
        ("GEMINI_CLI_TRUST_WORKSPACE", "true".into()),
        ("NO_BROWSER", "1".into()),
        (
            match kind {
                Kind::Codex => "TASKKEEPER_CODEX",
                Kind::Gemini => "TASKKEEPER_GEMINI",
            },
            program.to_string_lossy().into_owned(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let d = Served::start_in(&dir.path().join("data"), &env);
    agent_desk(&d, "web", &work, kind);
    let session = stdout(&ok(d.cli(&["session", "launch", "web"])))
        .trim()
        .to_owned();
    let (code, body) = request(d.port, "POST", "/api/askers", r#"{"name":"ci-bot"}"#).unwrap();
    assert_eq!(code, 201, "{body}");
    let token = serde_json::from_str::<Value>(&body).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let send = |text: &str, id: &str| {
        let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]},
            "configuration": {"returnImmediately": true}}})
        .to_string();
        let (code, answer) = post(d.port, "/a2a/web", &token, &send, STEP);
        assert_eq!(code, 200, "{answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap();
        answer["result"]["task"].clone()
    };
    let asking = |file: &str| {
        get(d.port, "/api/sessions")["sessions"]
            .as_array()?
            .iter()
            .find(|s| {
                s["id"] == session.as_str()
                    && s["permission"]["input"]
                        .as_str()
                        .is_some_and(|i| i.contains(file))
            })
            .cloned()
    };
    let report = || {
        format!(
            "sessions: {}\ntasks: {}\nthe model was asked: {:?}",
            get(d.port, "/api/sessions"),
            get(d.port, "/api/tasks"),
            model.requests()
        )
    };
    let (tool, refusal) = match kind {
        Kind::Codex => ("command", "rejected by user"),
        Kind::Gemini => ("run_shell_command", "canceled by the user"),
    };

    let first = send("RUN SHELL: touch allowed.txt", "m-1");
    let first = first["id"].as_str().unwrap().to_owned();
    let s = wait("the session to ask to run its command", &report, || {
        asking("allowed.txt")
    });
    assert_eq!(
        (s["activity"].as_str(), s["permission"]["tool"].as_str()),
        (Some("waiting-on-owner"), Some(tool)),
        "{s}"
    );
    assert!(s["permission"]["requestId"].is_string(), "{s}");
    assert_eq!(
        get(d.port, &format!("/api/tasks/{first}"))["waitingOnOwner"],
        true
    );
    assert!(
        !work.join("allowed.txt").exists(),
        "not run before it is allowed"
    );
    ok(d.cli(&["session", "allow", &session]));
    let task_is = |id: &str, state: &str| {
        let t = get(d.port, &format!("/api/tasks/{id}"));
        (t["state"] == state).then_some(t)
    };
    let done = wait("the model to end the task", &report, || {
        task_is(&first, "completed")
    });
    assert_eq!(done["statusText"], "Finished it offline.", "{done}");
    assert_eq!(done["waitingOnOwner"], false, "{done}");
    assert!(work.join("allowed.txt").exists(), "the allowed command ran");

    let second = send("RUN SHELL: touch denied.txt", "m-2");
    let second = second["id"].as_str().unwrap().to_owned();
    wait("the session to ask again", &report, || asking("denied.txt"));
    ok(d.cli(&["session", "deny", &session, "--message", "Not here."]));
    let told = wait("the model to read the refusal", &report, || {
        model.requests().into_iter().find(|r| {
            r["last"] == "shell" && r["text"].as_str().is_some_and(|t| t.contains(refusal))
        })
    });
    assert!(
        !work.join("denied.txt").exists(),
        "the denied command did not run: {told}"
    );
    if kind == Kind::Codex {
        // Codex's answer names a decision only: the message is steered into the turn first.
        assert!(
            told["text"]
                .as_str()
                .is_some_and(|t| t.contains("«Taskkeeper» The owner did not allow it: Not here.")),
            "the model read the owner's message with the refusal: {told}"
        );
    }
    let failed = wait("the model to fail the task", &report, || {
        task_is(&second, "failed")
    });
    assert_eq!(
        failed["statusText"], "The command was not allowed.",
        "{failed}"
    );
    assert_eq!(failed["waitingOnOwner"], false, "{failed}");
    let out = d.cli(&["session", "allow", &session]);
    assert!(!out.status.success(), "nothing is asked now");
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(said.contains("no permission request waiting"), "{said}");
}

#[test]
fn codex_app_server_asks_the_owner_before_a_command_and_runs_it_only_when_allowed() {
    let program = install(Kind::Codex);
    if in_a_loopback_namespace(
        "approvals::codex_app_server_asks_the_owner_before_a_command_and_runs_it_only_when_allowed",
    ) {
        scenario(Kind::Codex, &program);
    }
}

#[test]
fn gemini_acp_asks_the_owner_before_a_command_and_runs_it_only_when_allowed() {
    let program = install(Kind::Gemini);
    if in_a_loopback_namespace(
        "approvals::gemini_acp_asks_the_owner_before_a_command_and_runs_it_only_when_allowed",
    ) {
        scenario(Kind::Gemini, &program);
    }
}
