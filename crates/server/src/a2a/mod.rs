//! The A2A server: JSON-RPC 2.0 over HTTP with SSE, v1.0 and v0.3 on one endpoint per desk
//! (`POST /a2a/{desk}`), a machine endpoint (`POST /a2a`) for reading and ending the
//! caller's tasks on any desk, v1.0's HTTP+JSON binding under each desk's URL, v1.0's gRPC
//! service (the desk named by the request's tenant), and the Agent Cards.
//!
//! Each binding is an envelope (`rpc.rs`, `rest.rs`, `grpc/`) around one [`dispatch`]: a method is
//! written once, takes its params as v1.0 JSON and returns its result as JSON or a stream,
//! and never knows which binding carried it. This module only translates: requests become core [`Event`]s and store calls through
//! [`Tasks`]; the task rules stay in the core. An asker sees only the tasks it created;
//! another asker's task answers as not found.

// An `RpcError` carries its ErrorInfo (reason, domain, metadata) and is only ever built on a
// request's error path, where boxing it would buy nothing.
#![allow(clippy::result_large_err)]

mod card;
mod card_cache;
mod fetch;
pub(crate) mod grpc;
mod methods;
mod proto_names;
pub mod push;
pub mod pusher;
mod rest;
mod rpc;
mod send;
mod slots;
mod stream;
pub mod wire;

use methods::{ack_task, cancel_task, extended_card, get_task, list_tasks, subscribe};
use send::send;

use crate::http::routes::{Access, Room};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde::de::DeserializeOwned;
use serde_json::Value;
use taskkeeper_core::{DeskName, Task, TaskId, asker};

use crate::http::auth::Caller;
use crate::http::network::Outside;
use crate::tasks::Tasks;
use card::{CardOptions, Detail};
use rpc::RpcError;
use wire::{Dialect, Shape};

pub use card::extension;

#[derive(Clone, Debug)]
pub(crate) struct A2a {
    pub tasks: Tasks,
    /// The daemon is stopping: open streams end so the graceful shutdown can finish.
    pub stop: tokio::sync::watch::Receiver<bool>,
    pub port: u16,
    /// Every port this daemon answers on, where no webhook may point.
    pub ports: push::DaemonPorts,
    pub card: CardOptionsConfig,
    /// Each caller's open streams and blocking waits, capped by `a2a.streams_per_caller`.
    pub slots: slots::Slots,
    /// Wakes the push sender when a config is set (its first push is queued).
    pub push: pusher::Waker,
    /// Set for a request that came in on the network listener: the public URL the cards and
    /// file links name there, and the asker's count of streams opened per minute.
    pub outside: Option<Outside>,
    /// Signs every card served (`crate::card_key`); its public key is at `/.well-known/jwks.json`.
    pub card_key: crate::card_key::CardKey,
    /// Since when each card has read as it does now: its `Last-Modified`.
    pub card_clock: card_cache::CardClock,
}

/// Card options as configured for the daemon.
#[derive(Clone, Debug)]
pub struct CardOptionsConfig {
    /// v0.3's top-level card fields (a2a.md §10), on every card but the conformance desk's.
    pub v03_fields: bool,
    /// `serve --conformance`: the conformance desk. Its card is drawn for the v1.0 kit
    /// (strict v1.0 fields) and, with no scheme, for callers without a token; the machine card
    /// points at it with the v0.3 fields, where the v0.3 kit looks.
    pub conformance_desk: Option<String>,
}

