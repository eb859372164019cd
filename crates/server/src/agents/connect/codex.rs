//! `taskkeeper connect codex`: Codex CLI's hooks in `$CODEX_HOME/hooks.json` (each event
//! through `taskkeeper hook codex`) and Taskkeeper's MCP server in `$CODEX_HOME/config.toml`
//! (`[mcp_servers.taskkeeper]`, `url` and `http_headers`), merged like Claude Code's
//! settings: the rest of both files stays as it was, connecting twice is connecting once, a
//! backup is kept before the first change and [`disconnect`] puts back exactly what was
//! there; a file that does not parse is refused and nothing is written.
//!
//! `config.toml` is the user's hand-written file, so it is edited with `toml_edit`, which
//! keeps comments, order and spacing: only our table changes. A `notify` program the user
//! has stays as it is (Taskkeeper reads turns from the hooks, not from `notify`).
//!
//! Codex has no headers helper, so the worker token (the sessions' own, never the owner's)
//! is written into `http_headers`; `--check` says when it is no longer the daemon's.
//!
//! Codex runs a hook only once it is trusted, and skips an untrusted one silently. Trust is
//! each hook's hash (which Codex computes) stored in `config.toml`; [`trust`] asks Codex's
//! own app server for the hashes and stores them as Codex does. Without the `codex` command
//! `connect` says plainly what the user must approve ([`TRUST_NOTE`]).

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use taskkeeper_core::agent_hooks::{CODEX_EVENTS, MCP_SERVER};
use toml_edit::{DocumentMut, InlineTable, Item, Table, value};

use super::{
    Change, ConnectError, Wired, bearer, can_undo, hook_line, line_command, line_hooks_found,
    merge_line_hooks, read_json, read_text, restore, unchanged_or, write_planned,
};

/// What the user must do for Codex to run the hooks when `connect` could not trust them.
pub const TRUST_NOTE: &str = "Codex skips hooks it has not reviewed, silently: trust \
     Taskkeeper's hooks once in Codex's hook review (`/hooks` in the TUI; a changed hook needs \
     trusting again), or start Codex with --dangerously-bypass-hook-trust";

/// Codex's directory: `CODEX_HOME`, else `~/.codex`.
pub fn dir(home: &Path) -> PathBuf {
    match std::env::var_os("CODEX_HOME") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => home.join(".codex"),
    }
}

/// The two files: (`hooks.json`, `config.toml`).
pub fn files(dir: &Path) -> (PathBuf, PathBuf) {
    (dir.join("hooks.json"), dir.join("config.toml"))
}

/// Timeouts in seconds; Codex clamps SessionEnd's to 3 s.
fn timeout(event: &str) -> u32 {
    match event {
        "Stop" => 10,
        "SessionEnd" => 3,
        _ => 5,
    }
}

fn parse_toml(file: &Path, text: Option<&str>) -> Result<DocumentMut, ConnectError> {
    text.unwrap_or("")
        .parse::<DocumentMut>()
        .map_err(|e| ConnectError::NotToml {
            file: file.to_owned(),
            reason: e.to_string().trim().replace('\n', " "),
        })
}

/// Our entry's (url, token), as the document has it.
fn our_entry(doc: &DocumentMut) -> Option<(Option<String>, Option<String>)> {
    let entry = doc.get("mcp_servers")?.get(MCP_SERVER)?;
    let url = entry.get("url").and_then(Item::as_str).map(str::to_owned);
    let token = entry
        .get("http_headers")
        .and_then(|h| h.get("Authorization"))
        .and_then(Item::as_str)
        .and_then(|a| a.strip_prefix("Bearer "))
        .map(str::to_owned);
    Some((url, token))
}

fn merge_config(
    file: &Path,
    doc: &mut DocumentMut,
    url: &str,
    token: &str,
) -> Result<(), ConnectError> {
    let want = (Some(url.to_owned()), Some(token.to_owned()));
    if our_entry(doc).as_ref() == Some(&want) {
        return Ok(());
    }
    let not_table = || ConnectError::NotTable {
        file: file.to_owned(),
        key: "mcp_servers".into(),
    };
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let servers = servers.as_table_like_mut().ok_or_else(not_table)?;
    let mut entry = Table::new();
    entry.insert("url", value(url));
    let mut headers = InlineTable::new();
    headers.insert("Authorization", bearer(token).into());
    entry.insert("http_headers", value(headers));
    servers.insert(MCP_SERVER, Item::Table(entry));
    Ok(())
}

