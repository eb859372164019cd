//! The HTTP routes: the root router that puts every area's room together, `/healthz`, and
//! the owner API under `/api`, as thin wrappers around the [`OwnerService`]. Bodies are JSON (`Content-Type: application/json`), at most 1 MiB;
//! every error is `{"error": {"kind", "message"}}` with a fitting status.

pub(crate) mod auth;
pub(crate) mod guard;
pub mod routes;
pub mod ui;
pub mod ui_codes;

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;

use crate::http::guard::{Guard, guard};
use crate::http::routes::{Access, House, Room, RouteDoc};
use crate::owner::api::{
    AgentList, AskerList, CancelRequest, ConnectRequest, DeskList, ErrorBody, NewAskerRequest,
    NewDeskRequest, NewTaskRequest, SessionList, TaskList, UpdateRequest,
};
use crate::owner::{OwnerError, OwnerErrorKind, OwnerService, TaskQuery};

/// The largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// What the daemon's areas need to build their rooms.
pub(crate) struct Areas {
    pub owner: OwnerService,
    pub a2a: crate::a2a::A2a,
    pub mcp: Room,
    pub sessions: crate::sessions::Sessions,
    pub credentials: crate::http::auth::Credentials,
    pub notices: Arc<crate::notify::EventNotifier>,
    pub ui: crate::http::ui::UiState,
}

/// Every route of the daemon, room by room ([`crate::http::routes`]), behind the guard and the
/// body limit; with the route table the rooms declare.
pub(crate) fn router(areas: Areas, guard_state: Arc<Guard>) -> (Router, Vec<RouteDoc>) {
    let Areas {
        owner,
        a2a,
        mcp,
        sessions,
        credentials,
        notices,
        ui,
    } = areas;
    let health = Room::new(Access::Open).route("GET", "/healthz", get(|| async { "ok" }));
    let events = Room::new(Access::Owner)
        .route("GET", "/api/events", get(events))
        .with_state((owner.clone(), notices));
    let (router, routes) = House::default()
        .room(health)
        .room(owner_room(owner))
        .room(events)
        .rooms(crate::a2a::rooms(a2a))
        .room(crate::agents::claude_code::hooks::room(
            sessions,
            credentials,
        ))
        .room(mcp)
        .rooms(crate::http::ui::rooms(ui))
        .into_parts();
    let router = router
        .fallback(|| async {
            error_response(
                StatusCode::NOT_FOUND,
                OwnerError {
                    kind: OwnerErrorKind::NotFound,
                    message: "no such route".into(),
                },
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(guard_state, guard));
    (router, routes)
}

/// The owner API: the owner's token only.
fn owner_room(owner: OwnerService) -> Room {
    Room::new(Access::Owner)
        .route("GET POST", "/api/desks", get(list_desks).post(add_desk))
        .route(
            "PATCH DELETE",
            "/api/desks/{name}",
            axum::routing::delete(remove_desk).patch(change_desk),
        )
        .route("POST", "/api/desks/{name}/launch", post(launch_session))
        .route("POST", "/api/sessions/{id}/stop", post(stop_session))
        .route(
            "POST",
            "/api/sessions/{id}/permission",
            post(answer_permission),
        )
        .route("GET POST", "/api/tasks", get(list_tasks).post(create_task))
        .route("GET", "/api/tasks/{id}", get(get_task))
        .route("POST", "/api/tasks/{id}/update", post(update_task))
        .route("POST", "/api/tasks/{id}/cancel", post(cancel_task))
        .route("GET", "/api/sessions", get(list_sessions))
        .route("POST", "/api/sessions/{id}/pause", post(pause_session))
        .route("POST", "/api/sessions/{id}/resume", post(resume_session))
        .route(
            "GET PUT",
            "/api/settings",
            get(get_settings).put(put_settings),
        )
        .route("POST", "/api/reminders/pause", post(pause_all))
        .route("POST", "/api/reminders/resume", post(resume_all))
        .route("POST", "/api/tasks/{id}/remind", post(remind_task))
        .route("POST", "/api/tasks/{id}/resume", post(resume_task))
        .route("GET POST", "/api/askers", get(list_askers).post(add_asker))
        .route(
            "DELETE",
            "/api/askers/{name}",
            axum::routing::delete(remove_asker),
        )
        .route(
            "GET POST",
            "/api/digest",
            get(peek_digest).post(take_digest),
        )
        .route("GET", "/api/agents", get(list_agents))
        .route("POST", "/api/agents/{agent}/connect", post(connect_agent))
        .route(
            "POST",
            "/api/agents/{agent}/disconnect",
            post(disconnect_agent),
        )
        .with_state(owner)
}

pub(crate) fn error_response(status: StatusCode, error: OwnerError) -> Response {
    (status, axum::Json(ErrorBody { error })).into_response()
}

fn status_of(kind: OwnerErrorKind) -> StatusCode {
    match kind {
        OwnerErrorKind::NotFound => StatusCode::NOT_FOUND,
        OwnerErrorKind::Invalid => StatusCode::BAD_REQUEST,
        OwnerErrorKind::Conflict => StatusCode::CONFLICT,
        OwnerErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        OwnerErrorKind::Forbidden => StatusCode::FORBIDDEN,
        OwnerErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        OwnerErrorKind::Limit => StatusCode::TOO_MANY_REQUESTS,
        OwnerErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for OwnerError {
    fn into_response(self) -> Response {
        error_response(status_of(self.kind), self)
    }
}

/// A JSON body whose refusals use our error shape: wrong content type 415, too large 413,
/// anything else 400 with serde's description of what was wrong.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = Response;
    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(rejection) => Err(json_refusal(rejection)),
        }
    }
}

fn json_refusal(rejection: JsonRejection) -> Response {
    let (status, kind) = match &rejection {
        JsonRejection::MissingJsonContentType(_) => {
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, OwnerErrorKind::Invalid)
        }
        JsonRejection::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            (StatusCode::PAYLOAD_TOO_LARGE, OwnerErrorKind::TooLarge)
        }
        _ => (StatusCode::BAD_REQUEST, OwnerErrorKind::Invalid),
    };
    let message = match kind {
        OwnerErrorKind::TooLarge => format!("request body is larger than {MAX_BODY} bytes"),
        _ if status == StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            "send the body as Content-Type: application/json".into()
        }
        _ => rejection.body_text(),
    };
    error_response(status, OwnerError { kind, message })
}

