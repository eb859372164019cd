//! Desks: named, addressable workers. A desk is one A2A agent bound to a working directory
//! and an agent kind; askers address desks, and a desk outlives the sessions attached to it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;

/// A desk's name: it appears in URLs (`/a2a/{desk}`), so it is 1–64 characters of lower-case
/// ASCII letters, digits, `-` and `_`, starting with a letter or digit.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DeskName(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "invalid desk name {0:?}: use 1-64 lower-case letters, digits, '-' or '_', starting with a letter or digit"
)]
pub struct InvalidDeskName(pub String);

impl DeskName {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for DeskName {
    type Err = InvalidDeskName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok_char =
            |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_';
        let first_ok = s
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        if first_ok && s.len() <= 64 && s.chars().all(ok_char) {
            Ok(Self(s.to_owned()))
        } else {
            Err(InvalidDeskName(s.to_owned()))
        }
    }
}

impl TryFrom<String> for DeskName {
    type Error = InvalidDeskName;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<DeskName> for String {
    fn from(d: DeskName) -> String {
        d.0
    }
}

impl fmt::Display for DeskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which kind of agent works at a desk; it picks the adapter (the server's `agents::adapter`,
/// where every fact about a kind lives) and the first rung of the ladder. A desk added
/// without one is a Claude Code desk (the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentKind {
    #[default]
    ClaudeCode,
    Codex,
    Gemini,
    Generic,
}

impl AgentKind {
    pub const ALL: [AgentKind; 4] = [Self::ClaudeCode, Self::Codex, Self::Gemini, Self::Generic];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::Generic => "generic",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent kind {0:?}: use claude-code, codex, gemini or generic")]
pub struct UnknownAgentKind(pub String);

impl FromStr for AgentKind {
    type Err = UnknownAgentKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownAgentKind(s.to_owned()))
    }
}

impl fmt::Display for AgentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Desk {
    pub name: DeskName,
    pub agent: AgentKind,
    /// The working directory its sessions run in.
    pub dir: PathBuf,
    /// A shell command that delivers text to the desk's agent (the text on its stdin), for
    /// agents Taskkeeper has no other way into. Set by the owner only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deliver_command: Option<String>,
    /// Launch a headless session by itself when the desk has work and no live session
    /// (the server's `owner::autolaunch`). Off unless the owner turns it on.
    #[serde(default)]
    pub auto_launch: bool,
    pub created_at: Timestamp,
}

/// The desk a directory belongs to: the deepest desk whose directory holds `dir` (a desk at
/// `/src` and one at `/src/web` both hold `/src/web/ui`; the second is the one).
pub fn desk_for_dir<'a>(desks: &'a [Desk], dir: &Path) -> Option<&'a Desk> {
    desks
        .iter()
        .filter(|d| dir.starts_with(&d.dir))
        .max_by_key(|d| d.dir.components().count())
}

/// Where a new session works (see [`place`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// A desk that exists.
    Existing(DeskName),
    /// A desk to create for it, in its directory.
    New(DeskName),
}

/// Why a new session has no desk.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unplaced {
    /// The desk it names is not one, and cannot be made under that name.
    #[error("{0}")]
    BadName(String),
    /// No desk's directory holds its directory, and sessions may not create desks.
    #[error("(none covers {dir}; add one with `taskkeeper desk add NAME --dir {dir}`)", dir = .0.display())]
    NoneCovers(PathBuf),
}

/// The desk a new session at `cwd` works at: the desk `named` names (made, if there is none of
/// that name), else the desk its directory belongs to ([`desk_for_dir`]), else, when
/// `create_desks` allows, a new desk named after the directory and not yet taken.
pub fn place(
    desks: &[Desk],
    cwd: &Path,
    named: Option<&str>,
    create_desks: bool,
) -> Result<Placement, Unplaced> {
    if let Some(name) = named.filter(|h| !h.trim().is_empty()) {
        if let Some(d) = desks.iter().find(|d| d.name.as_str() == name) {
            return Ok(Placement::Existing(d.name.clone()));
        }
        let parsed = name
            .parse()
            .map_err(|_| Unplaced::BadName(name.to_owned()))?;
        return Ok(Placement::New(parsed));
    }
    if let Some(d) = desk_for_dir(desks, cwd) {
        return Ok(Placement::Existing(d.name.clone()));
    }
    if !create_desks {
        return Err(Unplaced::NoneCovers(cwd.to_owned()));
    }
    let base = name_for_dir(cwd);
    let taken = |n: &str| desks.iter().any(|d| d.name.as_str() == n);
    let name = std::iter::once(base.clone())
        .chain((2..).map(|n| format!("{base}-{n}")))
        .find(|n| !taken(n))
        .unwrap_or(base);
    name.parse()
        .map(Placement::New)
        .map_err(|_| Unplaced::BadName(name))
}

