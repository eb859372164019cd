//! What Taskkeeper takes from outside to name a session: its id and its working directory,
//! each bounded and plain. A leaf, so that a task can name the session it was handed to
//! ([`crate::task::Task::delivered_to`]) while [`crate::session`] names tasks.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A session id as the agent names it (Claude Code's `session_id`; `/clear` makes a new one).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SessionId(String);

impl SessionId {
    /// A new id, for a session Taskkeeper launches (Claude Code takes it as `--session-id`).
    pub fn generate() -> Self {
        Self(uuid::Uuid::new_v4().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The longest session id taken from outside (Claude Code's are 36-character UUIDs).
pub const SESSION_ID_MAX: usize = 200;
/// The longest working directory taken from outside (Linux's `PATH_MAX`).
pub const DIR_MAX: usize = 4096;

/// An identifier or path from outside that Taskkeeper does not take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidId {
    #[error(
        "session id {shown:?} is not one Taskkeeper takes: use 1-{SESSION_ID_MAX} letters, digits, '-', '_', '.' or ':'"
    )]
    SessionId { shown: String },
    #[error(
        "directory {shown:?} is not one Taskkeeper takes: it must be an absolute path of at most {DIR_MAX} bytes, without NUL"
    )]
    Dir { shown: String },
}

/// At most 60 characters of what was refused, for the message.
fn shown(text: &str) -> String {
    let mut s: String = text.chars().take(60).collect();
    if s.len() < text.len() {
        s.push('…');
    }
    s
}

impl SessionId {
    /// A session id as an agent or a caller sends it: 1 to [`SESSION_ID_MAX`] characters of
    /// letters, digits, `-`, `_`, `.` and `:` (ids end up in logs, listings and file names).
    pub fn parse(text: &str) -> Result<SessionId, InvalidId> {
        let ok = (1..=SESSION_ID_MAX).contains(&text.len())
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
        if ok {
            Ok(SessionId(text.to_owned()))
        } else {
            Err(InvalidId::SessionId { shown: shown(text) })
        }
    }
}

/// A session's working directory as an agent sends it: absolute, at most [`DIR_MAX`] bytes,
/// without NUL (which no file system path can hold).
pub fn check_dir(dir: &std::path::Path) -> Result<(), InvalidId> {
    let text = dir.to_string_lossy();
    if dir.is_absolute() && text.len() <= DIR_MAX && !text.contains('\0') {
        Ok(())
    } else {
        Err(InvalidId::Dir {
            shown: shown(&text),
        })
    }
}

impl From<&str> for SessionId {
    fn from(s: &str) -> Self {
        Self(s.to_owned())
    }
}

impl From<String> for SessionId {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_directories_from_outside_are_bounded_and_plain() {
        for ok in ["0b6c3f5e-8d52-4c1c-9d43-3c4f8e2a1b7d", "codex:run_1.2", "a"] {
            assert_eq!(SessionId::parse(ok).map(|id| id.0), Ok(ok.to_owned()));
        }
        let long = "a".repeat(SESSION_ID_MAX + 1);
        for bad in [
            "",
            "a b",
            "x\u{1b}[2Jy",
            "line\nbreak",
            "a/b",
            "é",
            long.as_str(),
        ] {
            let e = SessionId::parse(bad).unwrap_err();
            assert!(e.to_string().contains("session id"), "{e}");
        }
        let e = SessionId::parse(&"\u{1b}".repeat(500_000)).unwrap_err();
        assert!(e.to_string().len() < 600, "the message stays short");

        assert_eq!(check_dir(std::path::Path::new("/home/me/web")), Ok(()));
        for bad in ["relative/dir", "/tmp/a\0b", ""] {
            assert!(check_dir(std::path::Path::new(bad)).is_err(), "{bad:?}");
        }
        let deep = format!("/{}", "d".repeat(DIR_MAX));
        assert!(check_dir(std::path::Path::new(&deep)).is_err());
    }
}