/// A2A and the Agent Cards, each room behind its own access: the cards and the key they are
/// signed with are public; the
/// bindings (JSON-RPC, HTTP+JSON, gRPC) are for askers and the owner; in conformance mode the
/// conformance desk's endpoints (and gRPC, confined to that desk for them) also let callers
/// without a token in (as the anonymous asker).
/// Every endpoint also answers with a trailing slash, which clients add when they join paths
/// onto a base URL.
pub(crate) fn rooms(a2a: A2a) -> Vec<Room> {
    let cards = Room::new(Access::Open)
        .on_network()
        .route("GET", "/.well-known/agent-card.json", get(machine_card))
        .route("GET", "/.well-known/agent-card.json/", get(machine_card))
        // Where an SDK given the machine endpoint `/a2a` looks for its card (it joins the
        // well-known path onto the URL it is given).
        .route("GET", "/a2a/.well-known/agent-card.json", get(machine_card))
        .route(
            "GET",
            "/a2a/.well-known/agent-card.json/",
            get(machine_card),
        )
        .route(
            "GET",
            "/a2a/{desk}/.well-known/agent-card.json",
            get(desk_card),
        )
        .route(
            "GET",
            "/a2a/{desk}/.well-known/agent-card.json/",
            get(desk_card),
        )
        .route("GET", crate::card_key::JWKS_PATH, get(jwks))
        .with_state(a2a.clone());
    let fetch = Room::new(Access::Askers)
        .on_network()
        .route("GET", fetch::ROUTE, get(fetch::file))
        .with_state(a2a.clone());
    let mut rooms = vec![cards, fetch];
    rooms.extend(rpc::rooms(&a2a));
    rooms.extend(rest::rooms(&a2a));
    rooms.extend(grpc::rooms(&a2a));
    rooms
}

// ---- cards ----------------------------------------------------------------------------

/// The JWK Set that verifies the cards: the key signing now, alone. Not cached: after a
/// rotation the new key must be found at once.
async fn jwks(State(a2a): State<A2a>) -> Response {
    let mut response = (
        [(header::CONTENT_TYPE, "application/jwk-set+json")],
        a2a.card_key.jwks().to_string(),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn not_found_json(message: String) -> Response {
    crate::http::error_response(
        StatusCode::NOT_FOUND,
        crate::OwnerError {
            kind: crate::OwnerErrorKind::NotFound,
            message,
        },
    )
}

impl A2a {
    /// This A2A for a request that carries `outside` (the network listener's), if any.
    fn reached(mut self, outside: Option<axum::Extension<Outside>>) -> Self {
        self.outside = outside.map(|o| o.0);
        self
    }

    /// Where the cards' interfaces are reached from where the request came in.
    fn at(&self) -> card::At {
        match &self.outside {
            Some(outside) => card::At {
                base: outside.public_url.to_string(),
                certificate_sha256: outside.fingerprint(),
                grpc: outside.grpc_target(),
            },
            None => card::At::loopback(self.port),
        }
    }

    /// `card` signed, its signature's `jku` naming the key set where the request came in.
    fn signed(&self, card: Value) -> Value {
        self.card_key.sign(card, &self.at().base)
    }

    /// A reply as it leaves: on the network listener, links to this daemon's loopback
    /// address (file artifacts' URLs, made when the file was attached) name the public URL.
    fn outward(&self, value: &mut Value) {
        let Some(outside) = &self.outside else {
            return;
        };
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    match v {
                        Value::String(url) if key == "url" || key == "uri" => {
                            if let Some(public) = outside.public(url, self.port) {
                                *url = public;
                            }
                        }
                        _ => self.outward(v),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.outward(v)),
            _ => {}
        }
    }

    fn is_conformance_desk(&self, desk: &str) -> bool {
        self.card.conformance_desk.as_deref() == Some(desk)
    }

    /// How `desk`'s card (`None`: the machine's) is drawn. The conformance desk needs no
    /// token, so its card names no scheme, and the v1.0 kit that reads it rejects v0.3's
    /// fields; a v0.3 request always gets them.
    fn card_options(&self, desk: Option<&str>, detail: Detail, dialect: Dialect) -> CardOptions {
        let conformance = desk.is_some_and(|d| self.is_conformance_desk(d));
        CardOptions {
            v03_fields: dialect == Dialect::V03 || (self.card.v03_fields && !conformance),
            detail,
            bearer: !conformance,
        }
    }
}

async fn desk_card(
    State(a2a): State<A2a>,
    Path(desk): Path<String>,
    outside: Option<axum::Extension<Outside>>,
    headers: HeaderMap,
) -> Response {
    let a2a = a2a.reached(outside);
    let result = a2a
        .tasks
        .desks()
        .with_settings(&desk)
        .await
        .and_then(|(found, settings)| {
            Ok((
                found.ok_or(taskkeeper_core::StoreError::NoSuchDesk(desk))?,
                settings,
            ))
        });
    match result {
        Ok((desk, settings)) => {
            let opts = a2a.card_options(Some(desk.name.as_str()), Detail::Public, Dialect::V1);
            let card = card::desk_card(&desk, &a2a.at(), &settings, opts);
            let path = format!("{}/a2a/{}", a2a.at().base, desk.name);
            card_cache::card_response(&a2a.card_clock, &path, &headers, &a2a.signed(card))
        }
        Err(taskkeeper_core::StoreError::NoSuchDesk(d)) => not_found_json(format!(
            "no desk named {d}; the machine card at /.well-known/agent-card.json lists the desks"
        )),
        Err(e) => crate::OwnerError::from(e).into_response(),
    }
}

async fn machine_card(
    State(a2a): State<A2a>,
    outside: Option<axum::Extension<Outside>>,
    headers: HeaderMap,
) -> Response {
    let a2a = a2a.reached(outside);
    match a2a.tasks.desks().all_with_settings().await {
        Ok((desks, settings)) => {
            let conformance_desk = a2a
                .card
                .conformance_desk
                .as_deref()
                .and_then(|d| desks.iter().find(|x| x.name.as_str() == d));
            let card = match conformance_desk {
                // The v0.3 kit reads the host root's card and needs v0.3's fields there.
                Some(desk) => {
                    let opts =
                        a2a.card_options(Some(desk.name.as_str()), Detail::Public, Dialect::V03);
                    card::desk_card(desk, &a2a.at(), &settings, opts)
                }
                None => {
                    let opts = a2a.card_options(None, Detail::Public, Dialect::V1);
                    card::machine_card(&desks, &a2a.at(), &settings, opts)
                }
            };
            let path = a2a.at().base;
            card_cache::card_response(&a2a.card_clock, &path, &headers, &a2a.signed(card))
        }
        Err(e) => crate::OwnerError::from(e).into_response(),
    }
}

// ---- what both bindings share -------------------------------------------------------------

/// Which dialect a request speaks, from `A2A-Version` (the header, else the query parameter
/// of that name): absent or empty is v0.3 (A2A §3.6); `Err` holds a version we do not speak.
fn dialect_of(headers: &HeaderMap, query: Option<&str>) -> Result<Dialect, String> {
    let requested = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .or(query)
        .unwrap_or_default();
    let requested = requested.trim();
    let major_minor: Vec<&str> = requested.split('.').take(2).collect();
    match major_minor.as_slice() {
        [""] => Ok(Dialect::V03),
        ["0", "3"] => Ok(Dialect::V03),
        ["1", "0"] => Ok(Dialect::V1),
        _ => Err(requested.to_owned()),
    }
}

/// The request's `Content-Type`, parameters aside, lower-cased; `None` when absent.
fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
}

