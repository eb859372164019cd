//! The Claude Code adapter's intake: `POST /hooks/claude-code` takes one hook's JSON (as
//! Claude Code wrote it to `taskkeeper hook`'s stdin, plus what the helper's environment
//! knows, in `X-Taskkeeper-*` headers), turns it into session [`Edge`]s and task events, and
//! answers with exactly what the hook should print (often nothing).
//! `POST /hooks/claude-code/wait` is the asyncRewake waiter's long poll.
//!
//! A payload that is not a hook this adapter knows is answered 400 and changes nothing; the
//! helper prints nothing either way, so a session is never disturbed by Taskkeeper.

use std::path::PathBuf;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use taskkeeper_core::session::{Edge, SelfWake, SessionId, TurnOrigin, check_dir};
use taskkeeper_core::{AgentKind, StoreError, Timestamp, delivery};

use crate::agents::headers as names;
use crate::agents::intake::{bad, reach_of, store_error};
use crate::delivery::Delivery;
use crate::delivery::WaitOutcome;
use crate::http::auth::Credentials;

/// The events this adapter understands.
const EVENTS: [&str; 12] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "Notification",
    "Stop",
    "StopFailure",
    "SessionEnd",
    "SubagentStart",
    "SubagentStop",
];

/// Tools of ours whose calls get the session id filled in (see the MCP module).
const OUR_TOOLS: &str = "mcp__taskkeeper__";

/// How long a rate limit holds reminders back when Claude Code does not say.
const RATE_LIMIT_PAUSE: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// A hook payload, checked.
struct Hook {
    event: String,
    session: SessionId,
    cwd: Option<PathBuf>,
    body: Value,
}

fn refuse(message: impl Into<String>) -> Box<Response> {
    Box::new(bad(message))
}

fn parse(body: &[u8]) -> Result<Hook, Box<Response>> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| refuse(format!("not a hook payload (invalid JSON: {e})")))?;
    let str_field = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    let event = str_field("hook_event_name")
        .ok_or_else(|| refuse("not a hook payload: no hook_event_name"))?;
    if !EVENTS.contains(&event.as_str()) {
        return Err(refuse(format!("unknown hook event {event:?}")));
    }
    let session = str_field("session_id")
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| refuse("not a hook payload: no session_id"))?;
    let session = SessionId::parse(&session).map_err(|e| refuse(e.to_string()))?;
    let cwd = str_field("cwd").map(PathBuf::from);
    if let Some(dir) = &cwd {
        check_dir(dir).map_err(|e| refuse(format!("cwd: {e}")))?;
    }
    Ok(Hook {
        event,
        session,
        cwd,
        body,
    })
}

