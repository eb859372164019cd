//! Connecting an agent to Taskkeeper, once for the CLI (`taskkeeper connect claude-code`) and
//! the window (the owner service's `connect_agent`): both call these functions, so a Connect
//! button and the command change exactly the same files in exactly the same way.
//!
//! For Claude Code that is a merge into its settings — the hooks (every event through
//! `taskkeeper hook`, plus the asyncRewake waiter on Stop), the permission for our MCP tools,
//! and the MCP server `taskkeeper` whose worker token (the sessions' own, never the owner's)
//! comes from `taskkeeper mcp-headers`, never written into a settings file.
//!
//! It merges: whatever else is in the files stays as it was; connecting again changes
//! nothing; before the first change to a file it keeps a backup, and [`disconnect`] restores
//! exactly what was there (or removes a file it created). A file that is not valid JSON is
//! refused and nothing is written.
//!
//! What the settings name is the command agents will run for years, so it must outlive the
//! build that wrote it: [`command_for`] names `taskkeeper` when that is what the PATH finds,
//! else the binary's path, and refuses a binary inside a Cargo build directory (a `cargo
//! clean` would silently break every hook). [`check`] reads the settings back and says
//! whether what they name still runs and reaches a daemon.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub mod codex;
pub mod gemini;

/// The agents Taskkeeper can connect, by the name the CLI and the API use.
pub const CLAUDE_CODE: &str = "claude-code";
/// Codex CLI ([`codex`]).
pub const CODEX: &str = "codex";
/// Gemini CLI ([`gemini`]).
pub const GEMINI: &str = "gemini";

/// The CLI's command name, what agents' settings name when the PATH finds it.
pub const COMMAND: &str = "taskkeeper";

/// Where the changes go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// `~/.claude/settings.json` and the user's MCP servers in `~/.claude.json`.
    User,
    /// `DIR/.claude/settings.local.json` and the project's local MCP servers in
    /// `~/.claude.json` (neither is meant to be committed). DIR is absolute.
    Project(PathBuf),
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot find your home directory (is HOME set?), so not Claude Code's settings either")]
    NoHome,
    #[error("unknown agent {0:?}: Taskkeeper connects claude-code, codex and gemini")]
    UnknownAgent(String),
    #[error(
        "the window connects claude-code only so far; connect {0} from a terminal: \
         `taskkeeper connect {0}` (nothing was changed)"
    )]
    OnlyFromTheCli(String),
    #[error("{} is not valid TOML ({reason}); fix it by hand first (nothing was changed)", file.display())]
    NotToml { file: PathBuf, reason: String },
    #[error("`{key}` in {} is not a table; fix it by hand first (nothing was changed)", file.display())]
    NotTable { file: PathBuf, key: String },
    #[error("{} is not valid JSON ({reason}); fix it by hand first (nothing was changed)", file.display())]
    NotJson { file: PathBuf, reason: String },
    #[error("{} is not a JSON object; fix it by hand first (nothing was changed)", file.display())]
    NotObject { file: PathBuf },
    #[error("{what} {}: {source}", file.display())]
    Io {
        what: &'static str,
        file: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{} is inside a Cargo build directory: `cargo clean` or the next build elsewhere would \
         silently break every hook that names it. Install it first (the package, or `cargo \
         install --path crates/cli --locked`) and connect with the installed `taskkeeper`, or \
         connect anyway with --force (nothing was changed)",
        exe.display()
    )]
    InBuildDir { exe: PathBuf },
    #[error(
        "cannot find the `taskkeeper` command: it is neither beside {} nor on the PATH; install \
         the package (or `cargo install --path crates/cli --locked`) (nothing was changed)",
        beside.display()
    )]
    NoCli { beside: PathBuf },
}

fn io(what: &'static str, file: &Path) -> impl FnOnce(std::io::Error) -> ConnectError + use<> {
    let file = file.to_owned();
    move |source| ConnectError::Io { what, file, source }
}