/// Connect Codex in `dir` (see [`dir`]): its hooks run `command`, its MCP entry points at
/// `url` (the daemon's base address) with `token` (the worker token). Everything is read and
/// checked before anything is written. With `codex` (the Codex CLI), the hooks are then
/// trusted as Codex records it ([`trust`]); without, the change says what the user must do.
pub fn connect(
    dir: &Path,
    command: &str,
    url: &str,
    token: &str,
    codex: Option<&Path>,
) -> Result<Vec<Change>, ConnectError> {
    let (hooks_file, config_file) = files(dir);
    let hooks = read_json(&hooks_file)?;
    let config_text = read_text(&config_file)?;
    let mut doc = parse_toml(&config_file, config_text.as_deref())?;
    let mut new_hooks = hooks.clone().unwrap_or_default();
    let line = hook_line(command, super::CODEX);
    merge_line_hooks(
        &mut new_hooks,
        &CODEX_EVENTS,
        |event| json!({"type": "command", "command": line, "timeout": timeout(event)}),
    );
    merge_config(&config_file, &mut doc, &format!("{url}/mcp"), token)?;
    let hooks_text = read_text(&hooks_file)?;
    let hooks_after = unchanged_or(&hooks_file, hooks, new_hooks, hooks_text.as_deref())?;
    let mut changes = vec![
        write_planned(
            hooks_file,
            hooks_text.as_deref(),
            &hooks_after,
            &format!("added Taskkeeper's hooks ({})", CODEX_EVENTS.join(", ")),
        )?,
        write_planned(
            config_file.clone(),
            config_text.as_deref(),
            &doc.to_string(),
            "added the MCP server `taskkeeper` ([mcp_servers.taskkeeper], the worker token in http_headers)",
        )?,
    ];
    let trusted = match codex {
        Some(codex) => trust(dir, codex),
        None => Err("the `codex` command is not on the PATH".to_owned()),
    };
    match trusted {
        Ok(0) => {}
        Ok(n) => changes.push(Change {
            file: config_file,
            what: format!(
                "trusted Taskkeeper's {n} hooks as Codex records it (hooks.state, each hook's hash)"
            ),
        }),
        Err(why) => changes.push(Change {
            file: dir.join("hooks.json"),
            what: format!("not trusted yet ({why}): {TRUST_NOTE}"),
        }),
    }
    Ok(changes)
}

/// How long Codex's app server may take to list the hooks.
const APP_SERVER_BUDGET: Duration = Duration::from_secs(20);

/// Trust our hooks the way Codex itself does when the user approves them in its hook review:
/// Codex's app server (`codex app-server`, JSON-RPC over stdio) lists each hook with its key
/// and the hash of what it runs (`hooks/list`), and a trusted hook is one whose hash is
/// stored as `hooks.state."<key>".trusted_hash` in `config.toml`. Only hooks that run
/// `taskkeeper hook codex` are trusted, and only while they are untrusted or changed; the
/// edit goes through `toml_edit` after the backup `connect` keeps, so undo removes it too.
/// Returns how many were trusted now.
pub fn trust(dir: &Path, codex: &Path) -> Result<usize, String> {
    let listed = list_hooks(dir, codex)?;
    let ours: Vec<(String, String)> = listed
        .iter()
        .filter(|h| {
            line_command(&json!({"command": h.get("command")})).is_some()
                && h.get("trustStatus").and_then(Value::as_str) != Some("trusted")
        })
        .filter_map(|h| {
            Some((
                h.get("key")?.as_str()?.to_owned(),
                h.get("currentHash")?.as_str()?.to_owned(),
            ))
        })
        .collect();
    if ours.is_empty() {
        return Ok(0);
    }
    let (_, config_file) = files(dir);
    let text = read_text(&config_file).map_err(|e| e.to_string())?;
    let mut doc = parse_toml(&config_file, text.as_deref()).map_err(|e| e.to_string())?;
    let state = implicit_table(doc.as_table_mut(), "hooks")
        .and_then(|hooks| implicit_table(hooks, "state"))
        .ok_or_else(|| format!("`hooks.state` in {} is not a table", config_file.display()))?;
    for (key, hash) in &ours {
        let entry = state
            .entry(key)
            .or_insert_with(|| Item::Table(Table::new()));
        let Some(entry) = entry.as_table_like_mut() else {
            return Err(format!("`hooks.state.{key}` is not a table"));
        };
        entry.insert("trusted_hash", value(hash.as_str()));
    }
    write_planned(
        config_file,
        text.as_deref(),
        &doc.to_string(),
        "trusted Taskkeeper's hooks",
    )
    .map_err(|e| e.to_string())?;
    Ok(ours.len())
}

fn implicit_table<'a>(parent: &'a mut Table, key: &str) -> Option<&'a mut Table> {
    parent
        .entry(key)
        .or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        })
        .as_table_mut()
}

