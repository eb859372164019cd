//! Connecting Claude Code: our hooks, the headers helper and the permission for our tools in
//! its settings file, our MCP server in `~/.claude.json`, both merged so nothing of the
//! user's changes, backed up before the first change and undone exactly; and reading that
//! back (`inspect`, `check`).

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::{
    ABSENT, BACKUP, COMMAND, Change, Check, ConnectError, Scope, Wired, backup, check_command,
    find_on, io, read_json, restore, sidecar, write_atomically,
};

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

/// The two files Claude Code keeps what we change in: (settings, `~/.claude.json`).
pub fn files(home: &Path, scope: &Scope) -> (PathBuf, PathBuf) {
    let settings = match scope {
        Scope::User => home.join(".claude").join("settings.json"),
        Scope::Project(dir) => dir.join(".claude").join("settings.local.json"),
    };
    (settings, home.join(".claude.json"))
}

/// Does this machine have Claude Code (the `claude` command, or its settings in `home`)?
pub fn claude_code_found(home: &Path, path: Option<&OsStr>) -> bool {
    find_on("claude", path).is_some()
        || home.join(".claude").is_dir()
        || home.join(".claude.json").is_file()
}

/// Is this handler one of ours? (Any path or name whose file is `taskkeeper`, running `hook`.)
fn ours(handler: &Value) -> bool {
    handler_command(handler).is_some()
}

fn handler_command(handler: &Value) -> Option<&str> {
    let command = handler.get("command").and_then(Value::as_str)?;
    let first_arg = handler
        .get("args")
        .and_then(|a| a.get(0))
        .and_then(Value::as_str)?;
    (Path::new(command).file_stem() == Some(OsStr::new(COMMAND)) && first_arg == "hook")
        .then_some(command)
}

fn handler(exe: &str, args: &[&str], timeout: u32) -> Value {
    json!({"type": "command", "command": exe, "args": args, "timeout": timeout})
}

