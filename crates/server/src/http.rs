//! The HTTP routes: `/healthz` and the owner API under `/api`, as thin wrappers around the
//! [`OwnerService`]. Bodies are JSON (`Content-Type: application/json`), at most 1 MiB;
//! every error is `{"error": {"kind", "message"}}` with a fitting status.

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRequest, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Serialize;

use crate::api::{
    AskerList, CancelRequest, DeskList, ErrorBody, NewAskerRequest, NewDeskRequest, NewTaskRequest,
    SessionList, TaskList, UpdateRequest,
};
use crate::guard::{Guard, guard};
use crate::owner::{OwnerError, OwnerErrorKind, OwnerService, TaskQuery, WorkerEnding};

/// The largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

pub(crate) fn router(
    owner: OwnerService,
    a2a: crate::a2a::A2a,
    mcp: Router,
    sessions: crate::sessions::Sessions,
    guard_state: Arc<Guard>,
) -> Router {
    let owner_routes = Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/api/desks", get(list_desks).post(add_desk))
        .route("/api/desks/{name}", axum::routing::delete(remove_desk))
        .route("/api/tasks", get(list_tasks).post(create_task))
        .route("/api/tasks/{id}", get(get_task))
        .route("/api/tasks/{id}/update", post(update_task))
        .route("/api/tasks/{id}/cancel", post(cancel_task))
        .route("/api/sessions", get(list_sessions))
        .route("/api/askers", get(list_askers).post(add_asker))
        .route("/api/askers/{name}", axum::routing::delete(remove_asker))
        .with_state(owner);
    Router::new()
        .merge(owner_routes)
        .merge(crate::a2a::router(a2a))
        .merge(crate::hooks::router(sessions))
        // `/mcp` (crate::mcp) sits inside the guard and the body limit like every route.
        .merge(mcp)
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
        .layer(axum::middleware::from_fn_with_state(guard_state, guard))
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
            .add_desk(&req.name, req.agent.as_deref(), &req.dir)
            .await,
    )
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
    let ending = match req.status.parse::<WorkerEnding>() {
        Ok(e) => e,
        Err(e) => return e.into_response(),
    };
    reply(
        StatusCode::OK,
        owner.update_task(&id, ending, &req.text).await,
    )
}

/// The body is optional (`{"reason": ...}`); an empty body cancels with the default reason.
async fn cancel_task(
    State(owner): State<OwnerService>,
    Path(id): Path<String>,
    request: axum::extract::Request,
) -> Response {
    let empty = request
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .is_some_and(|len| len.as_bytes() == b"0")
        || request
            .headers()
            .get(axum::http::header::CONTENT_TYPE)
            .is_none();
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