/// Whether a body of this media type is JSON as A2A sends it: `application/json` (JSON-RPC)
/// or `application/a2a+json` (the A2A media type, v1.0.1).
fn is_json_type(media_type: &str) -> bool {
    media_type == "application/json" || media_type == A2A_JSON
}

/// A2A's own media type (v1.0.1 prefers it for HTTP+JSON).
const A2A_JSON: &str = "application/a2a+json";

async fn check_desk(a2a: &A2a, name: String) -> Result<DeskName, RpcError> {
    let parsed: DeskName = name
        .parse()
        .map_err(|e: taskkeeper_core::desk::InvalidDeskName| {
            RpcError::unsupported(e.to_string())
        })?;
    match a2a.tasks.desk(parsed.as_str()).await {
        Ok(Some(_)) => Ok(parsed),
        Ok(None) => Err(RpcError::unsupported(format!(
            "no desk named {parsed}; the machine card at /.well-known/agent-card.json lists the desks"
        ))),
        Err(e) => Err(RpcError::from_store(e)),
    }
}

/// Echo our extension's URI when the client activated it (both header spellings).
fn echo_extension(headers: &HeaderMap, response: &mut Response) {
    for name in ["a2a-extensions", "x-a2a-extensions"] {
        let activated = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|uri| uri.trim() == wire::EXTENSION_URI);
        if activated {
            response.headers_mut().insert(
                axum::http::HeaderName::from_static(if name == "a2a-extensions" {
                    "a2a-extensions"
                } else {
                    "x-a2a-extensions"
                }),
                HeaderValue::from_static(wire::EXTENSION_URI),
            );
        }
    }
}

