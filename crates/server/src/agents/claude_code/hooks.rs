//! What Claude Code's hooks have beyond the one hook intake every agent shares
//! ([`crate::agents::hooks`], `POST /hooks/claude-code`): `POST /hooks/claude-code/wait`, the
//! asyncRewake waiter's long poll, which waits for no `-p` session (the adapter tells one
//! from an interactive one by its entrypoint).
//!
//! A payload that is not a hook this adapter knows is answered 400 and changes nothing; the
//! helper prints nothing either way, so a session is never disturbed by Taskkeeper.

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::adapter::{ClaudeCode, is_print_session};
use crate::agents::adapter::Adapter as _;
use crate::agents::headers as names;
use crate::agents::hooks::parse;
use crate::agents::intake::{bad, reach_of, store_error};
use crate::delivery::Delivery;
use crate::delivery::WaitOutcome;

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
