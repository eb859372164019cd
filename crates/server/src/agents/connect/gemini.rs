//! `taskkeeper connect gemini`: Gemini CLI's hooks (each event through `taskkeeper hook
//! gemini`) and Taskkeeper's MCP server (`mcpServers.taskkeeper`: `httpUrl`, `headers`, and
//! `trust`, so its tools run without a confirmation each time) in `~/.gemini/settings.json`,
//! merged like Claude Code's settings: the rest stays as it was, connecting twice is
//! connecting once, a backup is kept before the first change and [`disconnect`] puts back
//! exactly what was there; a file that is not a JSON object is refused and nothing written.
//!
//! Gemini has no headers helper, so the worker token (the sessions' own, never the owner's)
//! is written into `headers`; `--check` says when it is no longer the daemon's. Hooks are on
//! unless the user turned them off (`hooksConfig.enabled: false`), which `connect` leaves as
//! the user chose and [`problems`] reports.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use taskkeeper_core::agent_hooks::{GEMINI_EVENTS, MCP_SERVER};

use super::{
    Change, ConnectError, Wired, bearer, can_undo, hook_line, line_hooks_found, merge_line_hooks,
    read_json, read_text, restore, unchanged_or, write_planned,
};

/// Gemini's settings file.
pub fn file(home: &Path) -> PathBuf {
    home.join(".gemini").join("settings.json")
}

/// Timeouts in milliseconds.
fn timeout(event: &str) -> u32 {
    match event {
        "AfterAgent" => 10_000,
        "SessionEnd" => 3_000,
        _ => 5_000,
    }
}

fn merge(settings: &mut Map<String, Value>, command: &str, url: &str, token: &str) {
    let line = hook_line(command, super::GEMINI);
    merge_line_hooks(
        settings,
        &GEMINI_EVENTS,
        |event| json!({"name": "taskkeeper", "type": "command", "command": line, "timeout": timeout(event)}),
    );
    let servers = settings.entry("mcpServers").or_insert_with(|| json!({}));
    if !servers.is_object() {
        *servers = json!({});
    }
    if let Value::Object(servers) = servers {
        servers.insert(
            MCP_SERVER.into(),
            json!({"httpUrl": format!("{url}/mcp"), "headers": {"Authorization": bearer(token)}, "trust": true}),
        );
    }
}

/// Connect Gemini for the user in `home`: its hooks run `command`, its MCP entry points at
/// `url` (the daemon's base address) with `token` (the worker token).
pub fn connect(
    home: &Path,
    command: &str,
    url: &str,
    token: &str,
) -> Result<Vec<Change>, ConnectError> {
    let file = file(home);
    let text = read_text(&file)?;
    let before = read_json(&file)?;
    if before
        .as_ref()
        .and_then(|b| b.get("mcpServers"))
        .is_some_and(|s| !s.is_object())
    {
        return Err(ConnectError::NotTable {
            file,
            key: "mcpServers".into(),
        });
    }
    let mut after = before.clone().unwrap_or_default();
    merge(&mut after, command, url, token);
    let after = unchanged_or(&file, before, after, text.as_deref())?;
    Ok(vec![write_planned(
        file,
        text.as_deref(),
        &after,
        &format!(
            "added Taskkeeper's hooks ({}) and the MCP server `taskkeeper` (trusted, the worker token in headers)",
            GEMINI_EVENTS.join(", ")
        ),
    )?])
}

/// Put the settings back exactly as they were before the first [`connect`].
pub fn disconnect(home: &Path) -> Result<Vec<Change>, ConnectError> {
    Ok(vec![restore(&file(home))?])
}

