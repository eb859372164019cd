//! The HTTP+JSON binding (A2A v1.0 §11, "REST"): the same methods as JSON-RPC, addressed by
//! path and HTTP method under a desk's interface URL instead of by name in a JSON-RPC body.
//! This module is only an envelope: it turns the path, the query and the body into the
//! method's name and params, runs the one [`super::dispatch`] JSON-RPC runs too, and writes
//! the result bare (a stream's items as bare StreamResponses) or the error as a
//! `google.rpc.Status`-shaped body with the spec's HTTP status and the same ErrorInfo.
//!
//! | method | path under `/a2a/{desk}` |
//! |---|---|
//! | SendMessage | `POST /message:send` |
//! | SendStreamingMessage | `POST /message:stream` |
//! | GetTask | `GET /tasks/{id}` (`?historyLength=`) |
//! | ListTasks | `GET /tasks` (the request's fields as query parameters) |
//! | CancelTask | `POST /tasks/{id}:cancel` |
//! | SubscribeToTask | `GET` or `POST /tasks/{id}:subscribe` |
//! | Create / List push configs | `POST` / `GET /tasks/{id}/pushNotificationConfigs` |
//! | Get / Delete a push config | `GET` / `DELETE /tasks/{id}/pushNotificationConfigs/{configId}` |
//! | GetExtendedAgentCard | `GET /extendedAgentCard` |
//!
//! The router matches whole segments only, so `{id}:cancel` arrives as one segment and the
//! verb after its last `:` is split off here. These paths are v1.0's: a request without
//! `A2A-Version: 1.0` is refused as VersionNotSupportedError (v0.3's REST paths had a `/v1`
//! prefix and are not served; v0.3 clients use JSON-RPC). Bodies are JSON, sent as
//! `application/json` or `application/a2a+json`; anything else is 415. Answers are
//! `application/json`, as §11.1 says.

use std::collections::HashMap;
use std::convert::Infallible;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Map, Value, json};

use super::rpc::{RpcError, error_info};
use super::wire::Dialect;
use super::{A2A_JSON, A2a, Ctx, Envelope, Reply};
use crate::http::auth::Caller;
use crate::http::routes::{Access, Room};

/// Every HTTP+JSON route under `$prefix`, each with and without a trailing slash.
macro_rules! routes {
    ($room:expr, $prefix:literal) => {
        $room
            .route("POST", concat!($prefix, "/message:send"), post(send))
            .route("POST", concat!($prefix, "/message:send/"), post(send))
            .route(
                "POST",
                concat!($prefix, "/message:stream"),
                post(send_streaming),
            )
            .route(
                "POST",
                concat!($prefix, "/message:stream/"),
                post(send_streaming),
            )
            .route("GET", concat!($prefix, "/tasks"), get(list_tasks))
            .route("GET", concat!($prefix, "/tasks/"), get(list_tasks))
            .route(
                "GET POST",
                concat!($prefix, "/tasks/{id}"),
                get(task_get).post(task_post),
            )
            .route(
                "GET POST",
                concat!($prefix, "/tasks/{id}/"),
                get(task_get).post(task_post),
            )
            .route(
                "GET POST",
                concat!($prefix, "/tasks/{id}/pushNotificationConfigs"),
                get(push_list).post(push_create),
            )
            .route(
                "GET POST",
                concat!($prefix, "/tasks/{id}/pushNotificationConfigs/"),
                get(push_list).post(push_create),
            )
            .route(
                "GET DELETE",
                concat!($prefix, "/tasks/{id}/pushNotificationConfigs/{config}"),
                get(push_get).delete(push_delete),
            )
            .route(
                "GET DELETE",
                concat!($prefix, "/tasks/{id}/pushNotificationConfigs/{config}/"),
                get(push_get).delete(push_delete),
            )
            .route(
                "GET",
                concat!($prefix, "/extendedAgentCard"),
                get(extended_card),
            )
            .route(
                "GET",
                concat!($prefix, "/extendedAgentCard/"),
                get(extended_card),
            )
    };
}

/// The binding's rooms: every desk's (askers and the owner) and, in conformance mode, the
/// conformance desk's, open to callers without a token as its JSON-RPC endpoint is.
pub(super) fn rooms(a2a: &A2a) -> Vec<Room> {
    let mut rooms = vec![
        routes!(Room::new(Access::Askers).on_network(), "/a2a/{desk}").with_state(a2a.clone()),
    ];
    if a2a.card.conformance_desk.is_some() {
        // The literal is `conformance::PATH`, which a macro cannot join onto.
        rooms.push(routes!(Room::new(Access::Conformance), "/a2a/tck").with_state(a2a.clone()));
    }
    rooms
}

