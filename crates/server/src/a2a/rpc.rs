//! The JSON-RPC 2.0 binding (A2A §9): its routes, reading the envelope, and the A2A errors
//! with their codes (the HTTP+JSON binding, `rest.rs`, renders the same errors its own way).
//! In v1.0 an A2A error carries `data: [ErrorInfo]`; in v0.3 `data` is a plain object or
//! absent. The envelope only unwraps and wraps: each method is the one [`super::dispatch`]
//! runs for either binding.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use taskkeeper_core::limits::{Limit, LimitExceeded};
use taskkeeper_core::{StoreError, TransitionError};

use super::wire::Dialect;
use super::{A2a, Ctx, Envelope, Reply};
use crate::http::auth::Caller;
use crate::http::network::Outside;
use crate::http::routes::{Access, Room};
use crate::owner::OwnerErrorKind;

/// JSON-RPC's rooms: the machine endpoint and each desk's (askers and the owner), and the
/// conformance desk's (`serve --conformance` only), each with and without a trailing slash.
pub(super) fn rooms(a2a: &A2a) -> Vec<Room> {
    let mut rooms = vec![
        Room::new(Access::Askers)
            .on_network()
            .route("POST", "/a2a", post(machine))
            .route("POST", "/a2a/", post(machine))
            .route("POST", "/a2a/{desk}", post(desk))
            .route("POST", "/a2a/{desk}/", post(desk))
            .with_state(a2a.clone()),
    ];
    if a2a.card.conformance_desk.is_some() {
        rooms.push(
            Room::new(Access::Conformance)
                .route("POST", crate::conformance::PATH, post(conformance))
                .route("POST", crate::conformance::PATH_SLASH, post(conformance))
                .with_state(a2a.clone()),
        );
    }
    rooms
}

#[derive(Debug, Deserialize)]
struct VersionQuery {
    #[serde(rename = "A2A-Version")]
    version: Option<String>,
}

fn rpc_json(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

async fn machine(
    State(a2a): State<A2a>,
    caller: axum::Extension<Caller>,
    outside: Option<axum::Extension<Outside>>,
    query: Query<VersionQuery>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    handle(a2a.reached(outside), None, caller.0, &query, &headers, body).await
}

async fn desk(
    State(a2a): State<A2a>,
    Path(desk): Path<String>,
    caller: axum::Extension<Caller>,
    outside: Option<axum::Extension<Outside>>,
    query: Query<VersionQuery>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let a2a = a2a.reached(outside);
    handle(a2a, Some(desk), caller.0, &query, &headers, body).await
}

/// The conformance desk's endpoint (`serve --conformance` only).
async fn conformance(
    State(a2a): State<A2a>,
    caller: axum::Extension<Caller>,
    query: Query<VersionQuery>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let desk = crate::conformance::DESK.to_owned();
    handle(a2a, Some(desk), caller.0, &query, &headers, body).await
}

async fn handle(
    a2a: A2a,
    desk: Option<String>,
    caller: Caller,
    query: &VersionQuery,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    // An unsupported version is answered after the envelope is read, so the error carries the
    // request's id; until then errors are rendered as v1.0.
    let version = super::dialect_of(headers, query.version.as_deref());
    let dialect = *version.as_ref().unwrap_or(&Dialect::V1);
    if !super::content_type(headers).is_some_and(|t| super::is_json_type(&t)) {
        let e = RpcError::content_type("send JSON-RPC requests as Content-Type: application/json");
        return rpc_json(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            failure(&Value::Null, &e, dialect),
        );
    }
    let body = match body {
        Ok(b) => b,
        Err(rejection) => {
            let status = rejection.status();
            let e = RpcError::invalid_request(format!(
                "the request body could not be read: {}",
                rejection.body_text()
            ));
            return rpc_json(status, failure(&Value::Null, &e, dialect));
        }
    };
    let mut request = match parse(&body) {
        Ok(r) => r,
        Err((id, e)) => return rpc_json(StatusCode::OK, failure(&id, &e, dialect)),
    };
    request.params = match super::proto_names::json_names(request.params) {
        Ok(p) => p,
        Err(e) => return rpc_json(StatusCode::OK, failure(&request.id, &e.into(), dialect)),
    };
    if request.notification {
        let e = super::unanswerable(dialect, &request.method, request.params);
        return rpc_json(StatusCode::OK, failure(&Value::Null, &e, dialect));
    }
    if let Err(requested) = &version {
        return rpc_json(
            StatusCode::OK,
            failure(&request.id, &RpcError::version(requested), dialect),
        );
    }
    let desk = match desk {
        None => None,
        Some(name) => match super::check_desk(&a2a, name).await {
            Ok(d) => Some(d),
            Err(e) => return rpc_json(StatusCode::NOT_FOUND, failure(&request.id, &e, dialect)),
        },
    };
    let ctx = Ctx {
        a2a,
        desk,
        caller,
        dialect,
        envelope: Envelope::JsonRpc(request.id.clone()),
    };
    let mut response = match super::dispatch(&ctx, &request.method, request.params).await {
        Ok(Reply::Json(result)) => rpc_json(StatusCode::OK, success(&request.id, result)),
        Ok(Reply::Stream(events)) => events.into_response(),
        // A v0.3 client that asked for a stream reads its error from one (the v0.3 kit's
        // `tasks/resubscribe` of an unknown task); v1.0's get it as a JSON answer.
        Err(e) if dialect == Dialect::V03 && super::is_streaming(&request.method) => {
            let event = Event::default().data(failure(&request.id, &e, dialect).to_string());
            Sse::new(tokio_stream::iter([Ok::<_, std::convert::Infallible>(
                event,
            )]))
            .into_response()
        }
        Err(e) => rpc_json(StatusCode::OK, failure(&request.id, &e, dialect)),
    };
    super::echo_extension(headers, &mut response);
    response
}

/// A parsed request envelope.
#[derive(Debug)]
pub struct Request {
    /// Null for a request without one (a notification, answered by `super::unanswerable`).
    pub id: Value,
    pub notification: bool,
    pub method: String,
    pub params: Value,
}

/// A JSON-RPC error with the A2A reason that names it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// ErrorInfo `reason` for A2A errors (-32001..-32009) and Taskkeeper's limits
    /// (`*_LIMIT`, in Taskkeeper's domain: see [`domain_of`]).
    pub reason: Option<&'static str>,
    pub metadata: Map<String, Value>,
}

