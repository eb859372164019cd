//! What every agent's hook intake shares: how a hook is refused (a 400 naming what was wrong,
//! the store's refusals in the owner API's error shape) and what the hook helper's environment
//! adds to a session (its desk hint, tmux pane, process, Claude Code's inbox and status file),
//! read from the headers in [`crate::agents::headers`].

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse as _, Response};
use taskkeeper_core::StoreError;
use taskkeeper_core::session::Reach;

use crate::agents::headers;
use crate::owner::{OwnerError, OwnerErrorKind};

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

/// What the helper's environment adds.
pub(crate) fn reach_of(request: &HeaderMap) -> (Option<String>, Reach) {
    let h = |name: &str| {
        request
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .filter(|v| !v.is_empty())
    };
    let tmux_socket = h(headers::TMUX).and_then(|t| t.split(',').next().map(str::to_owned));
    let reach = Reach {
        tmux_pane: h(headers::TMUX_PANE),
        pid: h(headers::PID).and_then(|p| p.parse().ok()),
        messaging_socket: h(headers::MESSAGING_SOCKET),
        messaging_token: h(headers::MESSAGING_TOKEN),
        tmux_socket,
        status_file: h(headers::STATUS_FILE),
        // Only a Codex hook's home names one (`cli_hooks`).
        app_server_socket: None,
        headless: false,
    };
    (h(headers::DESK), reach)
}
