//! The one hook intake of every agent with hooks of its own (Claude Code, Codex CLI, Gemini
//! CLI): `POST /hooks/<kind>` takes one hook's JSON (as the agent wrote it to `taskkeeper
//! hook [<kind>]`, plus what the helper's environment knows, in `X-Taskkeeper-*` headers),
//! folds what the kind's adapter says it means ([`Adapter::on_hook`]) into the session, and
//! answers with exactly what the hook should print (often nothing), in the agent's words
//! (`core::agent_hooks`):
//!
//! - at a session's start, its desk's note as context, and its first task where the agent
//!   takes one there;
//! - before one of Taskkeeper's tools, its input with the calling session and the daemon's
//!   proof for it added (the model cannot write the proof, so its arguments cannot make it
//!   another session; see the MCP module);
//! - at a turn's end, waiting work as the turn's next prompt (the handover: Claude Code's and
//!   Codex's Stop `block`, Gemini's AfterAgent `deny`), claimed by `Delivery::handover`.
//!
//! All come through the workers' room (the worker token). A payload the adapter cannot read
//! is answered 400 and changes nothing; the helper prints nothing either way, so a session is
//! never disturbed by Taskkeeper.

use std::path::PathBuf;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use taskkeeper_core::agent_hooks::{self, Happening, HookAgent};
use taskkeeper_core::session::{Edge, SessionId, TurnOrigin, check_dir};
use taskkeeper_core::{AgentKind, Session, StoreError, delivery};

use crate::agents::adapter;
use crate::agents::adapter::Adapter;
use crate::agents::headers as names;
use crate::agents::intake::{bad, reach_of, store_error};
use crate::delivery::Delivery;
use crate::http::auth::Credentials;

/// How long a rate limit holds reminders back when the agent does not say.
const RATE_LIMIT_PAUSE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// A hook payload, checked.
pub(crate) struct Hook {
    pub(crate) happening: Happening,
    pub(crate) session: SessionId,
    pub(crate) cwd: Option<PathBuf>,
    body: Value,
}

/// Read one hook of `adapter`'s kind: what it means, the session and its directory.
pub(crate) fn parse(adapter: &dyn Adapter, body: &[u8]) -> Result<Hook, String> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| format!("not a hook payload (invalid JSON: {e})"))?;
    let happening = adapter.on_hook(&body).map_err(|e| e.to_string())?;
    let session = body
        .get("session_id")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or("not a hook payload: no session_id")?;
    let session = SessionId::parse(session).map_err(|e| e.to_string())?;
    let cwd = body.get("cwd").and_then(Value::as_str).map(PathBuf::from);
    if let Some(dir) = &cwd {
        check_dir(dir).map_err(|e| format!("cwd: {e}"))?;
    }
    Ok(Hook {
        happening,
        session,
        cwd,
        body,
    })
}

/// One hook of a `kind` of agent.
pub(crate) async fn intake(
    kind: AgentKind,
    delivery: &Delivery,
    credentials: &Credentials,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let sessions = delivery.sessions();
    let adapter = adapter(kind);
    let Some(words) = adapter.vocabulary() else {
        return bad(format!(
            "{kind} has no hooks of its own; use `taskkeeper report`"
        ));
    };
    let hook = match parse(adapter, body) {
        Ok(h) => h,
        Err(message) => return bad(message),
    };
    let (desk_hint, reach) = reach_of(kind, headers);
    let known = sessions.tasks().get_session(&hook.session).await;
    let cwd = match (&hook.cwd, &known) {
        (Some(c), _) => c.clone(),
        (None, Ok(Some(s))) => s.cwd.clone(),
        _ => return bad("not a hook payload: no cwd"),
    };
    let session = match sessions
        .attach(&hook.session, &cwd, desk_hint, reach, kind)
        .await
    {
        Ok(s) => s,
        Err(e) => return store_error(e),
    };
    tracing::debug!(agent = %kind, happening = ?hook.happening, session = %session.id, "hook");
    if session.reach.headless {
        // Its own event stream tells its activity and its stdin takes its tasks: the hooks
        // (installed for the owner's interactive sessions) only fill in the session.
        return answer(fill_session(words, &hook, credentials));
    }
    let entrypoint = headers.get(names::ENTRYPOINT).and_then(|v| v.to_str().ok());
    match fold(
        adapter,
        words,
        delivery,
        credentials,
        &hook,
        entrypoint,
        session,
    )
    .await
    {
        Ok(out) => answer(out),
        Err(e) => store_error(e),
    }
}

fn answer(out: Option<Value>) -> Response {
    let text = out.map(|v| v.to_string()).unwrap_or_default();
    (StatusCode::OK, text).into_response()
}