// ---- which command the settings name ----

/// The `taskkeeper` binary agents should run: this program when it is `taskkeeper` (the CLI,
/// `taskkeeper serve`), else the one installed beside it (the tray app: `/usr/bin/taskkeeper`
/// beside `/usr/bin/taskkeeper-app`, or inside the macOS bundle), else the one on the PATH.
pub fn cli_binary() -> Result<PathBuf, ConnectError> {
    let me = std::env::current_exe().map_err(io("finding", Path::new("this program")))?;
    if me.file_stem() == Some(OsStr::new(COMMAND)) {
        return Ok(me);
    }
    let beside = me.with_file_name(format!("{COMMAND}{}", std::env::consts::EXE_SUFFIX));
    if beside.is_file() {
        return Ok(beside);
    }
    which::which(COMMAND).map_err(|_| ConnectError::NoCli { beside })
}

/// Is this binary inside a Cargo target directory? The profile directory (`debug`,
/// `release`) holds `.fingerprint`; the target directory itself holds `CACHEDIR.TAG`. A few
/// levels cover `target/<triple>/release/` and `deps/`.
pub fn in_build_dir(exe: &Path) -> bool {
    exe.ancestors()
        .skip(1)
        .take(4)
        .any(|dir| dir.join(".fingerprint").is_dir() || dir.join("CACHEDIR.TAG").is_file())
}

/// What the settings should name to run `exe`: the bare command name when `path` (a PATH
/// value) finds that very binary, so a reinstall elsewhere on the PATH keeps working; else
/// `exe`'s own path. A binary in a build directory is refused unless `force`.
pub fn command_for(exe: &Path, path: Option<&OsStr>, force: bool) -> Result<String, ConnectError> {
    if !force && in_build_dir(exe) {
        return Err(ConnectError::InBuildDir {
            exe: exe.to_owned(),
        });
    }
    if let Some(found) = find_on(COMMAND, path)
        && same_file(&found, exe)
    {
        return Ok(COMMAND.to_owned());
    }
    Ok(exe.to_string_lossy().into_owned())
}

fn find_on(name: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
    which::which_in(name, path, cwd).ok()
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Where a command a settings file names leads: a path as it is, a bare name through `path`.
pub fn resolve(command: &str, path: Option<&OsStr>) -> Option<PathBuf> {
    let p = Path::new(command);
    if p.components().count() > 1 || p.is_absolute() {
        p.is_file().then(|| p.to_owned())
    } else {
        find_on(command, path)
    }
}

// ---- the files ----

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

/// The user's home directory (on Unix, `HOME`).
pub fn home() -> Result<PathBuf, ConnectError> {
    directories::BaseDirs::new()
        .map(|d| d.home_dir().to_owned())
        .ok_or(ConnectError::NoHome)
}

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

fn sidecar(file: &Path, what: &str) -> PathBuf {
    let mut name = file
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(format!(".{what}"));
    file.with_file_name(name)
}

fn read_json(file: &Path) -> Result<Option<Map<String, Value>>, ConnectError> {
    match fs::read_to_string(file) {
        Ok(text) if text.trim().is_empty() => Ok(Some(Map::new())),
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(_) => Err(ConnectError::NotObject {
                file: file.to_owned(),
            }),
            Err(e) => Err(ConnectError::NotJson {
                file: file.to_owned(),
                reason: e.to_string(),
            }),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("reading", file)(e)),
    }
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

/// The headers helper: a shell command line, so a path with spaces or quotes is quoted.
fn helper_line(exe: &str) -> String {
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

/// One file changed (or left alone), as the CLI prints it and the window lists it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Change {
    pub file: PathBuf,
    pub what: String,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.what)
    }
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