/// Every hook Codex sees for `dir`, as its app server lists them.
fn list_hooks(dir: &Path, codex: &Path) -> Result<Vec<Value>, String> {
    let mut child = Command::new(codex)
        .arg("app-server")
        .env("CODEX_HOME", dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("`{} app-server` does not run: {e}", codex.display()))?;
    let answer = (|| {
        let mut stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + APP_SERVER_BUDGET;
        let mut send = |message: Value| writeln!(stdin, "{message}").map_err(|e| e.to_string());
        let answer = |id: u64, method: &str| -> Result<Value, String> {
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                let line = rx
                    .recv_timeout(left)
                    .map_err(|_| format!("Codex's app server did not answer {method}"))?;
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if message.get("id") == Some(&json!(id)) {
                    return match message.get("result") {
                        Some(result) => Ok(result.clone()),
                        None => Err(format!("Codex's app server refused {method}: {message}")),
                    };
                }
            }
        };
        let client = json!({"name": "taskkeeper", "version": env!("CARGO_PKG_VERSION")});
        send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": client}}),
        )?;
        answer(1, "initialize")?;
        send(json!({"jsonrpc": "2.0", "method": "initialized"}))?;
        send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [dir]}}),
        )?;
        answer(2, "hooks/list")
    })();
    let _ = child.kill();
    let _ = child.wait();
    let listed = answer?;
    Ok(listed
        .get("data")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("hooks").and_then(Value::as_array))
        .flatten()
        .cloned()
        .collect())
}

/// Put both files back exactly as they were before the first [`connect`].
pub fn disconnect(dir: &Path) -> Result<Vec<Change>, ConnectError> {
    let (hooks_file, config_file) = files(dir);
    [hooks_file, config_file]
        .iter()
        .map(|f| restore(f))
        .collect()
}

