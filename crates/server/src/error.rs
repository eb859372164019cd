//! How the daemon says no: an [`OwnerError`] with a kind programs branch on (the UI, the CLI,
//! the HTTP status) and a message that names the thing and the fix; how a store or
//! transition error becomes one, so a refusal reads the same everywhere; and the body every
//! refusal is sent in ([`ErrorBody`]).
//!
//! [`OwnerErrorKind`] is the daemon's one vocabulary of refusals: [`OwnerErrorKind::of`] is
//! the only place a store error is classified, and MCP's tool errors and A2A's JSON-RPC
//! errors convert from that kind (adding their own wording and codes), so one store
//! refusal is the same kind of refusal over every surface.
//!
//! A leaf every area may name (the owner API, MCP, A2A, the hook intakes, HTTP's refusals):
//! it names no area of the daemon, so sharing it makes no import cycle. The owner re-exports
//! it (`owner::OwnerError`), and a launch error becomes one on the owner's side
//! (`owner/desks.rs`), as the launcher sits below the owner.

use serde::{Deserialize, Serialize};
use taskkeeper_core::{StoreError, TransitionError};

/// What kind of error, for programs: the UI and the CLI branch on this, never on the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[serde(rename_all = "snake_case")]
pub enum OwnerErrorKind {
    NotFound,
    Invalid,
    Conflict,
    Unauthorized,
    Forbidden,
    TooLarge,
    /// A count limit (`limits.*`, `sessions.*`) would be passed; the message names it.
    Limit,
    Internal,
}

impl OwnerErrorKind {
    /// What kind of refusal a store error is: the one classification every surface uses.
    pub fn of(e: &StoreError) -> Self {
        match e {
            StoreError::NoSuchDesk(_)
            | StoreError::NoSuchTask(_)
            | StoreError::NoSuchAsker(_)
            | StoreError::NoSuchSession(_) => Self::NotFound,
            StoreError::InvalidAskerName(_) | StoreError::Setting(_) => Self::Invalid,
            StoreError::AskerExists(_)
            | StoreError::DeskExists(_)
            | StoreError::DeskHasOpenTasks { .. }
            | StoreError::Conflict(_)
            | StoreError::Transition(_) => Self::Conflict,
            StoreError::Limit(l) if l.limit().is_size() => Self::TooLarge,
            StoreError::Limit(_) => Self::Limit,
            StoreError::Open { .. }
            | StoreError::Corrupt { .. }
            | StoreError::WalDamaged { .. }
            | StoreError::TooNew { .. }
            | StoreError::Locked { .. }
            | StoreError::Sqlite(_)
            | StoreError::Decode(_)
            | StoreError::Closed => Self::Internal,
        }
    }
}

/// An error as the owner's tools see it: `{kind, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[error("{message}")]
pub struct OwnerError {
    pub kind: OwnerErrorKind,
    pub message: String,
}

impl OwnerError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self {
            kind: OwnerErrorKind::Invalid,
            message: message.into(),
        }
    }
}

impl From<StoreError> for OwnerError {
    fn from(e: StoreError) -> Self {
        let kind = OwnerErrorKind::of(&e);
        if kind == OwnerErrorKind::Internal {
            tracing::error!(error = %e, "store error");
        }
        Self {
            kind,
            message: e.to_string(),
        }
    }
}

/// So a refused transition reads the same everywhere.
impl From<TransitionError> for OwnerError {
    fn from(e: TransitionError) -> Self {
        Self {
            kind: OwnerErrorKind::Conflict,
            message: e.to_string(),
        }
    }
}

/// Every error body: `{"error": {"kind": ..., "message": ...}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ErrorBody {
    pub error: OwnerError,
}