/// One request's context.
pub(crate) struct Ctx {
    pub a2a: A2a,
    pub desk: Option<DeskName>,
    pub caller: Caller,
    pub dialect: Dialect,
    pub envelope: Envelope,
}

/// How the binding a request came in on carries each result: JSON-RPC in a response object
/// with the request's id, HTTP+JSON bare, gRPC as its message (made from the bare result).
/// The methods never look at it; only the envelopes and a stream's SSE framing do.
#[derive(Debug, Clone)]
pub(crate) enum Envelope {
    JsonRpc(Value),
    Rest,
    Grpc,
}

impl Envelope {
    pub fn wrap(&self, result: Value) -> Value {
        match self {
            Envelope::JsonRpc(id) => rpc::success(id, result),
            Envelope::Rest | Envelope::Grpc => result,
        }
    }
}

pub(crate) enum Reply {
    Json(Value),
    Stream(stream::Events),
}

async fn dispatch(ctx: &Ctx, method: &str, params: Value) -> Result<Reply, RpcError> {
    let mut reply = dispatch_method(ctx, method, params).await?;
    if let Reply::Json(value) = &mut reply {
        ctx.a2a.outward(value);
    }
    Ok(reply)
}

async fn dispatch_method(ctx: &Ctx, method: &str, params: Value) -> Result<Reply, RpcError> {
    use Dialect::{V1, V03};
    match (ctx.dialect, method) {
        (V1, "SendMessage") | (V03, "message/send") => send(ctx, params, false).await,
        (V1, "SendStreamingMessage") | (V03, "message/stream") => send(ctx, params, true).await,
        (V1, "GetTask") | (V03, "tasks/get") => get_task(ctx, params).await.map(Reply::Json),
        (V1, "ListTasks") => list_tasks(ctx, params).await.map(Reply::Json),
        (V1, "CancelTask") | (V03, "tasks/cancel") => {
            cancel_task(ctx, params).await.map(Reply::Json)
        }
        (V1, "SubscribeToTask") | (V03, "tasks/resubscribe") => subscribe(ctx, params).await,
        (_, "AckTask") => ack_task(ctx, params).await.map(Reply::Json),
        (V1, "CreateTaskPushNotificationConfig") | (V03, "tasks/pushNotificationConfig/set") => {
            push::create(ctx, params).await.map(Reply::Json)
        }
        (V1, "GetTaskPushNotificationConfig") | (V03, "tasks/pushNotificationConfig/get") => {
            push::get(ctx, params).await.map(Reply::Json)
        }
        (V1, "ListTaskPushNotificationConfigs") | (V03, "tasks/pushNotificationConfig/list") => {
            push::list(ctx, params).await.map(Reply::Json)
        }
        (V1, "DeleteTaskPushNotificationConfig") | (V03, "tasks/pushNotificationConfig/delete") => {
            push::delete(ctx, params).await.map(Reply::Json)
        }
        (V1, "GetExtendedAgentCard") | (V03, "agent/getAuthenticatedExtendedCard") => {
            extended_card(ctx).await.map(Reply::Json)
        }
        (V03, m) if is_v1_name(m) => Err(RpcError::version("0.3").with("method", m)),
        (_, m) => Err(RpcError::method_not_found(m)),
    }
}