/// What Codex's files say about Taskkeeper now (nothing is written).
pub fn inspect(dir: &Path) -> Result<Wired, ConnectError> {
    let (hooks_file, config_file) = files(dir);
    let hooks: Map<String, Value> = read_json(&hooks_file)?.unwrap_or_default();
    let doc = parse_toml(&config_file, read_text(&config_file)?.as_deref())?;
    let (hook_commands, events_missing) = line_hooks_found(&hooks, &CODEX_EVENTS);
    let entry = our_entry(&doc);
    Ok(Wired {
        can_undo: can_undo(&[&hooks_file, &config_file]),
        settings_file: hooks_file,
        config_file,
        hook_commands,
        events_missing,
        has_mcp_entry: entry.is_some(),
        mcp_url: entry.as_ref().and_then(|(u, _)| u.clone()),
        mcp_token: entry.and_then(|(_, t)| t),
        helper_command: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const CONFIG: &str = "# my Codex\nmodel = \"gpt-5\"   # the usual\nnotify = [\"notify-send\", \"codex\"]\n\n[mcp_servers.docs]\nurl = \"http://127.0.0.1:9/mcp\"\n\n[projects.\"/work/web\"]\ntrust_level = \"trusted\"\n";
    const HOOKS: &str = "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}]\n  }\n}\n";

    #[test]
    fn connecting_merges_keeps_notify_and_formatting_is_idempotent_and_undoes_exactly() {
        let d = tempfile::tempdir().unwrap();
        let (hooks_file, config_file) = files(d.path());
        fs::write(&hooks_file, HOOKS).unwrap();
        fs::write(&config_file, CONFIG).unwrap();

        let changes = connect(
            d.path(),
            "/opt/tk/taskkeeper",
            "http://127.0.0.1:7777",
            "wtok",
            None,
        )
        .unwrap();
        let note = &changes[2].what;
        assert!(
            note.contains("not trusted yet") && note.contains("--dangerously-bypass-hook-trust"),
            "without the codex command, the change says what the user must approve: {note}"
        );
        let config = fs::read_to_string(&config_file).unwrap();
        let ours = "[mcp_servers.taskkeeper]\nurl = \"http://127.0.0.1:7777/mcp\"\nhttp_headers = { Authorization = \"Bearer wtok\" }\n\n";
        assert_eq!(
            config.replacen(ours, "", 1),
            CONFIG,
            "only our table is new, beside the user's MCP servers; every line of theirs stays as typed"
        );
        let doc: DocumentMut = config.parse().unwrap();
        assert_eq!(doc["notify"].as_array().unwrap().len(), 2);
        assert_eq!(
            doc["mcp_servers"]["taskkeeper"]["url"].as_str(),
            Some("http://127.0.0.1:7777/mcp")
        );
        assert_eq!(
            doc["mcp_servers"]["taskkeeper"]["http_headers"]["Authorization"].as_str(),
            Some("Bearer wtok")
        );
        let hooks: Value = serde_json::from_str(&fs::read_to_string(&hooks_file).unwrap()).unwrap();
        assert_eq!(hooks["hooks"]["Stop"][0]["hooks"][0]["command"], "say done");
        assert_eq!(
            hooks["hooks"]["Stop"][1]["hooks"][0]["command"],
            "/opt/tk/taskkeeper hook codex"
        );
        assert_eq!(hooks["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 3);
        for event in CODEX_EVENTS {
            assert!(hooks["hooks"][event].is_array(), "{event}");
        }

        let (hooks_once, config_once) = (
            fs::read_to_string(&hooks_file).unwrap(),
            fs::read_to_string(&config_file).unwrap(),
        );
        let again = connect(
            d.path(),
            "/opt/tk/taskkeeper",
            "http://127.0.0.1:7777",
            "wtok",
            None,
        )
        .unwrap();
        assert!(
            again[..2].iter().all(|c| c.what.contains("unchanged")),
            "{again:?}"
        );
        assert_eq!(fs::read_to_string(&hooks_file).unwrap(), hooks_once);
        assert_eq!(fs::read_to_string(&config_file).unwrap(), config_once);

        let wired = inspect(d.path()).unwrap();
        assert!(wired.connected() && wired.events_missing.is_empty() && wired.can_undo);
        assert_eq!(wired.hook_commands, ["/opt/tk/taskkeeper"]);
        assert_eq!(wired.mcp_token.as_deref(), Some("wtok"));

        // Another daemon address and token replace ours, in place.
        connect(d.path(), "taskkeeper", "http://127.0.0.1:8888", "new", None).unwrap();
        let config = fs::read_to_string(&config_file).unwrap();
        assert_eq!(
            config.matches("[mcp_servers.taskkeeper]").count(),
            1,
            "{config}"
        );
        assert!(config.contains("Bearer new"), "{config}");

        disconnect(d.path()).unwrap();
        assert_eq!(fs::read_to_string(&hooks_file).unwrap(), HOOKS);
        assert_eq!(fs::read_to_string(&config_file).unwrap(), CONFIG);
        assert!(!inspect(d.path()).unwrap().connected());
    }

    #[test]
    fn files_that_did_not_exist_are_removed_again() {
        let d = tempfile::tempdir().unwrap();
        let codex = d.path().join(".codex");
        connect(&codex, "taskkeeper", "http://127.0.0.1:1", "t", None).unwrap();
        let (hooks_file, config_file) = files(&codex);
        assert!(hooks_file.is_file() && config_file.is_file());
        let undone = disconnect(&codex).unwrap();
        assert!(
            undone.iter().all(|c| c.what.contains("did not exist")),
            "{undone:?}"
        );
        assert!(!hooks_file.exists() && !config_file.exists());
        assert_eq!(fs::read_dir(&codex).unwrap().count(), 0, "no sidecars left");
    }

    #[test]
    fn a_broken_file_is_refused_and_nothing_is_written() {
        let d = tempfile::tempdir().unwrap();
        let (hooks_file, config_file) = files(d.path());
        fs::write(&config_file, "model = \"gpt-5\n[oops").unwrap();
        let err = connect(d.path(), "taskkeeper", "http://127.0.0.1:1", "t", None).unwrap_err();
        assert!(matches!(err, ConnectError::NotToml { .. }), "{err}");
        assert!(
            err.to_string().contains("config.toml")
                && err.to_string().contains("nothing was changed"),
            "{err}"
        );
        assert!(!hooks_file.exists(), "hooks.json was not written either");

        fs::write(&config_file, "mcp_servers = 3\n").unwrap();
        let err = connect(d.path(), "taskkeeper", "http://127.0.0.1:1", "t", None).unwrap_err();
        assert!(matches!(err, ConnectError::NotTable { .. }), "{err}");
        assert_eq!(
            fs::read_to_string(&config_file).unwrap(),
            "mcp_servers = 3\n"
        );

        fs::write(&config_file, "").unwrap();
        fs::write(&hooks_file, "{\"hooks\": ").unwrap();
        let err = connect(d.path(), "taskkeeper", "http://127.0.0.1:1", "t", None).unwrap_err();
        assert!(matches!(err, ConnectError::NotJson { .. }), "{err}");
        assert_eq!(fs::read_to_string(&config_file).unwrap(), "");
        assert_eq!(
            fs::read_dir(d.path()).unwrap().count(),
            2,
            "no backups either"
        );
    }
}
