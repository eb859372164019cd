//! The store's one error type: what went wrong opening, reading or writing the database, each
//! variant naming the thing and the fix.

use std::path::PathBuf;

use crate::desk::DeskName;
use crate::limits::LimitExceeded;
use crate::settings::SettingError;
use crate::task::TaskId;
use crate::transition::TransitionError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the task database {path}: {reason}")]
    Open { path: PathBuf, reason: String },
    #[error(
        "{path} is not a Taskkeeper database or is damaged ({detail}); it was left untouched: move it aside to start with an empty one, or restore a backup"
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "the write-ahead log {wal} of {path} is damaged: {detail}. Taskkeeper did not start, so nothing was dropped, and left {path}, {wal} and {shm} untouched. `taskkeeper doctor` shows what verifies and names the tasks whose writes would be lost; `taskkeeper doctor --recover` copies the three files aside, keeps what verifies and names the tasks it dropped"
    )]
    WalDamaged {
        path: PathBuf,
        wal: PathBuf,
        shm: PathBuf,
        detail: String,
    },
    #[error(
        "{path} was written by a newer Taskkeeper (schema version {found}, this one knows up to {known}); upgrade Taskkeeper"
    )]
    TooNew {
        path: PathBuf,
        found: i64,
        known: i64,
    },
    #[error(
        "another Taskkeeper is already using {path}; stop it first, or give this one another data directory"
    )]
    Locked { path: PathBuf },
    #[error("no desk named {0}; `taskkeeper desk list` shows the desks")]
    NoSuchDesk(String),
    #[error("a desk named {0} already exists")]
    DeskExists(DeskName),
    #[error("desk {name} still has {open} open task(s); finish or cancel them before removing it")]
    DeskHasOpenTasks { name: DeskName, open: u64 },
    #[error("no task {0}")]
    NoSuchTask(TaskId),
    #[error("no session {0}; it attaches on its first hook")]
    NoSuchSession(String),
    #[error("an asker named {0} already exists (or the name is reserved)")]
    AskerExists(String),
    #[error("no asker named {0}; `taskkeeper asker list` shows the askers")]
    NoSuchAsker(String),
    #[error(
        "invalid asker name {0:?}: use 1-64 lower-case letters, digits, '-' or '_', starting with a letter or digit"
    )]
    InvalidAskerName(String),
    #[error(transparent)]
    Transition(#[from] TransitionError),
    #[error("task {0} was changed by someone else at the same moment; try again")]
    Conflict(TaskId),
    #[error(transparent)]
    Setting(#[from] SettingError),
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    #[error("database error: {0}")]
    Sqlite(String),
    #[error("a stored record could not be read: {0}")]
    Decode(String),
    #[error("the store has shut down")]
    Closed,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e.to_string())
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Decode(e.to_string())
    }
}