/// The answer to a request without an `id` (a JSON-RPC notification, which A2A does not
/// have, so nothing is run): the error it would get — its method unknown, its params wrong —
/// or, when it is sound, that it needs an id. The methods as [`dispatch_method`] names them.
fn unanswerable(dialect: Dialect, method: &str, params: Value) -> RpcError {
    use Dialect::{V1, V03};
    let checked =
        match (dialect, method) {
            (V1, "SendMessage" | "SendStreamingMessage")
            | (V03, "message/send" | "message/stream") => send::check(dialect, params),
            (V1, "GetTask" | "CancelTask" | "SubscribeToTask")
            | (V03, "tasks/get" | "tasks/cancel" | "tasks/resubscribe")
            | (_, "AckTask") => methods::check_id(params),
            (V1, "ListTasks") => methods::check_list(params),
            (V1, "CreateTaskPushNotificationConfig")
            | (V03, "tasks/pushNotificationConfig/set") => push::check(true, params),
            (
                V1,
                "GetTaskPushNotificationConfig"
                | "ListTaskPushNotificationConfigs"
                | "DeleteTaskPushNotificationConfig",
            )
            | (
                V03,
                "tasks/pushNotificationConfig/get"
                | "tasks/pushNotificationConfig/list"
                | "tasks/pushNotificationConfig/delete",
            ) => push::check(false, params),
            (V1, "GetExtendedAgentCard") | (V03, "agent/getAuthenticatedExtendedCard") => Ok(()),
            (V03, m) if is_v1_name(m) => Err(RpcError::version("0.3").with("method", m)),
            (_, m) => Err(RpcError::method_not_found(m)),
        };
    checked.err().unwrap_or_else(|| {
        RpcError::invalid_request(
            "`id` is required (a string or a number): A2A has no notifications, so this request was not run",
        )
    })
}

/// Whether `method` answers with a stream.
fn is_streaming(method: &str) -> bool {
    matches!(
        method,
        "SendStreamingMessage" | "SubscribeToTask" | "message/stream" | "tasks/resubscribe"
    )
}

fn is_v1_name(m: &str) -> bool {
    matches!(
        m,
        "SendMessage"
            | "SendStreamingMessage"
            | "GetTask"
            | "ListTasks"
            | "CancelTask"
            | "SubscribeToTask"
            | "GetExtendedAgentCard"
            | "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig"
    )
}

/// Decode params, naming the field that is wrong.
fn decode<T: DeserializeOwned>(params: Value) -> Result<T, RpcError> {
    serde_path_to_error::deserialize(params).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            RpcError::invalid_params(inner.to_string())
        } else {
            RpcError::invalid_params(format!("{path}: {inner}"))
        }
    })
}

// ---- methods ------------------------------------------------------------------------------

/// A task of this endpoint's desk (any desk on `/a2a`) that the caller may read
/// (`asker::may_read`: the owner any, an asker its own), or not found: a task it may not read
/// is not confirmed to exist (A2A §3.3.2).
async fn readable_task(ctx: &Ctx, id: &str) -> Result<Task, RpcError> {
    task_where(ctx, id, |t| asker::may_read(ctx.caller.reader(), t)).await
}

/// The caller's own task, the one it acts on as its asker (a follow-up, cancel, acknowledge,
/// webhooks: `asker::asked`; the owner here is the asker `owner`), or not found.
async fn own_task(ctx: &Ctx, id: &str) -> Result<Task, RpcError> {
    task_where(ctx, id, |t| asker::asked(ctx.caller.asker_name(), t)).await
}

async fn task_where(ctx: &Ctx, id: &str, may: impl Fn(&Task) -> bool) -> Result<Task, RpcError> {
    let task = ctx
        .a2a
        .tasks
        .get(&TaskId::from(id))
        .await
        .map_err(RpcError::from_store)?;
    match task {
        Some(t) if may(&t) && ctx.desk.as_ref().is_none_or(|d| *d == t.desk) => Ok(t),
        _ => Err(RpcError::task_not_found(id)),
    }
}

/// How much of a task a reply shows: the history the asker asked for, else the most recent
/// `limits.reply_history` messages, so a long task is not sent whole with every answer.
async fn reply_shape(ctx: &Ctx, history_length: Option<u32>, include_artifacts: bool) -> Shape {
    let limits = match ctx.a2a.tasks.settings().await {
        Ok(s) => s.limits,
        Err(_) => taskkeeper_core::settings::Limits::default(),
    };
    Shape {
        history_length: Some(taskkeeper_core::limits::reply_history(
            history_length,
            &limits,
        )),
        include_artifacts,
    }
}

/// The settings as they are now.
pub(crate) async fn settings_of(
    ctx: &Ctx,
) -> Result<taskkeeper_core::settings::Settings, RpcError> {
    ctx.a2a.tasks.settings().await.map_err(RpcError::from_store)
}