/// Keep what was there before the first change: a copy, or a note that there was no file.
fn backup(file: &Path, existed: bool) -> Result<(), ConnectError> {
    let (copy, absent) = (sidecar(file, BACKUP), sidecar(file, ABSENT));
    if copy.exists() || absent.exists() {
        return Ok(());
    }
    if let Some(parent) = file.parent() {
        fs::create_dir_all(parent).map_err(io("creating", parent))?;
    }
    if existed {
        fs::copy(file, &copy).map_err(io("backing up", file))?;
    } else {
        fs::write(&absent, b"").map_err(io("writing", &absent))?;
    }
    Ok(())
}

fn restore(file: &Path) -> Result<Change, ConnectError> {
    let (copy, absent) = (sidecar(file, BACKUP), sidecar(file, ABSENT));
    let what = if copy.exists() {
        fs::rename(&copy, file).map_err(io("restoring", file))?;
        "restored as it was before `connect`"
    } else if absent.exists() {
        if file.exists() {
            fs::remove_file(file).map_err(io("removing", file))?;
        }
        fs::remove_file(&absent).map_err(io("removing", &absent))?;
        "removed (it did not exist before `connect`)"
    } else {
        "nothing to undo"
    };
    Ok(Change {
        file: file.to_owned(),
        what: what.into(),
    })
}

fn write_atomically(file: &Path, text: &str) -> Result<(), ConnectError> {
    let tmp = sidecar(file, "taskkeeper-tmp");
    fs::write(&tmp, text).map_err(io("writing", &tmp))?;
    fs::rename(&tmp, file).map_err(io("replacing", file))?;
    Ok(())
}

/// Write `after` to `file` unless it already holds exactly that, keeping a backup of what
/// was there before the first change. For agents whose files are not rewritten as JSON
/// objects ([`codex`]'s TOML) and whose plan is text.
fn write_planned(
    file: PathBuf,
    before: Option<&str>,
    after: &str,
    what: &str,
) -> Result<Change, ConnectError> {
    if before == Some(after) {
        return Ok(Change {
            file,
            what: "already connected, unchanged".into(),
        });
    }
    backup(&file, before.is_some())?;
    if let Some(parent) = file.parent() {
        fs::create_dir_all(parent).map_err(io("creating", parent))?;
    }
    write_atomically(&file, after)?;
    Ok(Change {
        file,
        what: what.into(),
    })
}

/// A JSON object as `connect` writes it: pretty, with a final newline.
fn json_text(file: &Path, object: Map<String, Value>) -> Result<String, ConnectError> {
    Ok(serde_json::to_string_pretty(&Value::Object(object))
        .map_err(|e| io("writing", file)(e.into()))?
        + "\n")
}

/// The text to write for a JSON file: what it holds when the merge changed nothing (so a
/// file that is already connected stays byte for byte as it is), else `after` as `connect`
/// writes JSON.
fn unchanged_or(
    file: &Path,
    before: Option<Map<String, Value>>,
    after: Map<String, Value>,
    text: Option<&str>,
) -> Result<String, ConnectError> {
    match (before, text) {
        (Some(before), Some(text)) if before == after => Ok(text.to_owned()),
        _ => json_text(file, after),
    }
}

/// The text a file holds, `None` when there is none.
fn read_text(file: &Path) -> Result<Option<String>, ConnectError> {
    match fs::read_to_string(file) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("reading", file)(e)),
    }
}

// ---- hooks named by a command line (Codex, Gemini) ----

/// The command line an agent without an `args` field runs for its hooks.
fn hook_line(exe: &str, agent: &str) -> String {
    format!("{} hook {agent}", shell_words::quote(exe))
}

/// The `taskkeeper` a hook handler's command line runs, when the handler is ours (its first
/// word's file is `taskkeeper`, its second `hook`).
fn line_command(handler: &Value) -> Option<String> {
    let line = handler.get("command").and_then(Value::as_str)?;
    let words = shell_words::split(line).ok()?;
    match words.as_slice() {
        [exe, hook, ..]
            if Path::new(exe).file_stem() == Some(OsStr::new(COMMAND)) && hook == "hook" =>
        {
            Some(exe.clone())
        }
        _ => None,
    }
}

