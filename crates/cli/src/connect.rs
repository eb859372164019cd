//! `taskkeeper connect claude-code`: registers Taskkeeper with Claude Code by merging into
//! its settings — the hooks (every event through `taskkeeper hook`, plus the asyncRewake
//! waiter on Stop), the permission for our MCP tools, and the MCP server `taskkeeper` whose
//! worker token (the sessions' own, never the owner's) comes from `taskkeeper mcp-headers`,
//! never written into a settings file.
//!
//! It merges: whatever else is in the files stays as it was; running it again changes
//! nothing; before the first change to a file it keeps a backup, and `--undo` restores
//! exactly what was there (or removes a file it created). A file that is not valid JSON is
//! refused and nothing is written.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use serde_json::{Map, Value, json};

/// Where the changes go.
#[derive(Debug, Clone)]
pub enum Scope {
    /// `~/.claude/settings.json` and the user's MCP servers in `~/.claude.json`.
    User,
    /// `DIR/.claude/settings.local.json` and the project's local MCP servers in
    /// `~/.claude.json` (neither is meant to be committed).
    Project(PathBuf),
}

const BACKUP: &str = "taskkeeper-backup";
const ABSENT: &str = "taskkeeper-absent";

/// Hook events that get the plain handler, with the timeout (seconds) each may take.
const EVENTS: [(&str, u32); 10] = [
    ("SessionStart", 5),
    ("UserPromptSubmit", 5),
    ("PreToolUse", 5),
    ("PostToolUse", 5),
    ("PermissionRequest", 5),
    ("Notification", 5),
    ("Stop", 10),
    ("StopFailure", 5),
    ("SessionEnd", 2),
    ("PostToolUseFailure", 5),
];

fn home() -> anyhow::Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set; cannot find Claude Code's settings")
}

fn sidecar(file: &Path, what: &str) -> PathBuf {
    let mut name = file
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{what}"));
    file.with_file_name(name)
}

fn read_json(file: &Path) -> anyhow::Result<Option<Map<String, Value>>> {
    match fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Ok(Some(Map::new())),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(_) => bail!(
                "{} is not a JSON object; fix it by hand first (nothing was changed)",
                file.display()
            ),
            Err(e) => bail!(
                "{} is not valid JSON ({e}); fix it by hand first (nothing was changed)",
                file.display()
            ),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", file.display())),
    }
}

/// Is this handler one of ours?
fn ours(handler: &Value) -> bool {
    let command = handler.get("command").and_then(Value::as_str).unwrap_or("");
    let first_arg = handler
        .get("args")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)
        .unwrap_or("");
    command.ends_with("taskkeeper") && first_arg == "hook"
}

fn handler(exe: &str, args: &[&str], timeout: u32) -> Value {
    json!({"type": "command", "command": exe, "args": args, "timeout": timeout})
}

/// Merge our hooks and permission into a settings object.
fn merge_settings(settings: &mut Map<String, Value>, exe: &str) {
    remove_settings(settings);
    let hooks = settings.entry("hooks").or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    if let Value::Object(hooks) = hooks {
        for (event, timeout) in EVENTS {
            let mut handlers = vec![handler(exe, &["hook"], timeout)];
            if event == "Stop" {
                let mut waiter = handler(exe, &["hook", "wait"], 28_800);
                waiter["asyncRewake"] = json!(true);
                handlers.push(waiter);
            }
            let mut group = json!({"hooks": handlers});
            if event == "PreToolUse" {
                // Only our tools need the session id filled in.
                group["matcher"] = json!("mcp__taskkeeper__.*");
            }
            let list = hooks.entry(event).or_insert_with(|| json!([]));
            if let Value::Array(list) = list {
                list.push(group);
            } else {
                *list = json!([group]);
            }
        }
    }
    let allow = settings
        .entry("permissions")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .map(|p| p.entry("allow").or_insert_with(|| json!([])));
    if let Some(Value::Array(allow)) = allow {
        allow.push(json!("mcp__taskkeeper"));
    }
}

/// Take our hooks and permission out again (groups left empty go too).
fn remove_settings(settings: &mut Map<String, Value>) {
    if let Some(Value::Object(hooks)) = settings.get_mut("hooks") {
        for list in hooks.values_mut() {
            if let Value::Array(groups) = list {
                for g in groups.iter_mut() {
                    if let Some(Value::Array(hs)) = g.get_mut("hooks") {
                        hs.retain(|h| !ours(h));
                    }
                }
                groups.retain(|g| {
                    g.get("hooks")
                        .and_then(Value::as_array)
                        .is_none_or(|h| !h.is_empty())
                });
            }
        }
        hooks.retain(|_, list| list.as_array().is_none_or(|l| !l.is_empty()));
    }
    if let Some(Value::Array(allow)) = settings
        .get_mut("permissions")
        .and_then(|p| p.get_mut("allow"))
    {
        allow.retain(|a| a != "mcp__taskkeeper");
    }
}

fn mcp_entry(exe: &str, url: &str) -> Value {
    json!({
        "type": "http",
        "url": format!("{url}/mcp"),
        "headersHelper": format!("'{exe}' mcp-headers"),
        "alwaysLoad": true,
    })
}

/// The object in `~/.claude.json` that holds our MCP server for this scope.
fn mcp_servers<'a>(
    config: &'a mut Map<String, Value>,
    scope: &Scope,
) -> Option<&'a mut Map<String, Value>> {
    let holder = match scope {
        Scope::User => config,
        Scope::Project(dir) => {
            let projects = config
                .entry("projects")
                .or_insert_with(|| json!({}))
                .as_object_mut()?;
            projects
                .entry(dir.to_string_lossy().into_owned())
                .or_insert_with(|| json!({}))
                .as_object_mut()?
        }
    };
    holder
        .entry("mcpServers")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