/// Merge our hooks and permission into a settings object.
pub(super) fn merge_settings(settings: &mut Map<String, Value>, exe: &str) {
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
pub(super) fn remove_settings(settings: &mut Map<String, Value>) {
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

/// The headers helper: a shell command line, so a path with spaces or quotes is quoted.
pub(super) fn helper_line(exe: &str) -> String {
    format!("{} mcp-headers", shell_words::quote(exe))
}

fn mcp_entry(exe: &str, url: &str) -> Value {
    json!({
        "type": "http",
        "url": format!("{url}/mcp"),
        "headersHelper": helper_line(exe),
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

fn our_mcp_server<'a>(config: &'a Map<String, Value>, scope: &Scope) -> Option<&'a Value> {
    let holder = match scope {
        Scope::User => config,
        Scope::Project(dir) => config
            .get("projects")?
            .get(dir.to_string_lossy().as_ref())?
            .as_object()?,
    };
    holder.get("mcpServers")?.get(COMMAND)
}

/// Connect Claude Code: its hooks and headers helper run `command` (see [`command_for`]),
/// its MCP entry points at `url` (the daemon's base address). Everything is read and checked
/// before anything is written.
pub fn connect(
    home: &Path,
    scope: &Scope,
    command: &str,
    url: &str,
) -> Result<Vec<Change>, ConnectError> {
    let (settings_file, config_file) = files(home, scope);
    let settings = read_json(&settings_file)?;
    let config = read_json(&config_file)?;
    let mut new_settings = settings.clone().unwrap_or_default();
    merge_settings(&mut new_settings, command);
    let mut new_config = config.clone().unwrap_or_default();
    if let Some(servers) = mcp_servers(&mut new_config, scope) {
        servers.insert(COMMAND.into(), mcp_entry(command, url));
    }
    let plans = [
        (
            settings_file,
            settings,
            new_settings,
            "added Taskkeeper's hooks (all events, and the waiter on Stop) and allowed mcp__taskkeeper",
        ),
        (
            config_file,
            config,
            new_config,
            "added the MCP server `taskkeeper` (the worker token through `taskkeeper mcp-headers`)",
        ),
    ];
    let mut done = Vec::new();
    for (file, before, after, what) in plans {
        if before.as_ref() == Some(&after) {
            done.push(Change {
                file,
                what: "already connected, unchanged".into(),
            });
            continue;
        }
        backup(&file, before.is_some())?;
        if let Some(parent) = file.parent() {
            fs::create_dir_all(parent).map_err(io("creating", parent))?;
        }
        let text = serde_json::to_string_pretty(&Value::Object(after))
            .map_err(|e| io("writing", &file)(e.into()))?
            + "\n";
        write_atomically(&file, &text)?;
        done.push(Change {
            file,
            what: what.into(),
        });
    }
    Ok(done)
}

/// Disconnect: put both files back exactly as they were before the first `connect`.
pub fn disconnect(home: &Path, scope: &Scope) -> Result<Vec<Change>, ConnectError> {
    let (settings_file, config_file) = files(home, scope);
    [settings_file, config_file]
        .iter()
        .map(|f| restore(f))
        .collect()
}

/// Read what the settings hold (nothing is written).
pub fn inspect(home: &Path, scope: &Scope) -> Result<Wired, ConnectError> {
    let (settings_file, config_file) = files(home, scope);
    let settings = read_json(&settings_file)?.unwrap_or_default();
    let config = read_json(&config_file)?.unwrap_or_default();
    let mut hook_commands: Vec<String> = Vec::new();
    let mut events_missing = Vec::new();
    for (event, _) in EVENTS {
        let mut found = false;
        let groups = settings
            .get("hooks")
            .and_then(|h| h.get(event))
            .and_then(Value::as_array);
        for group in groups.into_iter().flatten() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for command in handlers.into_iter().flatten().filter_map(handler_command) {
                found = true;
                if !hook_commands.iter().any(|c| c == command) {
                    hook_commands.push(command.to_owned());
                }
            }
        }
        if !found {
            events_missing.push(event);
        }
    }
    let entry = our_mcp_server(&config, scope);
    let helper_command = entry
        .and_then(|e| e.get("headersHelper"))
        .and_then(Value::as_str)
        .and_then(|line| shell_words::split(line).ok())
        .and_then(|words| words.into_iter().next());
    let can_undo = [&settings_file, &config_file]
        .iter()
        .any(|f| sidecar(f, BACKUP).exists() || sidecar(f, ABSENT).exists());
    Ok(Wired {
        mcp_url: entry
            .and_then(|e| e.get("url"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        has_mcp_entry: entry.is_some(),
        mcp_token: None,
        helper_command,
        hook_commands,
        events_missing,
        settings_file,
        config_file,
        can_undo,
    })
}

/// Do the hooks and the MCP entry still point at a working Taskkeeper? The commands must
/// exist and answer as Taskkeeper; `daemon` is asked about the MCP entry's URL (the CLI asks
/// over HTTP; the daemon itself compares it with its own address).
pub fn check(
    wired: &Wired,
    path: Option<&OsStr>,
    daemon: impl Fn(&str) -> Result<String, String>,
) -> Check {
    let mut c = Check::default();
    if wired.hook_commands.is_empty() {
        c.problems.push(format!(
            "no Taskkeeper hooks in {}",
            wired.settings_file.display()
        ));
    } else if !wired.events_missing.is_empty() {
        c.problems.push(format!(
            "{} has no Taskkeeper hook for {}; connect again",
            wired.settings_file.display(),
            wired.events_missing.join(", ")
        ));
    }
    for command in wired.commands() {
        match check_command(command, path) {
            Ok(version) => c.ok.push(format!("`{command}` runs ({version})")),
            Err(problem) => c.problems.push(problem),
        }
    }
    match (&wired.mcp_url, wired.has_mcp_entry) {
        (_, false) => c.problems.push(format!(
            "no MCP server `taskkeeper` in {}",
            wired.config_file.display()
        )),
        (None, true) => c.problems.push(format!(
            "the MCP server `taskkeeper` in {} has no url; connect again",
            wired.config_file.display()
        )),
        (Some(url), true) => match daemon(url) {
            Ok(fine) => c.ok.push(fine),
            Err(problem) => c.problems.push(problem),
        },
    }
    c
}