/// ProtoJSON refuses a field given twice; so does each binding, as invalid params.
impl From<super::proto_names::NamedTwice> for RpcError {
    fn from(e: super::proto_names::NamedTwice) -> Self {
        Self::invalid_params(e.0)
    }
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>, reason: Option<&'static str>) -> Self {
        Self {
            code,
            message: message.into(),
            reason,
            metadata: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.metadata
            .insert(key.to_owned(), Value::String(value.into()));
        self
    }

    pub fn parse(detail: impl std::fmt::Display) -> Self {
        Self::new(-32700, format!("Invalid JSON payload: {detail}"), None)
    }
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, message, None)
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(-32601, format!("Method not found: {method}"), None)
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, format!("Invalid params: {}", message.into()), None)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message, None)
    }
    pub fn task_not_found(id: &str) -> Self {
        Self::new(
            -32001,
            format!("Task not found: {id}"),
            Some("TASK_NOT_FOUND"),
        )
        .with("taskId", id)
    }
    pub fn not_cancelable(message: impl Into<String>) -> Self {
        Self::new(-32002, message, Some("TASK_NOT_CANCELABLE"))
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(-32004, message, Some("UNSUPPORTED_OPERATION"))
    }
    pub fn content_type(message: impl Into<String>) -> Self {
        Self::new(-32005, message, Some("CONTENT_TYPE_NOT_SUPPORTED"))
    }
    pub fn version(requested: &str) -> Self {
        Self::new(
            -32009,
            format!("Version not supported: {requested:?}; this server speaks 1.0 and 0.3"),
            Some("VERSION_NOT_SUPPORTED"),
        )
        .with("requested", requested)
        .with("supported", "1.0,0.3")
    }

    /// A refusal by one of Taskkeeper's limits. A2A defines no error for a quota, so the code
    /// is JSON-RPC's implementation-defined server error (-32000, outside A2A's
    /// -32001..-32099) and the ErrorInfo's reason, in Taskkeeper's domain, names the limit;
    /// its metadata names the setting and its value.
    pub fn limit(e: &LimitExceeded) -> Self {
        let reason = match e.limit() {
            Limit::OpenTasksPerAsker => "OPEN_TASKS_PER_ASKER_LIMIT",
            Limit::MessageBytes => "MESSAGE_BYTES_LIMIT",
            Limit::TaskBytes => "TASK_BYTES_LIMIT",
            Limit::FileBytes => "FILE_BYTES_LIMIT",
            Limit::Sessions => "SESSIONS_LIMIT",
            Limit::CreateDesks => "CREATE_DESKS_LIMIT",
            Limit::StreamsPerCaller => "STREAMS_PER_CALLER_LIMIT",
            Limit::PushConfigsPerTask => "PUSH_CONFIGS_PER_TASK_LIMIT",
            Limit::StreamsPerMinute => "STREAMS_PER_MINUTE_LIMIT",
        };
        Self::new(-32000, e.to_string(), Some(reason))
            .with("setting", e.limit().setting())
            .with("limit", e.max())
    }

    /// The `error` member in the request's dialect.
    pub fn to_json(&self, dialect: Dialect) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(reason) = self.reason {
            let data = match dialect {
                Dialect::V1 => json!([error_info(reason, &self.metadata)]),
                Dialect::V03 => json!({"reason": reason, "metadata": self.metadata}),
            };
            e["data"] = data;
        }
        e
    }

    /// A store refusal as the A2A error that means it: A2A's own error where it has one
    /// (task not found, not cancelable, a limit), else the error of the refusal's kind
    /// ([`OwnerErrorKind::of`], the kind the owner API and MCP give it too).
    pub fn from_store(e: StoreError) -> Self {
        let kind = OwnerErrorKind::of(&e);
        match e {
            StoreError::NoSuchTask(id) => Self::task_not_found(id.as_str()),
            StoreError::Transition(t) => match &t {
                TransitionError::NotCancelable { id, .. } => {
                    Self::not_cancelable(t.to_string()).with("taskId", id.as_str())
                }
                TransitionError::Ended { id, .. }
                | TransitionError::StillOpen { id, .. }
                | TransitionError::NotQueued { id, .. }
                | TransitionError::NotWorking { id, .. }
                | TransitionError::NotStalled { id }
                | TransitionError::NothingToDeliver { id, .. } => {
                    Self::unsupported(t.to_string()).with("taskId", id.as_str())
                }
            },
            StoreError::Limit(l) => Self::limit(&l),
            StoreError::NoSuchDesk(d) => Self::unsupported(format!("no desk named {d}")),
            other => match kind {
                OwnerErrorKind::Invalid => Self::invalid_params(other.to_string()),
                OwnerErrorKind::NotFound | OwnerErrorKind::Conflict => {
                    Self::unsupported(other.to_string())
                }
                OwnerErrorKind::Unauthorized
                | OwnerErrorKind::Forbidden
                | OwnerErrorKind::TooLarge
                | OwnerErrorKind::Limit
                | OwnerErrorKind::Internal => {
                    tracing::error!(error = %other, "store error under A2A");
                    Self::internal(format!("internal error: {other}"))
                }
            },
        }
    }
}

