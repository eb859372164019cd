//! The agents Taskkeeper serves, each an adapter from its world to the agent-neutral sessions
//! and delivery behind one interface ([`adapter`]): Claude Code (its hooks, its waiter, and
//! headless sessions it launches), Codex CLI and Gemini CLI (their hooks, and headless
//! sessions over their app server and ACP), any other agent through the generic report
//! ([`generic`]), and `taskkeeper connect`, which wires each into the agent's own settings.
//! The workers' room for every hook is here: one route per kind with hooks of its own, all
//! taken by the one intake ([`hooks`]); what the intakes share is [`intake`].

pub(crate) mod adapter;
pub(crate) mod asking;
pub mod claude_code;
pub(crate) mod codex {
    //! The Codex CLI adapter ([`adapter`]), its headless sessions ([`app_server`]) and the
    //! way into an idle TUI through the app server that runs it ([`wake`]).
    pub(crate) mod adapter;
    pub(crate) mod app_server;
    pub(crate) mod approvals;
    #[cfg(unix)]
    pub(crate) mod wake;
}
pub(crate) mod gemini {
    //! The Gemini CLI adapter ([`adapter`]) and its headless sessions ([`acp`]).
    pub(crate) mod acp;
    pub(crate) mod adapter;
}
pub mod connect;
pub mod generic;
pub mod headers;
pub(crate) mod hooks;
pub(crate) mod intake;
pub(crate) mod launched;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;

use crate::delivery::Delivery;
use crate::http::auth::Credentials;
use crate::http::routes::{Access, Room};

/// The hook intake: the agent sessions of this machine (the worker token) and the owner. A
/// generic report is answered with the session as `session_reply` shows it.
pub(crate) fn room(
    delivery: Delivery,
    credentials: Credentials,
    session_reply: generic::SessionReply,
) -> Room {
    let mut room = Room::new(Access::Workers).route(
        "POST",
        "/hooks/generic",
        post(generic::report).layer(axum::Extension(session_reply)),
    );
    for a in adapter::adapters() {
        let Some(path) = a.hook_route() else {
            continue;
        };
        let kind = a.kind();
        let handler = move |State(delivery): State<Delivery>,
                            axum::Extension(credentials): axum::Extension<Credentials>,
                            headers: HeaderMap,
                            body: Bytes| async move {
            hooks::intake(kind, &delivery, &credentials, &headers, &body).await
        };
        room = room.route(
            "POST",
            path,
            post(handler).layer(axum::Extension(credentials.clone())),
        );
    }
    room.route(
        "POST",
        "/hooks/claude-code/wait",
        post(claude_code::hooks::wait),
    )
    .with_state(delivery)
}
