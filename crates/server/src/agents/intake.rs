//! What every agent's hook intake shares: how a hook is refused (a 400 naming what was wrong,
//! the store's refusals in the owner API's error shape) and what the hook helper's environment
//! adds to a session (its desk hint, tmux pane, process and when it started, Claude Code's
//! inbox and status file), read from the headers in [`crate::agents::headers`].

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use taskkeeper_core::session::Reach;
use taskkeeper_core::{AgentKind, StoreError};

use crate::agents::adapter;
use crate::agents::adapter::LevelSignal;
use crate::agents::headers;
use crate::error::{OwnerError, OwnerErrorKind};

pub(crate) fn bad(message: impl Into<String>) -> Response {
    crate::http::error_response(
        StatusCode::BAD_REQUEST,
        OwnerError {
            kind: OwnerErrorKind::Invalid,
            message: message.into(),
        },
    )
}

pub(crate) fn store_error(e: StoreError) -> Response {
    OwnerError::from(e).into_response()
}

/// What the helper's environment adds, of what a session of `kind` has: a status file only
/// where its adapter reads one (`level_signals`), so a session started from a Claude Code
/// terminal is never corrected by that terminal's file.
pub(crate) fn reach_of(kind: AgentKind, request: &HeaderMap) -> (Option<String>, Reach) {
    let h = |name: &str| {
        request
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .filter(|v| !v.is_empty())
    };
    let tmux_socket = h(headers::TMUX).and_then(|t| t.split(',').next().map(str::to_owned));
    let pid = h(headers::PID).and_then(|p| p.parse().ok());
    let reach = Reach {
        tmux_pane: h(headers::TMUX_PANE),
        pid,
        // Read now, while the hook's agent runs: a later process with its pid is another.
        pid_started: pid.and_then(crate::delivery::process::started),
        messaging_socket: h(headers::MESSAGING_SOCKET),
        messaging_token: h(headers::MESSAGING_TOKEN),
        tmux_socket,
        status_file: h(headers::STATUS_FILE).filter(|_| {
            adapter(kind)
                .level_signals()
                .contains(&LevelSignal::StatusFile)
        }),
        // Only the kind's adapter knows an app server of its own (`Adapter::app_server_socket`).
        app_server_socket: adapter(kind).app_server_socket(request),
        headless: false,
    };
    (h(headers::DESK), reach)
}
