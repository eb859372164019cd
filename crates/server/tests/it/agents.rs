//! The owner API's agents (`/api/agents`): the settings panel's list, Connect and
//! Disconnect, against a throwaway home. The `taskkeeper` the settings name is a stand-in
//! script that answers `--version` as the CLI does (this crate has no CLI binary to run).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::TestDaemon;

#[cfg(unix)]
fn stand_in(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let exe = dir.join("taskkeeper");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&exe, "#!/bin/sh\necho 'taskkeeper 0.1.0'\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    exe
}

fn read(file: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap()
}

#[cfg(unix)]
#[test]
fn connect_and_disconnect_through_the_owner_api() {
    let tools = tempfile::tempdir().unwrap();
    let home = tools.path().join("home");
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    let original = "{\n  \"model\": \"opus\"\n}\n";
    std::fs::write(home.join(".claude/settings.json"), original).unwrap();
    let exe = stand_in(&tools.path().join("bin"));
    let d = TestDaemon::start_configured(|c| {
        c.home = Some(home.clone());
        c.taskkeeper_bin = Some(exe.clone());
    });

    let (code, body) = d.call("GET", "/api/agents", None);
    assert_eq!(code, 200, "{body}");
    let agent = &body["agents"][0];
    assert_eq!(
        (&agent["agent"], &agent["found"], &agent["connected"]),
        (&json!("claude-code"), &json!(true), &json!(false)),
        "{body}"
    );

    let (code, body) = d.call("POST", "/api/agents/claude-code/connect", Some(&json!({})));
    assert_eq!(code, 200, "{body}");
    let changes = body["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 2, "{body}");
    assert!(
        changes[0]
            .as_str()
            .unwrap()
            .ends_with("added Taskkeeper's hooks (all events, and the waiter on Stop) and allowed mcp__taskkeeper"),
        "{body}"
    );
    assert_eq!(
        (
            &body["agent"]["connected"],
            &body["agent"]["working"],
            &body["agent"]["canUndo"]
        ),
        (&json!(true), &json!(true), &json!(true)),
        "{body}"
    );
    let settings = read(&home.join(".claude/settings.json"));
    assert_eq!(settings["model"], "opus");
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        exe.to_str().unwrap()
    );
    let config = read(&home.join(".claude.json"));
    assert_eq!(
        config["mcpServers"]["taskkeeper"]["url"],
        format!("http://127.0.0.1:{}/mcp", d.addr.port())
    );

    // The binary goes away: the list says so.
    std::fs::remove_file(&exe).unwrap();
    let (_, body) = d.call("GET", "/api/agents", None);
    let agent = &body["agents"][0];
    assert_eq!(agent["working"], false, "{body}");
    assert!(
        agent["problems"][0]
            .as_str()
            .unwrap()
            .contains("is not there"),
        "{body}"
    );

    let (code, body) = d.call("POST", "/api/agents/claude-code/disconnect", None);
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
        original
    );
    assert!(!home.join(".claude.json").exists());
    assert_eq!(
        (&body["agent"]["connected"], &body["agent"]["canUndo"]),
        (&json!(false), &json!(false)),
        "{body}"
    );
}

#[cfg(unix)]
#[test]
fn connect_refusals_change_nothing() {
    let tools = tempfile::tempdir().unwrap();
    let home = tools.path().join("home");
    // A binary in a Cargo build directory: refused (409) unless forced.
    let profile = tools.path().join("target/debug");
    std::fs::create_dir_all(profile.join(".fingerprint")).unwrap();
    let exe = stand_in(&profile);
    let d = TestDaemon::start_configured(|c| {
        c.home = Some(home.clone());
        c.taskkeeper_bin = Some(exe.clone());
    });
    let (code, body) = d.call("POST", "/api/agents/claude-code/connect", Some(&json!({})));
    assert_eq!(code, 409, "{body}");
    assert_eq!(body["error"]["kind"], "conflict");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("inside a Cargo build directory"),
        "{body}"
    );
    assert!(!home.exists(), "nothing was written");

    let (code, body) = d.call("POST", "/api/agents/codex/connect", Some(&json!({})));
    assert_eq!((code, &body["error"]["kind"]), (404, &json!("not_found")));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("`taskkeeper connect codex`"),
        "the window points at the command that does connect it: {body}"
    );
    let (code, body) = d.call("POST", "/api/agents/cursor/connect", Some(&json!({})));
    assert_eq!((code, &body["error"]["kind"]), (404, &json!("not_found")));
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown agent \"cursor\""),
        "{body}"
    );
    let (code, _) = d.call(
        "POST",
        "/api/agents/claude-code/connect",
        Some(&json!({"forse": true})),
    );
    assert_eq!(code, 400, "an unknown field is refused");
    assert!(!home.exists(), "nothing was written");

    // A settings file that is not JSON: refused, left as it was.
    std::fs::create_dir_all(home.join(".claude")).unwrap();
    std::fs::write(home.join(".claude/settings.json"), "{ \"model\": ").unwrap();
    let (code, body) = d.call(
        "POST",
        "/api/agents/claude-code/connect",
        Some(&json!({"force": true})),
    );
    assert_eq!(
        (code, &body["error"]["kind"]),
        (400, &json!("invalid")),
        "{body}"
    );
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
        "{ \"model\": "
    );
    assert!(!home.join(".claude.json").exists());

    // Forced with a readable file: connected, naming the build's binary.
    std::fs::write(home.join(".claude/settings.json"), "{}").unwrap();
    let (code, body) = d.call(
        "POST",
        "/api/agents/claude-code/connect",
        Some(&json!({"force": true})),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["agent"]["working"], true, "{body}");
}
