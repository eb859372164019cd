//! Connecting an agent to Taskkeeper, once for the CLI (`taskkeeper connect claude-code`) and
//! the window (the owner service's `connect_agent`): both call these functions, so a Connect
//! button and the command change exactly the same files in exactly the same way.
//!
//! For Claude Code ([`claude_code`]) that is a merge into its settings — the hooks (every event through
//! `taskkeeper hook`, plus the asyncRewake waiter on Stop), the permission for our MCP tools,
//! and the MCP server `taskkeeper` whose worker token (the sessions' own, never the owner's)
//! comes from `taskkeeper mcp-headers`, never written into a settings file.
//!
//! It merges: whatever else is in the files stays as it was; connecting again changes
//! nothing; before the first change to a file it keeps a backup, and disconnecting restores
//! exactly what was there (or removes a file it created). A file that is not valid JSON is
//! refused and nothing is written.
//!
//! What the settings name is the command agents will run for years, so it must outlive the
//! build that wrote it: [`command_for`] names `taskkeeper` when that is what the PATH finds,
//! else the binary's path, and refuses a binary inside a Cargo build directory (a `cargo
//! clean` would silently break every hook). Each agent's `check` reads its settings back and
//! says whether what they name still runs and reaches a daemon. [`codex`] and [`gemini`] do
//! the same for those agents' files; what they all share (backups, atomic writes, hooks named
//! by a command line, the command check) is here.

use std::ffi::OsStr;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

pub mod claude_code;
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

/// The user's home directory (on Unix, `HOME`).
pub fn home() -> Result<PathBuf, ConnectError> {
    directories::BaseDirs::new()
        .map(|d| d.home_dir().to_owned())
        .ok_or(ConnectError::NoHome)
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

#[cfg(test)]
mod tests {
    use super::claude_code::{helper_line, merge_settings, remove_settings};
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
