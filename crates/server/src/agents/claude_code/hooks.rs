//! What Claude Code's hooks have beyond the one hook intake every agent shares
//! ([`crate::agents::hooks`], `POST /hooks/claude-code`): `POST /hooks/claude-code/wait`, the
//! asyncRewake waiter's long poll, and how a session's entrypoint tells a `-p` session from an
//! interactive one (which decides whether it takes its first task at start, and whether a
//! waiter may wait for it).
//!
//! A payload that is not a hook this adapter knows is answered 400 and changes nothing; the
//! helper prints nothing either way, so a session is never disturbed by Taskkeeper.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::adapter::ClaudeCode;
use crate::agents::adapter::Adapter as _;
use crate::agents::headers as names;
use crate::agents::hooks::parse;
use crate::agents::intake::{bad, reach_of, store_error};
use crate::delivery::Delivery;
use crate::delivery::WaitOutcome;

/// Whether the session runs in non-interactive mode: `claude -p`, which the Agent SDK runs
/// too (`CLAUDE_CODE_ENTRYPOINT` `sdk-cli`, `sdk-ts`, `sdk-py`; an interactive one is `cli`).
pub(crate) fn is_print_session(entrypoint: Option<&str>) -> bool {
    matches!(entrypoint, Some("sdk-cli" | "sdk-ts" | "sdk-py"))
}

/// Whether Claude Code takes the SessionStart hook's `initialUserMessage` as the session's
/// first turn: a `-p` session ([`is_print_session`]) that is starting (`source` startup). An
/// interactive session ignores it — 2.1.332 does, as documented — and a task claimed for it
/// there would never arrive; it gets its first task through its inbox socket or its pane.
pub(crate) fn takes_start_message(entrypoint: Option<&str>, source: &str) -> bool {
    source == "startup" && is_print_session(entrypoint)
}

/// The waiter's long poll: `{"action":"deliver","text":...}` or `{"action":"leave","why":...}`.
pub(crate) async fn wait(
    State(delivery): State<Delivery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sessions = delivery.sessions();
    let hook = match parse(&ClaudeCode, &body) {
        Ok(h) => h,
        Err(message) => return bad(message),
    };
    let (desk_hint, reach) = reach_of(ClaudeCode.kind(), &headers);
    if let Some(cwd) = &hook.cwd
        && let Err(e) = sessions
            .attach(&hook.session, cwd, desk_hint, reach, ClaudeCode.kind())
            .await
    {
        return store_error(e);
    }
    // `-p` waits for its asyncRewake hooks before it exits: a waiter held there would keep a
    // finished run alive for hours. Such a session goes on only through the Stop handover.
    let entrypoint = headers.get(names::ENTRYPOINT).and_then(|v| v.to_str().ok());
    if is_print_session(entrypoint) {
        return axum::Json(
            json!({"action": "leave", "why": "a -p session ends when its work is done"}),
        )
        .into_response();
    }
    match delivery.wait(&hook.session).await {
        Ok(WaitOutcome::Deliver(text)) => {
            tracing::info!(session = %hook.session, "waiter wakes the session");
            axum::Json(json!({"action": "deliver", "text": text})).into_response()
        }
        Ok(WaitOutcome::Leave(why)) => {
            axum::Json(json!({"action": "leave", "why": why})).into_response()
        }
        Err(e) => store_error(e),
    }
}