/// Put our handlers (`handler(event)`) into a `hooks` object of Claude Code's shape
/// (`{event: [{hooks: [handler]}]}`), replacing any of ours already there.
fn merge_line_hooks(
    settings: &mut Map<String, Value>,
    events: &[&str],
    handler: impl Fn(&str) -> Value,
) {
    remove_line_hooks(settings);
    let hooks = settings.entry("hooks").or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    if let Value::Object(hooks) = hooks {
        for event in events {
            let group = json!({"hooks": [handler(event)]});
            let list = hooks.entry(*event).or_insert_with(|| json!([]));
            if let Value::Array(list) = list {
                list.push(group);
            } else {
                *list = json!([group]);
            }
        }
    }
}

/// Take our handlers out of a `hooks` object (groups and events left empty go too).
fn remove_line_hooks(settings: &mut Map<String, Value>) {
    if let Some(Value::Object(hooks)) = settings.get_mut("hooks") {
        for list in hooks.values_mut() {
            if let Value::Array(groups) = list {
                for g in groups.iter_mut() {
                    if let Some(Value::Array(hs)) = g.get_mut("hooks") {
                        hs.retain(|h| line_command(h).is_none());
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
    if settings
        .get("hooks")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        settings.remove("hooks");
    }
}

/// Our hook commands in a `hooks` object, and the events that have none of ours.
fn line_hooks_found(
    settings: &Map<String, Value>,
    events: &'static [&'static str],
) -> (Vec<String>, Vec<&'static str>) {
    let mut commands: Vec<String> = Vec::new();
    let mut missing = Vec::new();
    for event in events {
        let groups = settings
            .get("hooks")
            .and_then(|h| h.get(*event))
            .and_then(Value::as_array);
        let mut found = false;
        for group in groups.into_iter().flatten() {
            let handlers = group.get("hooks").and_then(Value::as_array);
            for command in handlers.into_iter().flatten().filter_map(line_command) {
                found = true;
                if !commands.contains(&command) {
                    commands.push(command);
                }
            }
        }
        if !found {
            missing.push(*event);
        }
    }
    (commands, missing)
}

fn can_undo(files: &[&Path]) -> bool {
    files
        .iter()
        .any(|f| sidecar(f, BACKUP).exists() || sidecar(f, ABSENT).exists())
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

// ---- reading it back ----

/// What Claude Code's settings say about Taskkeeper now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wired {
    pub settings_file: PathBuf,
    pub config_file: PathBuf,
    /// Each distinct command our hooks run.
    pub hook_commands: Vec<String>,
    /// Hook events that have none of ours.
    pub events_missing: Vec<&'static str>,
    /// The MCP entry's URL, when there is an entry.
    pub mcp_url: Option<String>,
    /// The command of the MCP entry's headers helper.
    pub helper_command: Option<String>,
    pub has_mcp_entry: bool,
    /// The bearer token the MCP entry sends, where the agent keeps it in its configuration
    /// (Codex, Gemini: neither has a headers helper); `None` for Claude Code.
    pub mcp_token: Option<String>,
    /// A backup (or a note that the file was absent) is kept: [`disconnect`] has work to do.
    pub can_undo: bool,
}

impl Wired {
    /// Anything of ours is in the settings.
    pub fn connected(&self) -> bool {
        !self.hook_commands.is_empty() || self.has_mcp_entry
    }

    /// Every command the settings make Claude Code run.
    pub fn commands(&self) -> Vec<&str> {
        let mut all: Vec<&str> = self.hook_commands.iter().map(String::as_str).collect();
        if let Some(h) = &self.helper_command
            && !all.contains(&h.as_str())
        {
            all.push(h);
        }
        all
    }
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

/// Does `command` (as a settings file names it) run Taskkeeper? Answers its version line.
pub fn check_command(command: &str, path: Option<&OsStr>) -> Result<String, String> {
    let Some(exe) = resolve(command, path) else {
        return Err(format!(
            "`{command}` is not there (not a file, or not on the PATH): the binary was moved, \
             removed or cleaned; connect again with the installed `taskkeeper`"
        ));
    };
    let mut child = Command::new(&exe)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("`{command}` does not run ({e}); connect again"))?;
    // A program that is not ours may never answer `--version`.
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("`{command} --version` did not answer within 5 s"));
            }
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut stdout, &mut out);
    }
    let line = out.lines().next().unwrap_or("").trim().to_owned();
    if status.success() && line.starts_with("taskkeeper ") {
        Ok(line)
    } else {
        Err(format!(
            "`{command}` is not Taskkeeper (`--version` answered {line:?}); connect again"
        ))
    }
}

