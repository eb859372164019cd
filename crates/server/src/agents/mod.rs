//! The agents Taskkeeper serves, each an adapter from its world to the agent-neutral sessions
//! and delivery behind one interface ([`adapter::Adapter`]), found by its kind here
//! ([`adapter()`], the one lookup): Claude Code (its hooks, its waiter, and headless
//! sessions it launches), Codex CLI and Gemini CLI (their hooks, and headless sessions over
//! their app server and ACP), any other agent through the generic report ([`generic`]), and
//! `taskkeeper connect`, which wires each into the agent's own settings.
//! The workers' room for every hook is here: one route per kind with hooks of its own, all
//! taken by the one intake ([`hooks`]); what the intakes share is [`intake`]. The sessions
//! Taskkeeper launches are driven by one runner ([`launched`]) in the words of [`launch`].
//!
//! The lookup is here, in the parent of the kinds, because everything below names it: the
//! intakes, the runner, the generic report (which asks other kinds' adapters), while each
//! kind names only the interface ([`mod@adapter`]), which names no kind.

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
pub(crate) mod launch;
pub(crate) mod launched;
pub(crate) mod permission;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use taskkeeper_core::AgentKind;

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
    for a in adapters() {
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

/// The adapter of a kind of agent: the one lookup.
pub(crate) fn adapter(kind: AgentKind) -> &'static dyn adapter::Adapter {
    match kind {
        AgentKind::ClaudeCode => &claude_code::adapter::ClaudeCode,
        AgentKind::Codex => &codex::adapter::Codex,
        AgentKind::Gemini => &gemini::adapter::Gemini,
        AgentKind::Generic => &generic::Generic,
    }
}

/// Every adapter, in `AgentKind::ALL`'s order.
pub(crate) fn adapters() -> impl Iterator<Item = &'static dyn adapter::Adapter> {
    AgentKind::ALL.into_iter().map(adapter)
}

/// The kinds whose capabilities have `which`, as a sentence names them ("a, b and c").
pub(crate) fn kinds_that(which: impl Fn(adapter::Capabilities) -> bool) -> String {
    let names: Vec<&str> = adapters()
        .filter(|a| which(a.capabilities()))
        .map(|a| a.kind().as_str())
        .collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}