/// The ErrorInfo domain of a reason: Taskkeeper's own reasons are its limits, all named
/// `*_LIMIT` (no A2A reason is); every other reason is the protocol's. Derived rather than
/// kept beside the reason, so the error stays small enough to travel in every `Result`.
pub fn domain_of(reason: &str) -> &'static str {
    if reason.ends_with("_LIMIT") {
        super::wire::ERROR_DOMAIN
    } else {
        "a2a-protocol.org"
    }
}

/// A `google.rpc.ErrorInfo` detail: the same in both bindings' errors.
pub fn error_info(reason: &str, metadata: &Map<String, Value>) -> Value {
    json!({
        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
        "reason": reason,
        "domain": domain_of(reason),
        "metadata": metadata,
    })
}

pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn failure(id: &Value, error: &RpcError, dialect: Dialect) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json(dialect)})
}

/// Read the envelope. On error, also return the id when one could be read.
#[allow(clippy::result_large_err)] // built once per request; boxing buys nothing
pub fn parse(body: &[u8]) -> Result<Request, (Value, RpcError)> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| (Value::Null, RpcError::parse(e)))?;
    let Value::Object(mut o) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "the request must be a JSON object"
        };
        return Err((Value::Null, RpcError::invalid_request(what)));
    };
    // Without an id the rest is still read, so the answer names what is wrong with it.
    let (id, notification) = match o.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => (id, false),
        Some(Value::Null) | None => (Value::Null, true),
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` must be a string or a number"),
            ));
        }
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("`jsonrpc` must be \"2.0\"")));
    }
    let method = match o.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => {
            return Err((
                id,
                RpcError::invalid_request("`method` must be a non-empty string"),
            ));
        }
    };
    let params = match o.remove("params") {
        Some(p @ Value::Object(_)) => p,
        None => Value::Object(Map::new()),
        Some(_) => return Err((id, RpcError::invalid_params("`params` must be an object"))),
    };
    Ok(Request {
        id,
        notification,
        method,
        params,
    })
}

/// The ErrorInfo reason of JSON-RPC's own errors, which carry none on JSON-RPC: the
/// HTTP+JSON and gRPC bindings name them so (the reasons the reference SDK gives them).
pub(super) fn standard_reason(code: i64) -> &'static str {
    match code {
        -32700 | -32600 => "INVALID_REQUEST",
        -32601 => "METHOD_NOT_FOUND",
        -32602 => "INVALID_PARAMS",
        _ => "INTERNAL_ERROR",
    }
}
