//! The owner API under `/api`: thin handlers that turn a request into one [`OwnerService`]
//! call and its result into JSON. The owner's token only (its room's [`Access::Owner`]).

use axum::extract::rejection::QueryRejection;
use axum::extract::{FromRequest, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::http::error::{Body, query_refusal, reply};
use crate::http::routes::{Access, Room};
use crate::owner::api::{
    AgentList, AskerList, CancelRequest, ConnectRequest, DeskList, NewAskerRequest, NewDeskRequest,
    NewTaskRequest, SessionList, TaskList, UpdateRequest,
};
use crate::owner::{OwnerService, TaskQuery};

/// The owner API: the owner's token only.
pub(crate) fn room(owner: OwnerService) -> Room {
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
        .route("GET", "/api/settings/catalogue", get(settings_catalogue))
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
        .route("GET", "/api/network", get(network))
        .route("GET", "/api/card-key", get(card_key))
        .route("POST", "/api/card-key/rotate", post(rotate_card_key))
        .route("GET", "/api/agents", get(list_agents))
        .route("POST", "/api/agents/{agent}/connect", post(connect_agent))
        .route(
            "POST",
            "/api/agents/{agent}/disconnect",
            post(disconnect_agent),
        )
        .with_state(owner)
}

async fn card_key(State(owner): State<OwnerService>) -> Response {
    (StatusCode::OK, axum::Json(owner.card_key())).into_response()
}

async fn rotate_card_key(State(owner): State<OwnerService>) -> Response {
    reply(StatusCode::OK, owner.rotate_card_key().await)
}

async fn network(State(owner): State<OwnerService>) -> Response {
    (StatusCode::OK, axum::Json(owner.network())).into_response()
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

/// What every setting is: key, kind, range, units, default, help (core's table).
async fn settings_catalogue(State(owner): State<OwnerService>) -> Response {
    (StatusCode::OK, axum::Json(owner.settings_catalogue())).into_response()
}

/// `{"key": "value", ...}`: every value is checked before any is written.
async fn put_settings(
    State(owner): State<OwnerService>,
    Body(changes): Body<crate::owner::SettingsMap>,
) -> Response {
    reply(
        StatusCode::OK,
        owner
            .set_settings(changes)
            .await
            .map(|settings| serde_json::json!({"settings": settings})),
    )
}

async fn pause_all(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner
            .pause_reminders(true)
            .await
            .map(|settings| serde_json::json!({"settings": settings})),
    )
}

async fn resume_all(State(owner): State<OwnerService>) -> Response {
    reply(
        StatusCode::OK,
        owner
            .pause_reminders(false)
            .await
            .map(|settings| serde_json::json!({"settings": settings})),
    )
}

async fn remind_task(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.remind_now(&id).await)
}

async fn resume_task(State(owner): State<OwnerService>, Path(id): Path<String>) -> Response {
    reply(StatusCode::OK, owner.resume_task(&id).await)
}