/// Where a method reads its request: the body (POST) or the query string (GET, DELETE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Body,
    Query,
}

/// One HTTP+JSON request, as the handlers get it.
struct Call {
    a2a: A2a,
    path: HashMap<String, String>,
    caller: Option<Caller>,
    uri: axum::http::Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
}

impl FromRequest<A2a> for Call {
    type Rejection = Infallible;

    async fn from_request(req: Request, a2a: &A2a) -> Result<Self, Infallible> {
        let (mut parts, body) = req.into_parts();
        let path = Path::<HashMap<String, String>>::from_request_parts(&mut parts, a2a)
            .await
            .map(|p| p.0)
            .unwrap_or_default();
        let caller = parts.extensions.get::<Caller>().cloned();
        let outside = parts
            .extensions
            .get::<crate::http::network::Outside>()
            .cloned()
            .map(axum::Extension);
        let uri = parts.uri.clone();
        let headers = parts.headers.clone();
        let body = Bytes::from_request(Request::from_parts(parts, body), a2a).await;
        Ok(Call {
            a2a: a2a.clone().reached(outside),
            path,
            caller,
            uri,
            headers,
            body,
        })
    }
}

impl Call {
    fn segment(&self, name: &str) -> String {
        self.path.get(name).cloned().unwrap_or_default()
    }

    /// The task id of `/tasks/{id}[:verb]`, and the verb.
    fn task_and_verb(&self) -> (String, Option<String>) {
        let segment = self.segment("id");
        match segment.rsplit_once(':') {
            Some((id, verb)) => (id.to_owned(), Some(verb.to_owned())),
            None => (segment, None),
        }
    }

    /// Run `method` with params read `from` the request, plus `fields` from the path.
    async fn run(self, method: &str, from: Source, fields: &[(&str, String)]) -> Response {
        let mut response = self.answer(method, from, fields).await;
        super::echo_extension(&self.headers, &mut response);
        response
    }

    async fn answer(&self, method: &str, from: Source, fields: &[(&str, String)]) -> Response {
        let query = match Query::<Vec<(String, String)>>::try_from_uri(&self.uri) {
            Ok(Query(q)) => q,
            Err(e) => {
                return failure(&RpcError::invalid_params(format!(
                    "the query string could not be read: {}",
                    e.body_text()
                )));
            }
        };
        let version = query
            .iter()
            .find(|(k, _)| k == "A2A-Version")
            .map(|(_, v)| v.as_str());
        let mut params = match from {
            Source::Body => match self.body_params() {
                Ok(p) => p,
                Err(response) => return response,
            },
            Source::Query => query_params(&query),
        };
        match super::dialect_of(&self.headers, version) {
            Ok(Dialect::V1) => {}
            Ok(Dialect::V03) => {
                let mut e = RpcError::version("");
                e.message = "this is A2A v1.0's HTTP+JSON binding: send `A2A-Version: 1.0` \
                             (v0.3 clients use JSON-RPC at the interface URL)"
                    .to_owned();
                return failure(&e);
            }
            Err(requested) => return failure(&RpcError::version(&requested)),
        }
        params = match super::proto_names::json_names(params) {
            Ok(p) => p,
            Err(e) => return failure(&e.into()),
        };
        if let Value::Object(o) = &mut params {
            for (name, value) in fields {
                match o.get(*name) {
                    Some(Value::String(given)) if given != value => {
                        return failure(&RpcError::invalid_params(format!(
                            "{name}: the path names {value}, the body {given}; send one"
                        )));
                    }
                    _ => {
                        o.insert((*name).to_owned(), Value::String(value.clone()));
                    }
                }
            }
        }
        let Some(caller) = self.caller.clone() else {
            // The room's layer puts the caller in before any handler runs.
            return failure(&RpcError::internal("no caller on an A2A request"));
        };
        let desk = self
            .path
            .get("desk")
            .cloned()
            .unwrap_or_else(|| crate::conformance::DESK.to_owned());
        let desk = match super::check_desk(&self.a2a, desk).await {
            Ok(d) => d,
            Err(e) => return failure_with(StatusCode::NOT_FOUND, "NOT_FOUND", &e),
        };
        let ctx = Ctx {
            a2a: self.a2a.clone(),
            desk: Some(desk),
            caller,
            dialect: Dialect::V1,
            envelope: Envelope::Rest,
        };
        match super::dispatch(&ctx, method, params).await {
            Ok(Reply::Json(result)) => {
                let mut response = (StatusCode::OK, result.to_string()).into_response();
                // §11.1: HTTP+JSON answers are `application/json` (the A2A type is only taken).
                response.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                response
            }
            Ok(Reply::Stream(events)) => events.into_response(),
            Err(e) => failure(&e),
        }
    }