/// What Gemini's settings say about Taskkeeper now (nothing is written).
pub fn inspect(home: &Path) -> Result<Wired, ConnectError> {
    let file = file(home);
    let settings = read_json(&file)?.unwrap_or_default();
    let (hook_commands, events_missing) = line_hooks_found(&settings, &GEMINI_EVENTS);
    let entry = settings.get("mcpServers").and_then(|s| s.get(MCP_SERVER));
    Ok(Wired {
        can_undo: can_undo(&[&file]),
        settings_file: file.clone(),
        config_file: file,
        hook_commands,
        events_missing,
        has_mcp_entry: entry.is_some(),
        mcp_url: entry
            .and_then(|e| e.get("httpUrl"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        mcp_token: entry
            .and_then(|e| e.pointer("/headers/Authorization"))
            .and_then(Value::as_str)
            .and_then(|a| a.strip_prefix("Bearer "))
            .map(str::to_owned),
        helper_command: None,
    })
}

/// What the settings say that keeps connected hooks from running.
pub fn problems(home: &Path) -> Result<Vec<String>, ConnectError> {
    let file = file(home);
    let settings = read_json(&file)?.unwrap_or_default();
    let off = settings
        .get("hooksConfig")
        .and_then(|h| h.get("enabled"))
        .and_then(Value::as_bool)
        == Some(false);
    Ok(if off {
        vec![format!(
            "hooks are turned off in {} (hooksConfig.enabled is false): Gemini runs none of \
             Taskkeeper's; set it to true",
            file.display()
        )]
    } else {
        Vec::new()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const SETTINGS: &str = "{\n  \"model\": {\"name\": \"gemini-2.5-pro\"},\n  \"hooks\": {\"AfterAgent\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]},\n  \"mcpServers\": {\"docs\": {\"httpUrl\": \"http://127.0.0.1:9/mcp\"}}\n}\n";

    #[test]
    fn connecting_merges_is_idempotent_and_undoes_exactly() {
        let d = tempfile::tempdir().unwrap();
        let f = file(d.path());
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(&f, SETTINGS).unwrap();
        connect(
            d.path(),
            "/opt/my apps/taskkeeper",
            "http://127.0.0.1:7777",
            "wtok",
        )
        .unwrap();
        let s: Value = serde_json::from_str(&fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(s["model"]["name"], "gemini-2.5-pro");
        assert_eq!(
            s["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
            "say done"
        );
        assert_eq!(
            s["hooks"]["AfterAgent"][1]["hooks"][0]["command"],
            "'/opt/my apps/taskkeeper' hook gemini"
        );
        assert_eq!(s["hooks"]["AfterAgent"][1]["hooks"][0]["timeout"], 10_000);
        for event in GEMINI_EVENTS {
            assert!(s["hooks"][event].is_array(), "{event}");
        }
        assert_eq!(s["mcpServers"]["docs"]["httpUrl"], "http://127.0.0.1:9/mcp");
        assert_eq!(
            s["mcpServers"]["taskkeeper"],
            json!({"httpUrl": "http://127.0.0.1:7777/mcp", "headers": {"Authorization": "Bearer wtok"}, "trust": true})
        );
        let once = fs::read_to_string(&f).unwrap();
        let again = connect(
            d.path(),
            "/opt/my apps/taskkeeper",
            "http://127.0.0.1:7777",
            "wtok",
        )
        .unwrap();
        assert!(again[0].what.contains("unchanged"), "{again:?}");
        assert_eq!(fs::read_to_string(&f).unwrap(), once);

        let wired = inspect(d.path()).unwrap();
        assert!(wired.connected() && wired.events_missing.is_empty() && wired.can_undo);
        assert_eq!(wired.hook_commands, ["/opt/my apps/taskkeeper"]);
        assert_eq!(wired.mcp_token.as_deref(), Some("wtok"));
        assert!(problems(d.path()).unwrap().is_empty());

        disconnect(d.path()).unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), SETTINGS);
    }

    #[test]
    fn a_broken_file_is_refused_and_turned_off_hooks_are_reported() {
        let d = tempfile::tempdir().unwrap();
        let f = file(d.path());
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        for broken in ["{\"hooks\": ", "[1, 2]", "{\"mcpServers\": 3}"] {
            fs::write(&f, broken).unwrap();
            let err = connect(d.path(), "taskkeeper", "http://127.0.0.1:1", "t").unwrap_err();
            assert!(err.to_string().contains("nothing was changed"), "{err}");
            assert_eq!(fs::read_to_string(&f).unwrap(), broken);
            assert_eq!(
                fs::read_dir(f.parent().unwrap()).unwrap().count(),
                1,
                "no backup"
            );
        }
        fs::write(&f, "{\"hooksConfig\": {\"enabled\": false}}").unwrap();
        connect(d.path(), "taskkeeper", "http://127.0.0.1:1", "t").unwrap();
        let s: Value = serde_json::from_str(&fs::read_to_string(&f).unwrap()).unwrap();
        assert_eq!(
            s["hooksConfig"]["enabled"], false,
            "the user's choice stays"
        );
        let p = problems(d.path()).unwrap();
        assert!(
            p.len() == 1 && p[0].contains("hooksConfig.enabled"),
            "{p:?}"
        );
    }

    #[test]
    fn settings_that_did_not_exist_are_removed_again() {
        let d = tempfile::tempdir().unwrap();
        connect(d.path(), "taskkeeper", "http://127.0.0.1:1", "t").unwrap();
        assert!(file(d.path()).is_file());
        disconnect(d.path()).unwrap();
        assert!(!file(d.path()).exists());
        assert_eq!(fs::read_dir(d.path().join(".gemini")).unwrap().count(), 0);
    }
}