fn query_refusal(rejection: QueryRejection) -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        OwnerError::invalid(rejection.body_text()),
    )
}

fn reply<T: Serialize>(status: StatusCode, result: Result<T, OwnerError>) -> Response {
    match result {
        Ok(v) => (status, axum::Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn list_agents(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner.agents().await.map(|agents| AgentList { agents }),
    )
}

async fn connect_agent(
    State(owner): State<OwnerService>,
    Path(agent): Path<String>,
    Body(req): Body<ConnectRequest>,
) -> Response {
    reply(StatusCode::OK, owner.connect_agent(&agent, req.force).await)
}

async fn disconnect_agent(
    State(owner): State<OwnerService>,
    Path(agent): Path<String>,
) -> Response {
    reply(StatusCode::OK, owner.disconnect_agent(&agent).await)
}

async fn list_desks(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner.list_desks().await.map(|desks| DeskList { desks }),
    )
}

async fn add_desk(State(owner): State<OwnerService>, Body(req): Body<NewDeskRequest>) -> Response {
    reply(
        StatusCode::CREATED,
        owner
            .add_desk(
                &req.name,
                req.agent.as_deref(),
                &req.dir,
                req.deliver_command,
            )
            .await,
    )
}

async fn change_desk(
    State(owner): State<OwnerService>,
    Path(name): Path<String>,
    Body(change): Body<crate::owner::api::DeskChange>,
) -> Response {
    if change.deliver_command.is_none() && change.auto_launch.is_none() {
        return crate::owner::OwnerError::invalid(
            "nothing to change: send deliverCommand (a command, or null to remove it) or autoLaunch (true or false)",
        )
        .into_response();
    }
    let mut result = None;
    if let Some(command) = change.deliver_command {
        result = Some(owner.set_deliver_command(&name, command).await);
    }
    if let Some(on) = change.auto_launch
        && result.as_ref().is_none_or(Result::is_ok)
    {
        result = Some(owner.set_auto_launch(&name, on).await);
    }
    match result {
        Some(r) => reply(StatusCode::OK, r),
        None => StatusCode::NO_CONTENT.into_response(),
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DigestQuery {}

/// `GET /api/digest`: what happened since the owner last took one, leaving it untaken.
async fn peek_digest(
    State(owner): State<OwnerService>,
    query: Result<Query<DigestQuery>, QueryRejection>,
) -> Response {
    if let Err(r) = query {
        return query_refusal(r);
    }
    reply(StatusCode::OK, owner.digest(false).await)
}

/// `POST /api/digest`: take the digest; the next one starts from now.
async fn take_digest(State(owner): State<OwnerService>) -> Response {
    reply(StatusCode::OK, owner.digest(true).await)
}

async fn launch_session(State(owner): State<OwnerService>, Path(name): Path<String>) -> Response {
    reply(StatusCode::CREATED, owner.launch_session(&name).await)
}

async fn answer_permission(
    State(owner): State<OwnerService>,
    Path(id): Path<String>,
    Body(answer): Body<crate::owner::api::PermissionAnswer>,
) -> Response {
    reply(
        StatusCode::OK,
        owner
            .answer_permission(&id, answer.allow, answer.message, answer.request_id)
            .await,
    )
}

async fn stop_session(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    match owner.stop_session(&id).await {
        Ok(()) => (
            StatusCode::ACCEPTED,
            axum::Json(serde_json::json!({"id": id, "stopping": true})),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

async fn remove_desk(State(owner): State<OwnerService>, Path(name): Path<String>) -> Response {
    match owner.remove_desk(&name).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn list_tasks(
    State(owner): State<OwnerService>,
    query: Result<Query<TaskQuery>, QueryRejection>,
) -> Response {
    let Query(query) = match query {
        Ok(q) => q,
        Err(r) => return query_refusal(r),
    };
    reply(
        StatusCode::OK,
        owner
            .list_tasks(query)
            .await
            .map(|tasks| TaskList { tasks }),
    )
}

async fn get_task(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.get_task(&id).await)
}

async fn create_task(
    State(owner): State<OwnerService>,
    Body(req): Body<NewTaskRequest>,
) -> Response {
    reply(
        StatusCode::CREATED,
        owner
            .create_task(&req.desk, &req.text, req.message_id)
            .await,
    )
}

async fn update_task(
    State(owner): State<OwnerService>,
    Path(id): Path<String>,
    Body(req): Body<UpdateRequest>,
) -> Response {
    let status = match req.status.parse::<crate::owner::WorkerStatus>() {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    reply(
        StatusCode::OK,
        owner
            .update_task(&id, status, &req.text, &req.files, req.data)
            .await,
    )
}

/// The body is optional (`{"reason": ...}`); an empty body cancels with the default reason.
async fn cancel_task(
    State(owner): State<OwnerService>,
    Path(id): Path<String>,
    request: axum::extract::Request,
) -> Response {
    // No body at all cancels with the default reason; any body must be JSON (else 415).
    let headers = request.headers();
    let empty = match headers.get(axum::http::header::CONTENT_LENGTH) {
        Some(len) => len.as_bytes() == b"0",
        None => !headers.contains_key(axum::http::header::TRANSFER_ENCODING),
    };
    let reason = if empty {
        None
    } else {
        match Body::<CancelRequest>::from_request(request, &()).await {
            Ok(Body(b)) => b.reason,
            Err(refusal) => return refusal,
        }
    };
    reply(StatusCode::OK, owner.cancel_task(&id, reason).await)
}

async fn list_askers(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner.list_askers().await.map(|askers| AskerList { askers }),
    )
}

async fn add_asker(
    State(owner): State<OwnerService>,
    Body(req): Body<NewAskerRequest>,
) -> Response {
    reply(StatusCode::CREATED, owner.add_asker(&req.name).await)
}

async fn remove_asker(State(owner): State<OwnerService>, Path(name): Path<String>) -> Response {
    match owner.remove_asker(&name).await {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => e.into_response(),
    }
}

async fn list_sessions(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner
            .list_sessions()
            .await
            .map(|sessions| SessionList { sessions }),
    )
}

async fn pause_session(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.pause_session(&id, true).await)
}

async fn resume_session(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.pause_session(&id, false).await)
}

async fn get_settings(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner
            .settings()
            .await
            .map(|settings| serde_json::json!({"settings": settings})),
    )
}

/// `{"key": "value", ...}`: every value is checked before any is written.
async fn put_settings(
    State(owner): State<OwnerService>,
    Body(changes): Body<serde_json::Map<String, serde_json::Value>>,
) -> Response {
    let mut pairs = Vec::new();
    for (k, v) in changes {
        let text = match v {
            serde_json::Value::String(s) => s,
            serde_json::Value::Number(n) => n.to_string(),
            serde_json::Value::Bool(b) => b.to_string(),
            other => {
                return OwnerError::invalid(format!("{k}: give the value as text, not {other}"))
                    .into_response();
            }
        };
        pairs.push((k, text));
    }
    reply(
        StatusCode::OK,
        owner
            .set_settings(pairs)
            .await
            .map(|settings| serde_json::json!({"settings": settings})),
    )
}

async fn pause_all(State(owner): State<OwnerService>) -> Response {
    let r = owner
        .set_settings(vec![("reminders.paused".into(), "true".into())])
        .await;
    reply(
        StatusCode::OK,
        r.map(|settings| serde_json::json!({"settings": settings})),
    )
}

async fn resume_all(State(owner): State<OwnerService>) -> Response {
    let r = owner
        .set_settings(vec![("reminders.paused".into(), "false".into())])
        .await;
    reply(
        StatusCode::OK,
        r.map(|settings| serde_json::json!({"settings": settings})),
    )
}

async fn remind_task(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.remind_now(&id).await)
}

async fn resume_task(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.resume_task(&id).await)
}

