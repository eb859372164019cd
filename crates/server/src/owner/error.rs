//! How the owner's side says no: an [`OwnerError`] with a kind programs branch on (the UI,
//! the CLI, the HTTP status) and a message that names the thing and the fix; and how a store,
//! transition or launch error becomes one, so a refusal reads the same everywhere.

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
        let kind = match &e {
            StoreError::NoSuchDesk(_)
            | StoreError::NoSuchTask(_)
            | StoreError::NoSuchAsker(_)
            | StoreError::NoSuchSession(_) => OwnerErrorKind::NotFound,
            StoreError::InvalidAskerName(_) => OwnerErrorKind::Invalid,
            StoreError::AskerExists(_) => OwnerErrorKind::Conflict,
            StoreError::DeskExists(_)
            | StoreError::DeskHasOpenTasks { .. }
            | StoreError::Conflict(_)
            | StoreError::Transition(_) => OwnerErrorKind::Conflict,
            StoreError::Setting(_) => OwnerErrorKind::Invalid,
            StoreError::Limit(l) if l.limit().is_size() => OwnerErrorKind::TooLarge,
            StoreError::Limit(_) => OwnerErrorKind::Limit,
            _ => OwnerErrorKind::Internal,
        };
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