/// The result of [`check`]: what is fine and what is not, a line each.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    pub ok: Vec<String>,
    pub problems: Vec<String>,
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
        // Connecting again with another command replaces ours, whatever it named.
        merge_settings(&mut s, "taskkeeper");
        assert_eq!(s["hooks"]["Stop"].as_array().unwrap().len(), 2);
        remove_settings(&mut s);
        assert_eq!(s, original);
    }

    #[test]
    fn a_binary_in_a_cargo_target_directory_is_refused_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let profile = dir.path().join("target/debug");
        fs::create_dir_all(profile.join(".fingerprint")).unwrap();
        fs::write(dir.path().join("target/CACHEDIR.TAG"), "Signature: x").unwrap();
        let exe = profile.join("taskkeeper");
        fs::write(&exe, "").unwrap();
        let err = command_for(&exe, Some(OsStr::new("")), false).unwrap_err();
        assert!(matches!(err, ConnectError::InBuildDir { .. }), "{err}");
        assert!(err.to_string().contains("--force"), "{err}");
        assert_eq!(
            command_for(&exe, Some(OsStr::new("")), true).unwrap(),
            exe.to_string_lossy()
        );
        let deps = profile.join("deps/taskkeeper-0123");
        fs::create_dir_all(deps.parent().unwrap()).unwrap();
        assert!(in_build_dir(&deps));

        let installed = dir.path().join("bin/taskkeeper");
        fs::create_dir_all(installed.parent().unwrap()).unwrap();
        fs::write(&installed, "").unwrap();
        assert!(!in_build_dir(&installed));
    }

    #[cfg(unix)]
    #[test]
    fn the_command_name_is_written_only_when_the_path_finds_the_same_binary() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let make = |p: &Path| {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(p, fs::Permissions::from_mode(0o755)).unwrap();
        };
        let (bin, other) = (dir.path().join("bin"), dir.path().join("other"));
        let exe = bin.join("taskkeeper");
        make(&exe);
        make(&other.join("taskkeeper"));
        let path = std::env::join_paths([&bin]).unwrap();
        assert_eq!(command_for(&exe, Some(&path), false).unwrap(), "taskkeeper");
        // Another `taskkeeper` comes first on the PATH: name this one by its path.
        let path = std::env::join_paths([&other, &bin]).unwrap();
        assert_eq!(
            command_for(&exe, Some(&path), false).unwrap(),
            exe.to_string_lossy()
        );
    }

    #[test]
    fn the_helper_line_quotes_a_path_and_reads_back() {
        let line = helper_line("/opt/my apps/taskkeeper");
        assert_eq!(line, "'/opt/my apps/taskkeeper' mcp-headers");
        assert_eq!(
            shell_words::split(&line).unwrap(),
            ["/opt/my apps/taskkeeper", "mcp-headers"]
        );
        assert_eq!(helper_line("taskkeeper"), "taskkeeper mcp-headers");
    }
}