/// A desk name made from a directory's last component: lower case, every character but an
/// ASCII letter or digit a `-`, at most 40 characters; `desk` when nothing is left.
pub fn name_for_dir(dir: &Path) -> String {
    let base = dir
        .file_name()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let name: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let name: String = name.trim_matches('-').chars().take(40).collect();
    if name.is_empty() {
        "desk".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desk_names_are_url_safe() {
        for good in ["web", "a", "api-2", "x_y", "9lives"] {
            assert!(good.parse::<DeskName>().is_ok(), "{good}");
        }
        for bad in ["", "Web", "-x", "a/b", "a b", "é", &"x".repeat(65)] {
            let err = bad.parse::<DeskName>().unwrap_err();
            assert!(err.to_string().contains("invalid desk name"), "{bad}");
        }
    }

    #[test]
    fn agent_kinds_parse() {
        assert_eq!(
            "claude-code".parse::<AgentKind>(),
            Ok(AgentKind::ClaudeCode)
        );
        assert!(
            "cursor"
                .parse::<AgentKind>()
                .unwrap_err()
                .to_string()
                .contains("claude-code")
        );
    }

    fn desk(name: &str, dir: &str) -> Desk {
        Desk {
            name: name.parse().unwrap(),
            agent: AgentKind::ClaudeCode,
            dir: dir.into(),
            deliver_command: None,
            auto_launch: false,
            created_at: Timestamp::from_millis(0),
        }
    }

    #[test]
    fn a_directory_belongs_to_the_deepest_desk_that_holds_it() {
        let desks = [
            desk("src", "/src"),
            desk("web", "/src/web"),
            desk("webx", "/src/webx"),
        ];
        let of = |dir: &str| desk_for_dir(&desks, Path::new(dir)).map(|d| d.name.as_str());
        assert_eq!(of("/src/web/ui"), Some("web"));
        assert_eq!(of("/src/web"), Some("web"));
        assert_eq!(of("/src/we"), Some("src"), "whole components only");
        assert_eq!(of("/home"), None);
    }

    #[test]
    fn a_new_session_is_placed_by_name_then_directory_then_a_new_desk() {
        let desks = [desk("web", "/src/web"), desk("api", "/elsewhere/api")];
        let place = |dir: &str, named: Option<&str>, create: bool| {
            place(&desks, Path::new(dir), named, create)
        };
        let existing = |n: &str| Ok(Placement::Existing(n.parse().unwrap()));
        let new = |n: &str| Ok(Placement::New(n.parse().unwrap()));
        assert_eq!(place("/src/web/ui", Some("api"), false), existing("api"));
        assert_eq!(place("/src/web/ui", Some(" "), false), existing("web"));
        assert_eq!(place("/tmp/x", Some("docs"), false), new("docs"));
        assert_eq!(
            place("/tmp/x", Some("Not A Name"), true),
            Err(Unplaced::BadName("Not A Name".into()))
        );
        assert_eq!(place("/tmp/My Web", None, true), new("my-web"));
        assert_eq!(
            place("/other/api", None, true),
            new("api-2"),
            "api is taken"
        );
        let refused = place("/tmp/x", None, false).unwrap_err();
        assert_eq!(refused, Unplaced::NoneCovers("/tmp/x".into()));
        assert!(
            refused
                .to_string()
                .contains("taskkeeper desk add NAME --dir /tmp/x")
        );
    }

    #[test]
    fn desk_names_come_from_the_directory() {
        assert_eq!(name_for_dir(Path::new("/home/me/My Project")), "my-project");
        assert_eq!(name_for_dir(Path::new("/")), "desk");
        assert_eq!(name_for_dir(Path::new("/x/--été--")), "t");
        assert_eq!(
            name_for_dir(Path::new(&format!("/{}", "a".repeat(90)))).len(),
            40
        );
    }
}
