//! The agents Taskkeeper serves, each an adapter from its world to the agent-neutral sessions
//! and delivery: Claude Code (its hooks, and headless sessions it launches), Codex CLI and
//! Gemini CLI (their hooks, [`cli_hooks`]), any other agent through the generic report
//! ([`generic`]), and `taskkeeper connect`, which wires each into the agent's own settings.
//! The workers' room for every hook is here; what the intakes share is [`intake`].

pub(crate) mod asking;
pub mod claude_code;
pub(crate) mod cli_hooks;
pub(crate) mod codex {
    //! The Codex CLI adapter's parts besides its hooks ([`super::cli_hooks`]).
    pub(crate) mod app_server;
    pub(crate) mod approvals;
}
pub(crate) mod gemini {
    //! The Gemini CLI adapter's parts besides its hooks ([`super::cli_hooks`]).
    pub(crate) mod acp;
}
pub mod connect;
pub mod generic;
pub mod headers;
pub(crate) mod intake;
pub(crate) mod launched;

use axum::routing::post;

use crate::http::auth::Credentials;
use crate::http::routes::{Access, Room};
use crate::sessions::Sessions;

/// The hook intake: the agent sessions of this machine (the worker token) and the owner.
pub(crate) fn room(sessions: Sessions, credentials: Credentials) -> Room {
    Room::new(Access::Workers)
        .route("POST", "/hooks/generic", post(generic::report))
        .route(
            "POST",
            "/hooks/claude-code",
            post(claude_code::hooks::hook).layer(axum::Extension(credentials.clone())),
        )
        .route(
            "POST",
            "/hooks/claude-code/wait",
            post(claude_code::hooks::wait),
        )
        .route(
            "POST",
            "/hooks/codex",
            post(cli_hooks::codex).layer(axum::Extension(credentials.clone())),
        )
        .route(
            "POST",
            "/hooks/gemini",
            post(cli_hooks::gemini).layer(axum::Extension(credentials.clone())),
        )
        .with_state(sessions)
}