/// The shortest time between two `sessions` events on the owner's stream.
const SESSIONS_EVENT_GAP: std::time::Duration = std::time::Duration::from_millis(250);

/// The owner's event stream (SSE): `task` events with the task as the owner API shows it on
/// every change, `notice` events (a stall, a session that ended with tasks open),
/// `settings` events with every setting after one changed, and `sessions` events (no data
/// worth reading: `{}`) when a session changed in a way `/api/sessions` shows — at most one
/// per [`SESSIONS_EVENT_GAP`], since hooks change sessions on every tool call.
async fn events(
    State((owner, notices)): State<(OwnerService, Arc<crate::notify::EventNotifier>)>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Event, std::convert::Infallible>>(64);
    let mut changes = owner.changes();
    let mut notes = notices.subscribe();
    let mut settings = owner.settings_changes();
    settings.mark_unchanged();
    let mut stop = owner.stopping();
    let mut sessions = owner.session_changes();
    sessions.mark_unchanged();
    let sessions_tx = tx.clone();
    let mut sessions_stop = owner.stopping();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                r = sessions.changed() => if r.is_err() { return },
                // The client went away.
                () = sessions_tx.closed() => return,
                // The stream ends when the daemon stops: nothing may hold it open.
                () = async { let _ = sessions_stop.wait_for(|s| *s).await; } => return,
            }
            // Changes in the gap are folded into this event.
            tokio::time::sleep(SESSIONS_EVENT_GAP).await;
            sessions.mark_unchanged();
            let event = Event::default().event("sessions").data("{}");
            if sessions_tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                r = settings.changed() => match r {
                    Ok(()) => match owner.settings().await {
                        Ok(all) => Event::default().event("settings").json_data(all),
                        Err(_) => continue,
                    },
                    Err(_) => return,
                },
                r = changes.recv() => match r {
                    Ok(t) => Event::default().event("task").json_data(crate::owner::api::TaskView::from(&*t)),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => Ok(Event::default().event("resync").data("{}")),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                r = notes.recv() => match r {
                    Ok(n) => Event::default().event("notice").json_data(n),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                },
                () = async { let _ = stop.wait_for(|s| *s).await; } => return,
            };
            let Ok(event) = event else { continue };
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
    });
    Sse::new(tokio_stream::wrappers::ReceiverStream::new(rx))
        .keep_alive(KeepAlive::default())
        .into_response()
}
