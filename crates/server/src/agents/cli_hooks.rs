//! The Codex CLI and Gemini CLI adapters' intake: `POST /hooks/codex` and `POST
//! /hooks/gemini` take one hook's JSON (as the agent wrote it to `taskkeeper hook codex` /
//! `hook gemini`, plus what the helper's environment knows, in `X-Taskkeeper-*` headers),
//! fold what it means ([`taskkeeper_core::agent_hooks::read`]) into the session, and answer
//! with exactly what the hook should print:
//!
//! - at a session's start, its desk's note as context;
//! - before one of Taskkeeper's tools, its input with the calling session and the daemon's
//!   proof for it added (the model cannot write the proof, so its arguments cannot make it
//!   another session; see the MCP module);
//! - at a turn's end, a waiting task as the turn's next prompt (Codex's Stop `block`,
//!   Gemini's AfterAgent `deny`): the handover, claimed exactly as Claude Code's is.
//!
//! Both come through the workers' room (the worker token). A payload this adapter cannot
//! read is answered 400 and changes nothing; the helper prints nothing either way.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use taskkeeper_core::agent_hooks::{self, Happening, HookAgent};
use taskkeeper_core::session::{Edge, SessionId, TurnOrigin, check_dir};
use taskkeeper_core::{Session, StoreError, delivery};

use crate::agents::intake::{bad, reach_of, store_error};
use crate::http::auth::Credentials;
use crate::sessions::Sessions;

pub(crate) async fn codex(
    State(sessions): State<Sessions>,
    axum::Extension(credentials): axum::Extension<Credentials>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    intake(HookAgent::Codex, &sessions, &credentials, &headers, &body).await
}

pub(crate) async fn gemini(
    State(sessions): State<Sessions>,
    axum::Extension(credentials): axum::Extension<Credentials>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    intake(HookAgent::Gemini, &sessions, &credentials, &headers, &body).await
}

/// A hook payload, checked.
struct Hook {
    happening: Happening,
    session: SessionId,
    cwd: Option<PathBuf>,
    body: Value,
}

fn parse(agent: HookAgent, body: &[u8]) -> Result<Hook, String> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| format!("not a hook payload (invalid JSON: {e})"))?;
    let happening = agent_hooks::read(agent, &body).map_err(|e| e.to_string())?;
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

async fn intake(
    agent: HookAgent,
    sessions: &Sessions,
    credentials: &Credentials,
    headers: &HeaderMap,
    body: &[u8],
) -> Response {
    let hook = match parse(agent, body) {
        Ok(h) => h,
        Err(message) => return bad(message),
    };
    let (desk_hint, mut reach) = reach_of(headers);
    if agent == HookAgent::Codex {
        reach.app_server_socket = codex_socket(headers);
    }
    let known = sessions.tasks().get_session(&hook.session).await;
    let cwd = match (&hook.cwd, &known) {
        (Some(c), _) => c.clone(),
        (None, Ok(Some(s))) => s.cwd.clone(),
        _ => return bad("not a hook payload: no cwd"),
    };
    let session = match sessions
        .attach(&hook.session, &cwd, desk_hint, reach, agent.kind())
        .await
    {
        Ok(s) => s,
        Err(e) => return store_error(e),
    };
    tracing::debug!(agent = agent.as_str(), happening = ?hook.happening, session = %session.id, "hook");
    if session.reach.headless {
        // Its own event stream tells its activity and its stdin takes its tasks: the hooks
        // (installed for the owner's interactive sessions) only fill in the session.
        return answer(fill_session(agent, &hook, credentials));
    }
    match handle(agent, sessions, credentials, &hook, session).await {
        Ok(out) => answer(out),
        Err(e) => store_error(e),
    }
}

/// The control socket of the app server a Codex hook runs in, from its Codex home (an
/// absolute path, or nothing).
fn codex_socket(headers: &HeaderMap) -> Option<String> {
    let home = headers
        .get(crate::agents::headers::CODEX_HOME)
        .and_then(|v| v.to_str().ok())
        .map(std::path::Path::new)
        .filter(|h| h.is_absolute())?;
    Some(
        crate::agents::codex::app_server::control_socket(home)
            .to_string_lossy()
            .into_owned(),
    )
}

fn answer(out: Option<Value>) -> Response {
    let text = out.map(|v| v.to_string()).unwrap_or_default();
    (StatusCode::OK, text).into_response()
}

/// Before one of our tools: its input with the calling session and its proof added.
fn fill_session(agent: HookAgent, hook: &Hook, credentials: &Credentials) -> Option<Value> {
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
    Some(agent_hooks::tool_input_answer(agent, input))
}

/// Fold the hook into the session; returns what the hook prints.
async fn handle(
    agent: HookAgent,
    sessions: &Sessions,
    credentials: &Credentials,
    hook: &Hook,
    session: Session,
) -> Result<Option<Value>, StoreError> {
    let id = &session.id;
    let desk = session.desk.clone();
    Ok(match &hook.happening {
        Happening::Started => {
            sessions.edge(id, Edge::Started).await?;
            let name = desk.clone();
            let note = sessions
                .tasks()
                .blocking(move |s, _| s.desk(name.as_str()))
                .await?
                .map(|d| delivery::session_note(&d))
                .unwrap_or_default();
            Some(agent_hooks::context_answer(agent, &note))
        }
        Happening::TurnStarted => {
            let origin = if sessions.take_expected(id) {
                TurnOrigin::Taskkeeper
            } else {
                sessions.owner_wrote(id);
                TurnOrigin::Owner
            };
            sessions.edge(id, Edge::TurnStarted { origin }).await?;
            None
        }
        Happening::ToolStarting { .. } => {
            sessions.edge(id, Edge::ToolActivity).await?;
            fill_session(agent, hook, credentials)
        }
        Happening::ToolDone => {
            sessions.edge(id, Edge::ToolActivity).await?;
            None
        }
        Happening::WaitingOnOwner => {
            // The desk's tasks get the waiting mark from the activity (`Sessions::edges`).
            sessions.edge(id, Edge::WaitingOnOwner).await?;
            None
        }
        Happening::TurnEnded { last_words, .. } => {
            if let Some(words) = last_words {
                sessions.worker_said(&desk, words).await;
            }
            // As for Claude Code: hand over first, then store the turn's end and the turn the
            // handover starts in one step. A continued turn ends here again; the handover
            // claims only what is still waiting (and counts handovers in a row), so it cannot
            // loop.
            let handed = sessions.handover(&session).await?;
            let mut edges = vec![Edge::TurnEnded {
                last_words: last_words.clone(),
                background: Vec::new(),
            }];
            if handed.is_some() {
                edges.push(Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper,
                });
            }
            sessions.edges(id, edges).await?;
            handed.map(|text| agent_hooks::handover_answer(agent, &text))
        }
        Happening::Interrupted => {
            sessions.edge(id, Edge::Interrupted).await?;
            None
        }
        Happening::Ended => {
            sessions.end(id, true).await?;
            None
        }
        Happening::Nothing => None,
    })
}
