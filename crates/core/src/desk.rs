//! Desks: named, addressable workers. A desk is one A2A agent bound to a working directory
//! and an agent kind; askers address desks, and a desk outlives the sessions attached to it.

use std::fmt;
use std::path::PathBuf;
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

/// Which kind of agent works at a desk; it picks the adapter and the first rung of the ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentKind {
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
}