/// Before one of our tools: its input with the calling session and its proof added.
fn fill_session(words: HookAgent, hook: &Hook, credentials: &Credentials) -> Option<Value> {
    if hook.happening != (Happening::ToolStarting { ours: true }) {
        return None;
    }
    let mut input = hook
        .body
        .get("tool_input")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let Value::Object(o) = &mut input else {
        return None;
    };
    o.insert("session_id".into(), json!(hook.session.as_str()));
    o.insert(
        "session_proof".into(),
        json!(credentials.session_proof(hook.session.as_str())),
    );
    Some(agent_hooks::tool_input_answer(words, input))
}

/// Fold the hook into the session; returns what the hook prints.
async fn fold(
    adapter: &dyn Adapter,
    words: HookAgent,
    delivery: &Delivery,
    credentials: &Credentials,
    hook: &Hook,
    entrypoint: Option<&str>,
    session: Session,
) -> Result<Option<Value>, StoreError> {
    let sessions = delivery.sessions();
    let id = &session.id;
    let desk = session.desk.clone();
    let caps = adapter.capabilities();
    Ok(match &hook.happening {
        Happening::Started => {
            sessions.edge(id, Edge::Started).await?;
            // A store read blocks on SQLite: off the async worker, like every other.
            let name = desk.clone();
            let note = sessions
                .tasks()
                .desks()
                .get(name.as_str())
                .await?
                .map(|d| delivery::session_note(&d))
                .unwrap_or_default();
            let first = if caps.takes_start_message
                && adapter.starts_with_message(entrypoint, &hook.body)
            {
                delivery.start_message(&session).await?
            } else {
                None
            };
            if first.is_some() {
                tracing::info!(session = %id, "the session starts with its first task");
            }
            Some(agent_hooks::context_answer(words, &note, first.as_deref()))
        }
        Happening::TurnStarted | Happening::TurnStartedByBackground => {
            let origin = if delivery.take_expected(id) {
                TurnOrigin::Taskkeeper
            } else if hook.happening == Happening::TurnStartedByBackground {
                TurnOrigin::Background
            } else {
                delivery.owner_wrote(id);
                TurnOrigin::Owner
            };
            sessions.edge(id, Edge::TurnStarted { origin }).await?;
            None
        }
        Happening::ToolStarting { .. } => {
            sessions.edge(id, Edge::ToolActivity).await?;
            fill_session(words, hook, credentials)
        }
        Happening::ToolDone => {
            sessions.edge(id, Edge::ToolActivity).await?;
            None
        }
        Happening::BackgroundStarted { id: bg } => {
            let started = Edge::BackgroundStarted { id: bg.clone() };
            sessions
                .edges(id, vec![Edge::ToolActivity, started])
                .await?;
            None
        }
        Happening::WaitingOnOwner => {
            // The desk's tasks get the waiting mark from the activity (`Sessions::edges`).
            sessions.edge(id, Edge::WaitingOnOwner).await?;
            None
        }
        Happening::TurnEnded {
            last_words,
            background,
            wakes,
            ..
        } => {
            if let Some(words) = last_words {
                sessions.worker_said(&desk, words).await;
            }
            // Hand over first, then store the turn's end (and the turn the handover starts) in
            // one step: a waiter only ever sees an idle session with nothing left to claim, or
            // a busy one. A continued turn ends here again; the handover claims only what is
            // still waiting (and counts handovers in a row), so it cannot loop.
            let handed = delivery.handover(&session).await?;
            let mut edges = vec![Edge::TurnEnded {
                last_words: last_words.clone(),
                background: background.clone(),
            }];
            if caps.lists_self_wakes {
                let at = taskkeeper_core::session::next_wake(
                    wakes,
                    sessions.tasks().now(),
                    &chrono::Local,
                );
                edges.push(Edge::WakeScheduled { at });
            }
            if handed.is_some() {
                edges.push(Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper,
                });
            }
            sessions.edges(id, edges).await?;
            handed.map(|text| agent_hooks::handover_answer(words, &text))
        }
        Happening::TurnFailed { rate_limited } => {
            let now = sessions.tasks().now();
            let until = rate_limited.then(|| now.plus(RATE_LIMIT_PAUSE));
            let failed = Edge::TurnFailed {
                rate_limited_until: until,
            };
            sessions.edge(id, failed).await?;
            None
        }
        Happening::Interrupted => {
            sessions.edge(id, Edge::Interrupted).await?;
            None
        }
        Happening::Ended => {
            sessions.end(id, true).await?;
            None
        }
        // The same desk goes on in a new session: nothing to tell the owner.
        Happening::Cleared => {
            sessions.end(id, false).await?;
            None
        }
        Happening::Nothing => None,
    })
}
