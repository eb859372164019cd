//! The generic adapter: any agent without a Taskkeeper adapter of its own reports its
//! session in agent-neutral words (`taskkeeper report EVENT`, or `POST /hooks/generic`), so
//! the watchdog knows when it is quiet and reminds it on the other agents' ladder. Each
//! event is one [`Edge`]; the rest of the session model is shared with every adapter.
//!
//! An agent that reports nothing still gets its tasks through the desk's command (see
//! [`crate::sessions`]); it is just never reminded, because nobody can tell it is quiet.
//! [`Generic`] is its adapter: no hooks of its own, no handover, reached by a paste or the
//! desk's command, never launched.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use taskkeeper_core::AgentKind;
use taskkeeper_core::session::{Edge, Session, SessionId, TurnOrigin, check_dir};

use taskkeeper_core::delivery::Method;

use crate::agents::adapter;
use crate::agents::adapter::{Adapter, LevelSignal};
use crate::agents::intake::{bad, reach_of, store_error};
use crate::agents::launch::{Launch, LaunchConfig, LaunchError};
use crate::delivery::Delivery;

/// One report: `POST /hooks/generic`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Report {
    /// The agent's own id for the session (stable for the session's life).
    pub session: String,
    /// `started`, `turn-started`, `turn-ended`, `waiting` (on the owner) or `ended`.
    pub event: String,
    /// The session's working directory (absolute): it picks the desk when no desk is named.
    pub cwd: PathBuf,
    /// `codex`, `gemini` or `generic` (the default): the first rung of its ladder.
    #[serde(default)]
    pub agent: Option<String>,
    /// With `turn-ended`: what the agent said last (reminders quote it back).
    #[serde(default)]
    pub last_words: Option<String>,
    /// With `turn-ended`: the background commands still running (no reminder while any runs).
    #[serde(default)]
    pub background: Vec<String>,
}

/// The events a report may name, in the order a session goes through them.
pub const EVENTS: [&str; 5] = ["started", "turn-started", "turn-ended", "waiting", "ended"];

/// How a report's answer shows the session: the owner API's view of it, which the router
/// passes in (the agents sit below the owner and name none of its types).
pub(crate) type SessionReply = fn(&Session) -> Response;

pub(crate) async fn report(
    State(delivery): State<Delivery>,
    axum::Extension(reply): axum::Extension<SessionReply>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sessions = delivery.sessions();
    let report: Report = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(format!("not a session report: {e}")),
    };
    if report.session.trim().is_empty() {
        return bad("session must name the session");
    }
    let id = match SessionId::parse(report.session.trim()) {
        Ok(id) => id,
        Err(e) => return bad(e.to_string()),
    };
    if let Err(e) = check_dir(&report.cwd) {
        return bad(format!("cwd: {e}"));
    }
    let agent = match report.agent.as_deref().map(str::parse::<AgentKind>) {
        None => Generic.kind(),
        Some(Ok(kind)) if !adapter(kind).capabilities().reports_generically => {
            return bad(format!(
                "{kind} sessions report through their hooks (`taskkeeper connect {kind}`)"
            ));
        }
        Some(Ok(kind)) => kind,
        Some(Err(e)) => return bad(e.to_string()),
    };
    if !EVENTS.contains(&report.event.as_str()) {
        return bad(format!(
            "unknown event {:?}: use {}",
            report.event,
            EVENTS.join(", ")
        ));
    }
    let (desk_hint, reach) = reach_of(agent, &headers);
    // Refused before anything of the report is taken in.
    match sessions.tasks().get_session(&id).await {
        Ok(Some(s)) if s.reach.headless => {
            return bad(format!(
                "session {id} was launched by Taskkeeper, which reads its activity itself"
            ));
        }
        Ok(_) => {}
        Err(e) => return store_error(e),
    }
    let before = match sessions
        .attach(&id, &report.cwd, desk_hint, reach, agent)
        .await
    {
        Ok(s) => s,
        Err(e) => return store_error(e),
    };
    let edge = match report.event.as_str() {
        "started" => Edge::Started,
        "turn-started" => Edge::TurnStarted {
            origin: if delivery.take_expected(&id) {
                TurnOrigin::Taskkeeper
            } else {
                TurnOrigin::Owner
            },
        },
        "turn-ended" => {
            if let Some(words) = &report.last_words {
                sessions.worker_said(&before.desk, words).await;
            }
            Edge::TurnEnded {
                last_words: report.last_words,
                background: report.background,
            }
        }
        "waiting" => Edge::WaitingOnOwner,
        _ => Edge::Ended,
    };
    // The desk's tasks get (or lose) the waiting mark from the activity (`Sessions::edges`).
    let session = match sessions.edge(&id, edge).await {
        Ok(s) => s,
        Err(e) => return store_error(e),
    };
    tracing::debug!(session = %id, event = %report.event, desk = %session.desk, "session report");
    (StatusCode::OK, reply(&session)).into_response()
}

/// The adapter of an agent Taskkeeper has no adapter of its own for.
pub(crate) struct Generic;

impl Adapter for Generic {
    fn kind(&self) -> AgentKind {
        AgentKind::Generic
    }

    fn name(&self) -> &'static str {
        "another agent"
    }

    fn ways_in(&self) -> &'static [Method] {
        &[Method::Paste, Method::Command]
    }

    fn level_signals(&self) -> &'static [LevelSignal] {
        &[LevelSignal::ProcessGone]
    }

    fn launch(
        &self,
        _desk: &taskkeeper_core::Desk,
        _config: &LaunchConfig,
        _id: &SessionId,
    ) -> Result<Option<Launch>, LaunchError> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agents::adapter::Capabilities;

    #[test]
    fn another_agent_is_reached_by_a_paste_or_its_command_and_reports_itself() {
        assert_eq!(
            Generic.capabilities(),
            Capabilities {
                reports_generically: true,
                ..Capabilities::default()
            }
        );
        assert_eq!(Generic.ways_in(), [Method::Paste, Method::Command]);
        assert_eq!(Generic.vocabulary(), None);
        let err = Generic
            .on_hook(&json!({"hook_event_name": "Stop"}))
            .unwrap_err();
        assert_eq!(err.to_string(), "unknown generic hook event \"Stop\"");
    }
}