    /// The body as params: a JSON object, or `{}` when there is none.
    #[allow(clippy::result_large_err)] // a refusal, built once per request
    fn body_params(&self) -> Result<Value, Response> {
        let body = match &self.body {
            Ok(b) => b,
            Err(rejection) => {
                let e = RpcError::invalid_request(format!(
                    "the request body could not be read: {}",
                    rejection.body_text()
                ));
                let status = rejection.status();
                let grpc = if status == StatusCode::PAYLOAD_TOO_LARGE {
                    "RESOURCE_EXHAUSTED"
                } else {
                    "INVALID_ARGUMENT"
                };
                return Err(failure_with(status, grpc, &e));
            }
        };
        let media_type = super::content_type(&self.headers);
        let json = media_type.as_deref().is_some_and(super::is_json_type);
        if !json && (media_type.is_some() || !body.is_empty()) {
            let e = RpcError::content_type(format!(
                "send the body as Content-Type: {A2A_JSON} (or application/json), not {}",
                media_type.as_deref().unwrap_or("without a Content-Type")
            ))
            .with("contentType", media_type.unwrap_or_default());
            return Err(failure_with(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "INVALID_ARGUMENT",
                &e,
            ));
        }
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Object(Map::new()));
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(_) => Err(failure(&RpcError::invalid_params(
                "the body must be a JSON object (the method's request message)",
            ))),
            Err(e) => Err(failure(&RpcError::parse(e))),
        }
    }
}

/// Query parameters as params: repeated names keep the last value, and the fields A2A types
/// as numbers or booleans become those (a value that is neither stays a string, and the
/// method's decoding names the field).
fn query_params(query: &[(String, String)]) -> Value {
    const NUMBERS: [&str; 2] = ["historyLength", "pageSize"];
    const BOOLEANS: [&str; 1] = ["includeArtifacts"];
    let mut params = Map::new();
    for (key, value) in query {
        if key == "A2A-Version" {
            continue;
        }
        params.insert(key.clone(), Value::String(value.clone()));
    }
    // Typed after renaming, so `history_length=2` is a number too.
    let Ok(Value::Object(mut params)) = super::proto_names::json_names(Value::Object(params))
    else {
        // A name given twice (both spellings): leave it for the body's check to refuse.
        return Value::Object(
            query
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        );
    };
    for (key, value) in params.iter_mut() {
        let Value::String(text) = value else { continue };
        if NUMBERS.contains(&key.as_str())
            && let Ok(n) = text.parse::<i64>()
        {
            *value = json!(n);
        } else if BOOLEANS.contains(&key.as_str())
            && let Ok(b) = text.parse::<bool>()
        {
            *value = json!(b);
        }
    }
    Value::Object(params)
}

/// The HTTP status and the gRPC status name of an error (A2A §5.4's table; JSON-RPC's own
/// codes as the reference SDK maps them; Taskkeeper's limits as quotas).
fn status_of(e: &RpcError) -> (StatusCode, &'static str) {
    match e.code {
        -32001 | -32601 => (StatusCode::NOT_FOUND, "NOT_FOUND"),
        -32002 | -32003 | -32004 | -32007 | -32008 | -32009 => {
            (StatusCode::BAD_REQUEST, "FAILED_PRECONDITION")
        }
        -32005 | -32700 | -32600 | -32602 => (StatusCode::BAD_REQUEST, "INVALID_ARGUMENT"),
        -32000 if e.reason.is_some_and(|r| r.ends_with("_BYTES_LIMIT")) => {
            (StatusCode::PAYLOAD_TOO_LARGE, "RESOURCE_EXHAUSTED")
        }
        -32000 => (StatusCode::TOO_MANY_REQUESTS, "RESOURCE_EXHAUSTED"),
        _ => (StatusCode::INTERNAL_SERVER_ERROR, "INTERNAL"),
    }
}

fn failure(e: &RpcError) -> Response {
    let (status, grpc) = status_of(e);
    failure_with(status, grpc, e)
}

