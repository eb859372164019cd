//! `taskkeeper connect claude-code` (and `codex`, `gemini`) against existing settings files
//! (merge, idempotence, undo, refusal), the command it names (the installed binary, never
//! one in a build directory), `--check`, and the hook helper as each agent runs it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Served, TOKEN, bin, stderr, stdout};

/// The binary "installed" outside the build directory, as `dir/bin/taskkeeper` (a hard link
/// where the filesystem allows, else a copy): what a user's PATH finds.
pub fn installed(dir: &Path) -> PathBuf {
    let to = dir.join("bin").join("taskkeeper");
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    if !to.exists() && std::fs::hard_link(bin(), &to).is_err() {
        std::fs::copy(bin(), &to).unwrap();
    }
    to
}

/// `connect claude-code ARGS` with the installed binary (`home/bin` is the PATH's first entry).
fn connect(home: &Path, args: &[&str]) -> std::process::Output {
    connect_with(&installed(home), home, args)
}

fn connect_with(exe: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let path = std::env::join_paths(std::iter::once(home.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    Command::new(exe)
        .arg("connect")
        .arg("claude-code")
        .args(args)
        .env("HOME", home)
        .env("PATH", path)
        .env("TASKKEEPER_URL", "http://127.0.0.1:7717")
        .output()
        .unwrap()
}

#[test]
fn connect_merges_is_idempotent_and_undo_restores_exactly() {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let settings = project.path().join(".claude/settings.local.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let original = "{\n  \"model\": \"opus\",\n  \"hooks\": {\"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"notify-send done\"}]}]},\n  \"permissions\": {\"allow\": [\"Bash(git *)\"]}\n}\n";
    std::fs::write(&settings, original).unwrap();
    let user_config = home.path().join(".claude.json");
    std::fs::write(
        &user_config,
        r#"{"hasCompletedOnboarding":true,"theme":"dark"}"#,
    )
    .unwrap();

    let out = connect(
        home.path(),
        &["--project", &project.path().to_string_lossy()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("added Taskkeeper's hooks"),
        "{}",
        stdout(&out)
    );
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    let keys: Vec<_> = merged.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        ["model", "hooks", "permissions"],
        "the user's order is kept"
    );
    assert_eq!(
        merged["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
    let ours = &merged["hooks"]["Stop"][1]["hooks"];
    assert_eq!(
        ours[0]["command"], "taskkeeper",
        "the PATH finds this very binary, so its name is written"
    );
    assert_eq!(
        (ours[1]["args"].clone(), ours[1]["asyncRewake"].clone()),
        (json!(["hook", "wait"]), json!(true))
    );
    assert_eq!(
        merged["permissions"]["allow"],
        json!(["Bash(git *)", "mcp__taskkeeper"])
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(&user_config).unwrap()).unwrap();
    let server =
        &config["projects"][project.path().to_string_lossy().as_ref()]["mcpServers"]["taskkeeper"];
    assert_eq!(
        (server["type"].as_str(), server["url"].as_str()),
        (Some("http"), Some("http://127.0.0.1:7717/mcp")),
        "{config}"
    );
    assert_eq!(server["headersHelper"], "taskkeeper mcp-headers");
    assert!(
        !config.to_string().contains(TOKEN),
        "no token in a settings file"
    );

    let before = (
        std::fs::read(&settings).unwrap(),
        std::fs::read(&user_config).unwrap(),
    );
    let out = connect(
        home.path(),
        &["--project", &project.path().to_string_lossy()],
    );
    assert!(
        stdout(&out).contains("already connected, unchanged"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        (
            std::fs::read(&settings).unwrap(),
            std::fs::read(&user_config).unwrap()
        ),
        before
    );

    let out = connect(
        home.path(),
        &["--project", &project.path().to_string_lossy(), "--undo"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), original);
    assert_eq!(
        std::fs::read_to_string(&user_config).unwrap(),
        r#"{"hasCompletedOnboarding":true,"theme":"dark"}"#
    );
}

#[test]
fn connect_for_the_user_creates_files_and_undo_removes_them() {
    let home = tempfile::tempdir().unwrap();
    let out = connect(home.path(), &["--user"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let settings = home.path().join(".claude/settings.json");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(
        v["hooks"]["PreToolUse"][0]["matcher"],
        "mcp__taskkeeper__.*"
    );
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(home.path().join(".claude.json")).unwrap())
            .unwrap();
    assert_eq!(config["mcpServers"]["taskkeeper"]["type"], "http");
    connect(home.path(), &["--undo"]);
    assert!(!settings.exists() && !home.path().join(".claude.json").exists());
}

#[test]
fn connect_refuses_a_settings_file_that_is_not_json() {
    let home = tempfile::tempdir().unwrap();
    let settings = home.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{ \"model\": \"opus\", ").unwrap();
    let out = connect(home.path(), &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not valid JSON") && stderr(&out).contains("nothing was changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        "{ \"model\": \"opus\", "
    );
    assert!(!home.path().join(".claude.json").exists());
}

fn hook(
    d_url: &str,
    args: &[&str],
    stdin: &str,
    data_dir: &std::path::Path,
) -> std::process::Output {
    let mut child = Command::new(bin())
        .arg("hook")
        .args(args)
        .env("TASKKEEPER_URL", d_url)
        .env("TASKKEEPER_TOKEN", TOKEN)
        .env("TASKKEEPER_DATA_DIR", data_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_hook_helper_always_exits_0_and_stays_silent_on_trouble() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    let work = dir.path().join("work").to_string_lossy().into_owned();
    let start = json!({"session_id": "s-1", "hook_event_name": "SessionStart", "cwd": work, "source": "startup"}).to_string();
    let out = hook(&d.url(), &[], &start, dir.path());
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("\"additionalContext\":\"«Taskkeeper» This session works at desk"),
        "{}",
        stdout(&out)
    );

    for garbage in [
        "",
        "not json at all",
        "{\"session_id\":",
        "{\"hook_event_name\":\"Reboot\",\"session_id\":\"x\",\"cwd\":\"/\"}",
    ] {
        let out = hook(&d.url(), &[], garbage, dir.path());
        assert!(out.status.success(), "{garbage}");
        assert_eq!(
            (stdout(&out), stderr(&out)),
            (String::new(), String::new()),
            "{garbage}"
        );
    }
    // No daemon at all.
    let out = hook("http://127.0.0.1:1", &[], &start, dir.path());
    assert!(out.status.success());
    assert_eq!((stdout(&out), stderr(&out)), (String::new(), String::new()));
    // A daemon that takes the connection and never answers: the helper gives up on its own.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    let data = dir.path().to_owned();
    std::thread::spawn(move || tx.send(hook(&url, &[], &start, &data)).unwrap());
    let out = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the helper must not hang");
    assert!(out.status.success());
    assert_eq!(stdout(&out), "");
    drop(silent);
}

#[test]
fn the_hook_helper_gives_up_on_a_stdin_that_never_closes() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    let mut child = Command::new(bin())
        .arg("hook")
        .env("TASKKEEPER_URL", d.url())
        .env("TASKKEEPER_TOKEN", TOKEN)
        .env("TASKKEEPER_DATA_DIR", dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Half a payload, and the pipe stays open: the helper's budget ends it, silently, with 0.
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"session_id\": \"s-1\", ").unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()).unwrap());
    let out = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the helper must not hang");
    assert!(out.status.success());
    assert_eq!((stdout(&out), stderr(&out)), (String::new(), String::new()));
    drop(stdin);
}

#[test]
fn the_waiter_exits_2_with_the_text_or_0_when_sent_away() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    let work = dir.path().join("work").to_string_lossy().into_owned();
    let payload = |event: &str| {
        json!({"session_id": "s-1", "hook_event_name": event, "cwd": work}).to_string()
    };
    hook(&d.url(), &[], &payload("SessionStart"), dir.path());
    // Two waiters for one session: the newer sends the older away (exit 0, silently),
    // whichever of them the daemon saw first; the one left is the one a task wakes. Which is
    // which is read from the one that ends, not arranged with a sleep.
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..2 {
        let (url, data, stop, tx) = (d.url(), dir.path().to_owned(), payload("Stop"), tx.clone());
        std::thread::spawn(move || tx.send((i, hook(&url, &["wait"], &stop, &data))).unwrap());
    }
    let (older, out) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the older waiter is sent away");
    assert_eq!(out.status.code(), Some(0), "superseded: {}", stderr(&out));
    assert_eq!(stderr(&out), "");
    // The older left because the newer is waiting: a task now is the newer's.
    let task = d.cli(&["task", "add", "work", "Add a --json flag"]);
    assert!(task.status.success(), "{}", stderr(&task));
    let (newer, out) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the newer waiter is woken by the task");
    assert_ne!(older, newer);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("«Taskkeeper» Task "),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("Add a --json flag"));
}

#[test]
fn connect_refuses_a_binary_in_the_build_directory_and_changes_nothing() {
    let home = tempfile::tempdir().unwrap();
    let out = connect_with(Path::new(bin()), home.path(), &[]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("inside a Cargo build directory")
            && err.contains("--force")
            && err.contains("nothing was changed"),
        "{err}"
    );
    assert!(!home.path().join(".claude").exists() && !home.path().join(".claude.json").exists());

    // --force connects anyway, naming the build's binary by its path, and says so loudly.
    let out = connect_with(Path::new(bin()), home.path(), &["--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("warning"), "{}", stderr(&out));
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["command"], bin());
}

#[test]
fn connect_names_the_binary_by_its_path_when_the_path_finds_another() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let exe = installed(elsewhere.path());
    let out = connect_with(&exe, home.path(), &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(home.path().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        v["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
        exe.to_str().unwrap()
    );
}

#[test]
fn check_says_whether_the_settings_still_reach_a_working_taskkeeper() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let d = Served::start(&dir.path().join("data"));
    let check = |url: &str| {
        Command::new(installed(&home))
            .args(["connect", "claude-code", "--check"])
            .env("HOME", &home)
            .env("PATH", home.join("bin"))
            .env("TASKKEEPER_URL", url)
            .output()
            .unwrap()
    };
    let out = check(&d.url());
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not connected") && stderr(&out).contains("connect claude-code"),
        "{}",
        stderr(&out)
    );

    let out = Command::new(installed(&home))
        .args(["connect", "claude-code"])
        .env("HOME", &home)
        .env("PATH", home.join("bin"))
        .env("TASKKEEPER_URL", d.url())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = check(&d.url());
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("`taskkeeper` runs (taskkeeper ")
            && stdout(&out).contains(&format!("a Taskkeeper daemon answers at {}", d.url())),
        "{}",
        stdout(&out)
    );

    // The daemon stops: the check says so, and what to do.
    let url = d.url();
    drop(d);
    let out = check(&url);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains(&format!("problem: no daemon answers at {url}"))
            && stdout(&out).contains("taskkeeper serve"),
        "{}",
        stdout(&out)
    );

    // The binary the hooks name is gone (a `cargo clean`, an uninstall).
    let other = tempfile::tempdir().unwrap();
    let exe = installed(other.path());
    let out = connect_with(&exe, &home, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_file(&exe).unwrap();
    let out = check(&url);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains(&format!("`{}` is not there", exe.display())),
        "{}",
        stdout(&out)
    );
}

/// `connect AGENT ARGS` with the installed binary, against the daemon `d` (its address and
/// its worker token), for the user in `home`.
fn connect_other(d: &Served, home: &Path, agent: &str, args: &[&str]) -> std::process::Output {
    let exe = installed(home);
    let path = std::env::join_paths(std::iter::once(home.join("bin")).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    Command::new(exe)
        .args(["connect", agent])
        .args(args)
        .env("HOME", home)
        .env("CODEX_HOME", home.join("codex-home"))
        .env("PATH", path)
        .env("TASKKEEPER_URL", d.url())
        .env("TASKKEEPER_DATA_DIR", &d.data_dir)
        .env_remove("TASKKEEPER_WORKER_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn connect_codex_and_gemini_merge_check_and_undo_exactly_through_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(&dir.path().join("data"));
    let home = dir.path().join("home");
    let codex = home.join("codex-home");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::create_dir_all(home.join(".gemini")).unwrap();
    let config = "# mine\nnotify = [\"notify-send\", \"codex\"]\n\n[mcp_servers.docs]\nurl = \"http://127.0.0.1:9/mcp\"\n";
    let settings = "{\"theme\": \"dark\"}\n";
    std::fs::write(codex.join("config.toml"), config).unwrap();
    std::fs::write(home.join(".gemini/settings.json"), settings).unwrap();

    let out = connect_other(&d, &home, "codex", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("trust"), "{}", stdout(&out));
    let written = std::fs::read_to_string(codex.join("config.toml")).unwrap();
    let worker = std::fs::read_to_string(d.data_dir.join("worker-token")).unwrap();
    assert!(
        written.contains(&format!("Bearer {}", worker.trim())),
        "the worker token, never the owner's: {written}"
    );
    assert!(
        written.starts_with("# mine\nnotify = [\"notify-send\", \"codex\"]\n"),
        "{written}"
    );
    let hooks = std::fs::read_to_string(codex.join("hooks.json")).unwrap();
    assert!(hooks.contains("taskkeeper hook codex"), "{hooks}");
    let out = connect_other(&d, &home, "gemini", &[]);
    assert!(out.status.success(), "{}", stderr(&out));

    for agent in ["codex", "gemini"] {
        let out = connect_other(&d, &home, agent, &["--check"]);
        assert!(
            out.status.success(),
            "{agent}: {}{}",
            stdout(&out),
            stderr(&out)
        );
        assert!(
            stdout(&out).contains("is connected to a working Taskkeeper"),
            "{agent}: {}",
            stdout(&out)
        );
        let again = connect_other(&d, &home, agent, &[]);
        assert!(
            stdout(&again).contains("unchanged"),
            "{agent}: {}",
            stdout(&again)
        );
    }

    // A token that is no longer the daemon's is a problem `--check` names.
    let stale = std::fs::read_to_string(codex.join("config.toml"))
        .unwrap()
        .replace("Bearer ", "Bearer old-");
    std::fs::write(codex.join("config.toml"), stale).unwrap();
    let out = connect_other(&d, &home, "codex", &["--check"]);
    assert!(!out.status.success());
    assert!(
        stdout(&out).contains("not this daemon's worker token"),
        "{}",
        stdout(&out)
    );

    for agent in ["codex", "gemini"] {
        let out = connect_other(&d, &home, agent, &["--undo"]);
        assert!(out.status.success(), "{agent}: {}", stderr(&out));
    }
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        config
    );
    assert!(
        !codex.join("hooks.json").exists(),
        "it did not exist before"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".gemini/settings.json")).unwrap(),
        settings
    );
    let out = connect_other(&d, &home, "gemini", &["--check"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("Gemini CLI is not connected"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn connect_codex_refuses_a_broken_config_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(&dir.path().join("data"));
    let home = dir.path().join("home");
    let codex = home.join("codex-home");
    std::fs::create_dir_all(&codex).unwrap();
    std::fs::write(codex.join("config.toml"), "model = \"gpt-5\n").unwrap();
    let out = connect_other(&d, &home, "codex", &[]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("is not valid TOML"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("nothing was changed"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_dir(&codex).unwrap().count(),
        1,
        "no hooks.json and no backup"
    );
}

#[test]
fn the_hook_helper_forwards_codex_and_gemini_hooks_in_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let d = Served::start(dir.path());
    let work = dir.path().join("work").to_string_lossy().into_owned();
    let payload = |session: &str, event: &str, extra: Value| {
        let mut p = json!({"session_id": session, "hook_event_name": event, "cwd": work});
        if let (Value::Object(p), Value::Object(e)) = (&mut p, extra) {
            p.extend(e);
        }
        p.to_string()
    };
    let out = hook(
        &d.url(),
        &["codex"],
        &payload("cx-1", "SessionStart", json!({"source": "startup"})),
        dir.path(),
    );
    assert!(out.status.success());
    assert!(
        stdout(&out).contains("additionalContext"),
        "{}",
        stdout(&out)
    );
    hook(
        &d.url(),
        &["gemini"],
        &payload("gm-1", "BeforeAgent", json!({"prompt": "hi"})),
        dir.path(),
    );
    let task = d.cli(&["task", "add", "work", "Add a --json flag"]);
    assert!(task.status.success(), "{}", stderr(&task));
    let out = hook(
        &d.url(),
        &["gemini"],
        &payload("gm-1", "AfterAgent", json!({"prompt_response": "Hi!"})),
        dir.path(),
    );
    assert!(out.status.success());
    let answer: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(answer["decision"], "deny", "{answer}");
    assert!(
        answer["reason"]
            .as_str()
            .unwrap()
            .contains("Add a --json flag")
    );
    // An event of the other agent: refused by the daemon, and the helper stays silent.
    let out = hook(
        &d.url(),
        &["codex"],
        &payload("cx-1", "AfterAgent", json!({})),
        dir.path(),
    );
    assert!(out.status.success());
    assert_eq!((stdout(&out), stderr(&out)), (String::new(), String::new()));
}