pub(crate) async fn hook(
    State(delivery): State<Delivery>,
    axum::Extension(credentials): axum::Extension<Credentials>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sessions = delivery.sessions();
    let hook = match parse(&body) {
        Ok(h) => h,
        Err(refusal) => return *refusal,
    };
    let (desk_hint, reach) = reach_of(&headers);
    let entrypoint = headers
        .get(names::ENTRYPOINT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let known = sessions.tasks().get_session(&hook.session).await;
    let cwd = match (&hook.cwd, &known) {
        (Some(c), _) => c.clone(),
        (None, Ok(Some(s))) => s.cwd.clone(),
        _ => return bad("not a hook payload: no cwd"),
    };
    let session = match sessions
        .attach(&hook.session, &cwd, desk_hint, reach, AgentKind::ClaudeCode)
        .await
    {
        Ok(s) => s,
        Err(e) => return store_error(e),
    };
    tracing::debug!(event = %hook.event, session = %session.id, desk = %session.desk, "hook");
    if session.reach.headless {
        // Its own event stream tells its activity, and its stdin takes its tasks: the
        // hooks (installed for the owner's interactive sessions) only fill in the session.
        return (StatusCode::OK, fill_session(&hook, &credentials)).into_response();
    }
    match handle(
        &delivery,
        &credentials,
        &hook,
        entrypoint.as_deref(),
        session,
    )
    .await
    {
        Ok(out) => (StatusCode::OK, out).into_response(),
        Err(e) => store_error(e),
    }
}

/// For a PreToolUse of one of our tools: allow it, with the calling session's id and its
/// proof added to its input (see the MCP module): the model cannot write another session's
/// proof, so its arguments cannot make it act as another session. Nothing for any other
/// event or tool.
fn fill_session(hook: &Hook, credentials: &Credentials) -> String {
    let b = &hook.body;
    let tool = b.get("tool_name").and_then(Value::as_str).unwrap_or("");
    if hook.event != "PreToolUse" || !tool.starts_with(OUR_TOOLS) {
        return String::new();
    }
    // updatedInput replaces the whole input: copy it and add the session.
    let mut input = b.get("tool_input").cloned().unwrap_or_else(|| json!({}));
    if let Value::Object(o) = &mut input {
        o.insert("session_id".into(), json!(hook.session.as_str()));
        o.insert(
            "session_proof".into(),
            json!(credentials.session_proof(hook.session.as_str())),
        );
    }
    json!({"hookSpecificOutput": {
        "hookEventName": "PreToolUse",
        "permissionDecision": "allow",
        "permissionDecisionReason": "Taskkeeper's own tool",
        "updatedInput": input,
    }})
    .to_string()
}

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

/// The wake-ups a Stop lists as scheduled by the session itself (`session_crons`, ≥ 2.1.145:
/// `id`, `schedule`, `recurring`, `prompt`); absent or malformed entries list nothing.
pub(crate) fn self_wakes(stop: &Value) -> Vec<SelfWake> {
    stop.get("session_crons")
        .and_then(Value::as_array)
        .map(|crons| {
            crons
                .iter()
                .filter_map(|c| {
                    Some(SelfWake {
                        schedule: c.get("schedule")?.as_str()?.to_owned(),
                        recurring: c.get("recurring").and_then(Value::as_bool).unwrap_or(false),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Returns what the hook prints.
async fn handle(
    delivery: &Delivery,
    credentials: &Credentials,
    hook: &Hook,
    entrypoint: Option<&str>,
    session: taskkeeper_core::Session,
) -> Result<String, StoreError> {
    let sessions = delivery.sessions();
    let b = &hook.body;
    let id = &session.id;
    let desk = session.desk.clone();
    Ok(match hook.event.as_str() {
        "SessionStart" => {
            sessions.edge(id, Edge::Started).await?;
            // A store read blocks on SQLite: off the async worker, like every other.
            let name = desk.clone();
            let note = match sessions
                .tasks()
                .blocking(move |s, _| s.desk(name.as_str()))
                .await?
            {
                Some(d) => delivery::session_note(&d),
                None => String::new(),
            };
            let source = b.get("source").and_then(Value::as_str).unwrap_or("");
            let first = if takes_start_message(entrypoint, source) {
                delivery.start_message(&session).await?
            } else {
                None
            };
            let mut out = json!({"hookEventName": "SessionStart", "additionalContext": note});
            if let Some(text) = first {
                tracing::info!(session = %id, "the session starts with its first task");
                out["initialUserMessage"] = json!(text);
            }
            json!({ "hookSpecificOutput": out }).to_string()
        }
        "UserPromptSubmit" => {
            let prompt = b.get("prompt").and_then(Value::as_str).unwrap_or("");
            let origin = if delivery.take_expected(id) {
                TurnOrigin::Taskkeeper
            } else if prompt.trim_start().starts_with("<task-notification>") {
                TurnOrigin::Background
            } else {
                delivery.owner_wrote(id);
                TurnOrigin::Owner
            };
            sessions.edge(id, Edge::TurnStarted { origin }).await?;
            String::new()
        }
        "PreToolUse" => {
            sessions.edge(id, Edge::ToolActivity).await?;
            fill_session(hook, credentials)
        }
        "PostToolUse" | "PostToolUseFailure" => {
            sessions.edge(id, Edge::ToolActivity).await?;
            if let Some(bg) = b
                .pointer("/tool_response/backgroundTaskId")
                .and_then(Value::as_str)
            {
                sessions
                    .edge(id, Edge::BackgroundStarted { id: bg.to_owned() })
                    .await?;
            }
            String::new()
        }
        // The desk's tasks get the waiting mark from the activity (`Sessions::edges`).
        "PermissionRequest" => {
            sessions.edge(id, Edge::WaitingOnOwner).await?;
            String::new()
        }
        "Notification" => {
            let kind = b
                .get("notification_type")
                .and_then(Value::as_str)
                .unwrap_or("");
            if matches!(
                kind,
                "permission_prompt" | "elicitation_dialog" | "agent_needs_input"
            ) {
                sessions.edge(id, Edge::WaitingOnOwner).await?;
            }
            String::new()
        }
        "Stop" => {
            let last_words = b
                .get("last_assistant_message")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let background = b
                .get("background_tasks")
                .and_then(Value::as_array)
                .map(|tasks| {
                    tasks
                        .iter()
                        .filter(|t| {
                            !matches!(
                                t.get("status").and_then(Value::as_str),
                                Some("completed" | "failed" | "stopped" | "killed")
                            )
                        })
                        .filter_map(|t| t.get("id").and_then(Value::as_str).map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            if let Some(words) = &last_words {
                sessions.worker_said(&desk, words).await;
            }
            // Hand over first, then store the turn's end (and the new turn the handover
            // starts) in one step: a waiter only ever sees an idle session with nothing left
            // to claim, or a busy one.
            let handed = delivery.handover(&session).await?;
            let wakes_at = taskkeeper_core::session::next_wake(
                &self_wakes(b),
                sessions.tasks().now(),
                &chrono::Local,
            );
            let mut edges = vec![
                Edge::TurnEnded {
                    last_words,
                    background,
                },
                Edge::WakeScheduled { at: wakes_at },
            ];
            if handed.is_some() {
                edges.push(Edge::TurnStarted {
                    origin: TurnOrigin::Taskkeeper,
                });
            }
            sessions.edges(id, edges).await?;
            match handed {
                Some(text) => json!({"decision": "block", "reason": text}).to_string(),
                None => String::new(),
            }
        }
        "StopFailure" => {
            let error = b.get("error").and_then(Value::as_str).unwrap_or("");
            let now = sessions.tasks().now();
            let until: Option<Timestamp> =
                (error == "rate_limit").then(|| now.plus(RATE_LIMIT_PAUSE));
            sessions
                .edge(
                    id,
                    Edge::TurnFailed {
                        rate_limited_until: until,
                    },
                )
                .await?;
            String::new()
        }
        "SessionEnd" => {
            let reason = b.get("reason").and_then(Value::as_str).unwrap_or("");
            // After /clear the same desk goes on in a new session: nothing to tell.
            sessions.end(id, reason != "clear").await?;
            String::new()
        }
        // Subagents run beside the main turn; they change nothing the watchdog asks.
        _ => String::new(),
    })
}

/// The waiter's long poll: `{"action":"deliver","text":...}` or `{"action":"leave","why":...}`.
pub(crate) async fn wait(
    State(delivery): State<Delivery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let sessions = delivery.sessions();
    let hook = match parse(&body) {
        Ok(h) => h,
        Err(refusal) => return *refusal,
    };
    let (desk_hint, reach) = reach_of(&headers);
    if let Some(cwd) = &hook.cwd
        && let Err(e) = sessions
            .attach(&hook.session, cwd, desk_hint, reach, AgentKind::ClaudeCode)
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