/// `{"error": {code, status, message, details: [ErrorInfo]}}` with `status` as the HTTP
/// status (`code` repeats it, as `google.rpc.Status` over HTTP does).
fn failure_with(status: StatusCode, grpc: &str, e: &RpcError) -> Response {
    let reason = e
        .reason
        .unwrap_or_else(|| super::rpc::standard_reason(e.code));
    let body = json!({"error": {
        "code": status.as_u16(),
        "status": grpc,
        "message": e.message,
        "details": [error_info(reason, &e.metadata)],
    }});
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// A `/tasks/{id}` path whose verb (after the last `:`) this method does not take.
fn unknown_verb(verb: Option<&str>, allowed: &str) -> Response {
    let mut e =
        RpcError::method_not_found(&verb.map_or("(no verb)".to_owned(), |v| format!(":{v}")));
    e.message = format!("{}; this path takes {allowed}", e.message);
    failure(&e)
}

// ---- the handlers: one per path and HTTP method ------------------------------------------

async fn send(call: Call) -> Response {
    call.run("SendMessage", Source::Body, &[]).await
}

async fn send_streaming(call: Call) -> Response {
    call.run("SendStreamingMessage", Source::Body, &[]).await
}

async fn list_tasks(call: Call) -> Response {
    call.run("ListTasks", Source::Query, &[]).await
}

/// `GET /tasks/{id}` and `GET /tasks/{id}:subscribe`.
async fn task_get(call: Call) -> Response {
    match call.task_and_verb() {
        (id, None) => call.run("GetTask", Source::Query, &[("id", id)]).await,
        (id, Some(v)) if v == "subscribe" => {
            call.run("SubscribeToTask", Source::Query, &[("id", id)])
                .await
        }
        (_, Some(v)) => unknown_verb(Some(&v), "GET /tasks/{id} and GET /tasks/{id}:subscribe"),
    }
}

/// `POST /tasks/{id}:cancel` and `POST /tasks/{id}:subscribe`.
async fn task_post(call: Call) -> Response {
    match call.task_and_verb() {
        (id, Some(v)) if v == "cancel" => call.run("CancelTask", Source::Body, &[("id", id)]).await,
        (id, Some(v)) if v == "subscribe" => {
            call.run("SubscribeToTask", Source::Body, &[("id", id)])
                .await
        }
        (_, verb) => unknown_verb(
            verb.as_deref(),
            "POST /tasks/{id}:cancel and POST /tasks/{id}:subscribe",
        ),
    }
}

async fn push_create(call: Call) -> Response {
    let task = call.segment("id");
    call.run(
        "CreateTaskPushNotificationConfig",
        Source::Body,
        &[("taskId", task)],
    )
    .await
}

async fn push_list(call: Call) -> Response {
    let task = call.segment("id");
    call.run(
        "ListTaskPushNotificationConfigs",
        Source::Query,
        &[("taskId", task)],
    )
    .await
}

async fn push_get(call: Call) -> Response {
    let fields = [
        ("taskId", call.segment("id")),
        ("id", call.segment("config")),
    ];
    call.run("GetTaskPushNotificationConfig", Source::Query, &fields)
        .await
}

async fn push_delete(call: Call) -> Response {
    let fields = [
        ("taskId", call.segment("id")),
        ("id", call.segment("config")),
    ];
    call.run("DeleteTaskPushNotificationConfig", Source::Query, &fields)
        .await
}

async fn extended_card(call: Call) -> Response {
    call.run("GetExtendedAgentCard", Source::Query, &[]).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_typed_under_their_json_names() {
        let q = |pairs: &[(&str, &str)]| {
            query_params(
                &pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<Vec<_>>(),
            )
        };
        assert_eq!(
            q(&[
                ("history_length", "2"),
                ("includeArtifacts", "true"),
                ("contextId", "c-1")
            ]),
            json!({"historyLength": 2, "includeArtifacts": true, "contextId": "c-1"})
        );
        // A value that is not a number is left for the method to refuse by name.
        assert_eq!(q(&[("pageSize", "many")]), json!({"pageSize": "many"}));
        assert_eq!(q(&[("A2A-Version", "1.0")]), json!({}));
    }

    #[test]
    fn each_error_has_the_spec_status() {
        let cases = [
            (RpcError::task_not_found("t"), 404),
            (RpcError::not_cancelable("x"), 400),
            (RpcError::unsupported("x"), 400),
            (RpcError::content_type("x"), 400),
            (RpcError::version("9"), 400),
            (RpcError::invalid_params("x"), 400),
            (RpcError::parse("x"), 400),
            (RpcError::method_not_found("x"), 404),
            (RpcError::internal("x"), 500),
        ];
        for (e, status) in cases {
            assert_eq!(status_of(&e).0.as_u16(), status, "{e:?}");
        }
    }
}