struct Plan {
    file: PathBuf,
    before: Option<Map<String, Value>>,
    after: Map<String, Value>,
}

fn files(scope: &Scope) -> anyhow::Result<(PathBuf, PathBuf)> {
    let home = home()?;
    let settings = match scope {
        Scope::User => home.join(".claude").join("settings.json"),
        Scope::Project(dir) => dir.join(".claude").join("settings.local.json"),
    };
    Ok((settings, home.join(".claude.json")))
}

/// Connect (or, with `undo`, disconnect) Claude Code. Returns what was done, a line each.
pub fn connect(scope: Scope, undo: bool) -> anyhow::Result<Vec<String>> {
    let scope = match scope {
        Scope::Project(dir) => Scope::Project(
            std::path::absolute(&dir).with_context(|| format!("resolving {}", dir.display()))?,
        ),
        s => s,
    };
    let (settings_file, config_file) = files(&scope)?;
    if undo {
        return [settings_file, config_file]
            .iter()
            .map(|f| restore(f))
            .collect();
    }
    let exe = std::env::current_exe().context("finding the taskkeeper binary")?;
    let exe = exe.to_string_lossy().into_owned();
    let url = crate::client::base_url();

    // Read and check everything before writing anything.
    let settings = read_json(&settings_file)?;
    let config = read_json(&config_file)?;
    let mut new_settings = settings.clone().unwrap_or_default();
    merge_settings(&mut new_settings, &exe);
    let mut new_config = config.clone().unwrap_or_default();
    if let Some(servers) = mcp_servers(&mut new_config, &scope) {
        servers.insert("taskkeeper".into(), mcp_entry(&exe, &url));
    }
    let plans = [
        Plan {
            file: settings_file,
            before: settings,
            after: new_settings,
        },
        Plan {
            file: config_file,
            before: config,
            after: new_config,
        },
    ];
    let mut done = Vec::new();
    for plan in plans {
        if plan.before.as_ref() == Some(&plan.after) {
            done.push(format!(
                "{}: already connected, unchanged",
                plan.file.display()
            ));
            continue;
        }
        backup(&plan.file, plan.before.is_some())?;
        if let Some(parent) = plan.file.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        let text = serde_json::to_string_pretty(&Value::Object(plan.after))? + "\n";
        write_atomically(&plan.file, &text)?;
        done.push(format!(
            "{}: {}",
            plan.file.display(),
            if plan.file.ends_with(".claude.json") {
                "added the MCP server `taskkeeper` (the worker token through `taskkeeper mcp-headers`)"
            } else {
                "added Taskkeeper's hooks (all events, and the waiter on Stop) and allowed mcp__taskkeeper"
            }
        ));
    }
    Ok(done)
}

/// Keep what was there before the first change: a copy, or a note that there was no file.
fn backup(file: &Path, existed: bool) -> anyhow::Result<()> {
    let (copy, absent) = (sidecar(file, BACKUP), sidecar(file, ABSENT));
    if copy.exists() || absent.exists() {
        return Ok(());
    }
    if let Some(parent) = file.parent() {
        fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    if existed {
        fs::copy(file, &copy).with_context(|| format!("backing up {}", file.display()))?;
    } else {
        fs::write(&absent, b"").with_context(|| format!("writing {}", absent.display()))?;
    }
    Ok(())
}

fn restore(file: &Path) -> anyhow::Result<String> {
    let (copy, absent) = (sidecar(file, BACKUP), sidecar(file, ABSENT));
    if copy.exists() {
        fs::rename(&copy, file).with_context(|| format!("restoring {}", file.display()))?;
        Ok(format!(
            "{}: restored as it was before `connect`",
            file.display()
        ))
    } else if absent.exists() {
        if file.exists() {
            fs::remove_file(file).with_context(|| format!("removing {}", file.display()))?;
        }
        fs::remove_file(&absent)?;
        Ok(format!(
            "{}: removed (it did not exist before `connect`)",
            file.display()
        ))
    } else {
        Ok(format!("{}: nothing to undo", file.display()))
    }
}

fn write_atomically(file: &Path, text: &str) -> anyhow::Result<()> {
    let tmp = sidecar(file, "taskkeeper-tmp");
    fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, file).with_context(|| format!("replacing {}", file.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_twice_is_merging_once_and_removal_leaves_the_rest() {
        let mut s: Map<String, Value> = serde_json::from_value(json!({
            "model": "opus",
            "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]},
            "permissions": {"allow": ["Bash(git *)"]}
        }))
        .unwrap();
        let original = s.clone();
        merge_settings(&mut s, "/usr/bin/taskkeeper");
        let once = s.clone();
        merge_settings(&mut s, "/usr/bin/taskkeeper");
        assert_eq!(s, once);
        let stop = &s["hooks"]["Stop"];
        assert_eq!(
            stop.as_array().unwrap().len(),
            2,
            "the user's Stop hook stays: {stop}"
        );
        assert_eq!(stop[1]["hooks"][1]["asyncRewake"], true);
        assert_eq!(
            s["hooks"]["PreToolUse"][0]["matcher"],
            "mcp__taskkeeper__.*"
        );
        assert_eq!(
            s["permissions"]["allow"],
            json!(["Bash(git *)", "mcp__taskkeeper"])
        );
        remove_settings(&mut s);
        assert_eq!(s, original);
    }
}
