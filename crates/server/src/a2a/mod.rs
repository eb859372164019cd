//! The A2A server: JSON-RPC 2.0 over HTTP with SSE, v1.0 and v0.3 on one endpoint per desk
//! (`POST /a2a/{desk}`), a machine endpoint (`POST /a2a`) for reading and ending the
//! caller's tasks on any desk, v1.0's HTTP+JSON binding under each desk's URL, and the
//! Agent Cards.
//!
//! Each binding is an envelope (`rpc.rs`, `rest.rs`) around one [`dispatch`]: a method is
//! written once, takes its params as v1.0 JSON and returns its result as JSON or a stream,
//! and never knows which binding carried it. This module only translates: requests become core [`Event`]s and store calls through
//! [`Tasks`]; the task rules stay in the core. An asker sees only the tasks it created;
//! another asker's task answers as not found.

// An `RpcError` carries its ErrorInfo (reason, domain, metadata) and is only ever built on a
// request's error path, where boxing it would buy nothing.
#![allow(clippy::result_large_err)]

mod card;
mod fetch;
mod proto_names;
pub mod push;
mod rest;
mod rpc;
mod slots;
mod stream;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use crate::http::routes::{Access, Room};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine as _;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use taskkeeper_core::store::PageQuery;
use taskkeeper_core::task::PartContent;
use taskkeeper_core::{
    DeskName, Event, Message, NewTask, Role, Task, TaskId, TaskState, Timestamp,
};

use crate::http::auth::Caller;
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
    pub card: CardOptionsConfig,
    /// Each caller's open streams and blocking waits, capped by `a2a.streams_per_caller`.
    pub slots: slots::Slots,
    /// Wakes the push sender when a config is set (its first push is queued).
    pub push: push::Waker,
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

/// A2A and the Agent Cards, each room behind its own access: the cards are public; both
/// bindings (JSON-RPC, HTTP+JSON) are for askers and the owner; in conformance mode the
/// conformance desk's endpoints also let callers without a token in (as the anonymous asker).
/// Every endpoint also answers with a trailing slash, which clients add when they join paths
/// onto a base URL.
pub(crate) fn rooms(a2a: A2a) -> Vec<Room> {
    let cards = Room::new(Access::Open)
        .route("GET", "/.well-known/agent-card.json", get(machine_card))
        .route("GET", "/.well-known/agent-card.json/", get(machine_card))
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
        .with_state(a2a.clone());
    let fetch = Room::new(Access::Askers)
        .route("GET", fetch::ROUTE, get(fetch::file))
        .with_state(a2a.clone());
    let mut rooms = vec![cards, fetch];
    rooms.extend(rpc::rooms(&a2a));
    rooms.extend(rest::rooms(&a2a));
    rooms
}

// ---- cards ----------------------------------------------------------------------------

fn card_response(headers: &HeaderMap, card: &Value) -> Response {
    let body = card.to_string();
    let etag = format!("\"{}\"", &crate::http::auth::token_hash(&body)[..32]);
    let matches = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        == Some(etag.as_str());
    let mut response = if matches {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=60"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
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
    headers: HeaderMap,
) -> Response {
    let result = a2a
        .tasks
        .blocking(move |s, _| {
            Ok((
                s.desk(&desk)?
                    .ok_or(taskkeeper_core::StoreError::NoSuchDesk(desk))?,
                s.settings()?,
            ))
        })
        .await;
    match result {
        Ok((desk, settings)) => {
            let opts = a2a.card_options(Some(desk.name.as_str()), Detail::Public, Dialect::V1);
            card_response(&headers, &card::desk_card(&desk, a2a.port, &settings, opts))
        }
        Err(taskkeeper_core::StoreError::NoSuchDesk(d)) => not_found_json(format!(
            "no desk named {d}; the machine card at /.well-known/agent-card.json lists the desks"
        )),
        Err(e) => crate::OwnerError::from(e).into_response(),
    }
}

async fn machine_card(State(a2a): State<A2a>, headers: HeaderMap) -> Response {
    match a2a
        .tasks
        .blocking(|s, _| Ok((s.desks()?, s.settings()?)))
        .await
    {
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
                    card::desk_card(desk, a2a.port, &settings, opts)
                }
                None => {
                    let opts = a2a.card_options(None, Detail::Public, Dialect::V1);
                    card::machine_card(&desks, a2a.port, &settings, opts)
                }
            };
            card_response(&headers, &card)
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
    let lookup = parsed.clone();
    match a2a
        .tasks
        .blocking(move |s, _| s.desk(lookup.as_str()))
        .await
    {
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
/// with the request's id, HTTP+JSON bare. The methods never look at it; only the envelopes
/// and the stream relay (which writes results after the handler has returned) do.
#[derive(Debug, Clone)]
pub(crate) enum Envelope {
    JsonRpc(Value),
    Rest,
}

impl Envelope {
    pub fn wrap(&self, result: Value) -> Value {
        match self {
            Envelope::JsonRpc(id) => rpc::success(id, result),
            Envelope::Rest => result,
        }
    }
}

pub(crate) enum Reply {
    Json(Value),
    Stream(Response),
}

async fn dispatch(ctx: &Ctx, method: &str, params: Value) -> Result<Reply, RpcError> {
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

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendParams {
    message: Message,
    #[serde(default)]
    configuration: Option<SendConfiguration>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SendConfiguration {
    #[serde(default)]
    return_immediately: Option<bool>,
    /// v0.3's name, the other way round.
    #[serde(default)]
    blocking: Option<bool>,
    #[serde(default)]
    history_length: Option<u32>,
    #[serde(default)]
    task_push_notification_config: Option<Value>,
    #[serde(default)]
    push_notification_config: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IdParams {
    id: String,
    #[serde(default)]
    history_length: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListParams {
    #[serde(default)]
    context_id: Option<String>,
    #[serde(default)]
    status: Option<TaskState>,
    #[serde(default)]
    page_size: Option<i64>,
    #[serde(default)]
    page_token: Option<String>,
    #[serde(default)]
    history_length: Option<u32>,
    #[serde(default)]
    status_timestamp_after: Option<String>,
    #[serde(default)]
    include_artifacts: Option<bool>,
}

/// v0.3 params carry v0.3 messages: translate before decoding.
fn message_params(ctx: &Ctx, mut params: Value) -> Result<SendParams, RpcError> {
    if ctx.dialect == Dialect::V03
        && let Some(m) = params.get_mut("message")
    {
        *m = wire::v03::message_to_v1(m.take()).map_err(RpcError::invalid_params)?;
    }
    decode(params)
}

/// Whether a part's media type is one the desk takes (`card::INPUT_MODES`), compared as
/// media types are: case-insensitively, parameters (`; charset=…`) aside.
fn takes_media_type(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or("").trim();
    card::INPUT_MODES
        .iter()
        .any(|m| m.eq_ignore_ascii_case(essence))
}

fn validate_message(
    m: &Message,
    limits: &taskkeeper_core::settings::Limits,
) -> Result<(), RpcError> {
    if m.message_id.trim().is_empty() {
        return Err(RpcError::invalid_params(
            "message.messageId must not be empty",
        ));
    }
    if m.role != Role::User {
        return Err(RpcError::invalid_params(
            "message.role must be ROLE_USER: a request comes from the asker's side",
        ));
    }
    if m.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts must have at least one part",
        ));
    }
    for (i, p) in m.parts.iter().enumerate() {
        if let Some(media_type) = &p.media_type
            && !takes_media_type(media_type)
        {
            return Err(RpcError::content_type(format!(
                "message.parts[{i}].mediaType {media_type:?} is not a media type this desk \
                 takes; it takes {} (the card's defaultInputModes)",
                card::INPUT_MODES.join(", ")
            ))
            .with("mediaType", media_type.as_str())
            .with("supported", card::INPUT_MODES.join(",")));
        }
        match &p.content {
            PartContent::Raw(raw) => {
                // The size first, from the text, so an oversized part is not decoded at all.
                taskkeeper_core::limits::file(
                    &format!("message.parts[{i}]'s file"),
                    crate::files::decoded_len(raw),
                    "send a smaller file, or a URL to it (`url`; v0.3 `file.uri`)",
                    limits,
                )
                .map_err(|e| RpcError::limit(&e))?;
                if crate::files::decode_raw(raw).is_none() {
                    return Err(RpcError::invalid_params(format!(
                        "message.parts[{i}].raw is not base64; send a file's bytes base64-encoded \
                         (v0.3: file.bytes)"
                    )));
                }
            }
            PartContent::Url(url) => {
                if url.trim().is_empty() || url.chars().any(|c| c.is_whitespace() || c.is_control())
                {
                    return Err(RpcError::invalid_params(format!(
                        "message.parts[{i}].url must be a URL without spaces or control \
                         characters (v0.3: file.uri)"
                    )));
                }
            }
            PartContent::Text(_) | PartContent::Data(_) => {}
        }
    }
    Ok(())
}

/// The caller's task, or not found (another asker's task is not found too).
async fn own_task(ctx: &Ctx, id: &str) -> Result<Task, RpcError> {
    let task = ctx
        .a2a
        .tasks
        .get(&TaskId::from(id))
        .await
        .map_err(RpcError::from_store)?;
    match task {
        Some(t)
            if t.asker == ctx.caller.asker_name()
                && ctx.desk.as_ref().is_none_or(|d| *d == t.desk) =>
        {
            Ok(t)
        }
        _ => Err(RpcError::task_not_found(id)),
    }
}

/// How much of a task a reply shows: the history the asker asked for, else the most recent
/// `limits.reply_history` messages, so a long task is not sent whole with every answer.
async fn reply_shape(ctx: &Ctx, history_length: Option<u32>, include_artifacts: bool) -> Shape {
    let limits = match ctx.a2a.tasks.blocking(|s, _| s.settings()).await {
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

fn settled(t: &Task) -> bool {
    t.state().is_terminal() || t.state().is_interrupted()
}

async fn send(ctx: &Ctx, params: Value, streaming: bool) -> Result<Reply, RpcError> {
    let params = message_params(ctx, params)?;
    let mut config = params.configuration.unwrap_or_default();
    let message = params.message;
    validate_message(&message, &settings_of(ctx).await?.limits)?;
    if ctx
        .desk
        .as_ref()
        .is_some_and(|d| ctx.a2a.is_conformance_desk(d.as_str()))
        && let Some(answer) = crate::conformance::direct_answer(&message)
    {
        // The kit's "answer with a Message" scenario: no task at all.
        return Ok(message_reply(ctx, &answer, streaming));
    }
    // A webhook inline: checked before anything changes, set with the task (or, for a
    // follow-up, before the message, so the follow-up's change is pushed).
    let webhook = match config
        .task_push_notification_config
        .take()
        .or(config.push_notification_config.take())
    {
        Some(raw) => Some(push::checked_config(ctx, raw).await?),
        None => None,
    };
    let tasks = &ctx.a2a.tasks;
    let blocking = match ctx.dialect {
        Dialect::V1 => !config.return_immediately.unwrap_or(false),
        Dialect::V03 => config.blocking.unwrap_or(true),
    };
    // Taken before anything changes: a refused stream or wait creates no task.
    let slot = if streaming || blocking {
        Some(open_slot(ctx).await?)
    } else {
        None
    };

    let task = if let Some(task_id) = message.task_id.clone() {
        let task = own_task(ctx, &task_id).await?;
        if let Some(context) = &message.context_id
            && *context != task.context_id
        {
            return Err(RpcError::invalid_params(format!(
                "message.contextId {context} does not match task {task_id}'s context {}",
                task.context_id
            )));
        }
        if let Some(webhook) = webhook {
            // `transition::apply` owns which messages a task takes; asked first, so a
            // refused follow-up leaves no webhook behind.
            taskkeeper_core::transition::apply(
                &task,
                Event::FollowUp {
                    message: message.clone(),
                },
                tasks.now(),
            )
            .map_err(|e| RpcError::from_store(taskkeeper_core::StoreError::Transition(e)))?;
            let id = task.id.clone();
            tasks
                .blocking(move |s, now| s.put_push_config(&id, webhook, now))
                .await
                .map_err(RpcError::from_store)?;
            ctx.a2a.push.notify_one();
        }
        tasks
            .apply(&task.id, Event::FollowUp { message })
            .await
            .map_err(RpcError::from_store)?
            .task
    } else {
        let Some(desk) = ctx.desk.clone() else {
            return Err(RpcError::invalid_params(
                "a new task goes to a desk: send it to /a2a/{desk}",
            ));
        };
        let new = NewTask {
            desk,
            asker: ctx.caller.asker_name().to_owned(),
            context_id: message.context_id.clone(),
            request: message,
            metadata: params.metadata.unwrap_or_default(),
        };
        let submitted = if ctx.caller.asker_name() == crate::http::auth::ANONYMOUS_ASKER {
            // The kit reuses each scenario's messageId for a whole run; each send must
            // get its scenario, not the task an earlier test ended (`Store::submit_each`).
            tasks.submit_each(new, webhook).await
        } else {
            tasks.submit_with_push(new, webhook).await
        };
        let task = submitted.map_err(RpcError::from_store)?.task;
        ctx.a2a.push.notify_one();
        task
    };
    // The asker's file parts, where the delivery text will name them (a delivery saves
    // what a crash left unsaved). Off the runtime's threads: it writes files.
    if task.history.iter().any(|m| {
        m.parts
            .iter()
            .any(|p| matches!(p.content, PartContent::Raw(_)))
    }) {
        let (files, saved) = (tasks.files().clone(), task.clone());
        let result = tokio::task::spawn_blocking(move || files.save_inbound(&saved)).await;
        if let Ok(Err(e)) = result {
            tracing::warn!(task = %task.id, error = %e, "the asker's files could not be saved yet");
        }
    }

    let task = match slot {
        Some((slot, _)) if streaming => {
            let shape = Shape {
                history_length: config.history_length,
                include_artifacts: true,
            };
            return Ok(Reply::Stream(stream::task_stream(
                ctx,
                task,
                slot,
                stream::Ends::Settled,
                shape,
            )));
        }
        // The slot is held until the wait ends, or until the client leaves and drops it.
        Some((_slot, wait_max)) => wait_settled(tasks, task, ctx.a2a.stop.clone(), wait_max).await,
        None => Arc::new(task),
    };
    let shape = reply_shape(ctx, config.history_length, true).await;
    Ok(Reply::Json(match ctx.dialect {
        Dialect::V1 => json!({"task": wire::task_v1(&task, shape)}),
        Dialect::V03 => wire::task_result(Dialect::V03, &task, shape),
    }))
}

/// A Message as the answer to a send (no task): `{message}` in v1.0, the bare Message with
/// `kind` in v0.3; a streaming send's stream carries it alone and closes.
fn message_reply(ctx: &Ctx, answer: &Message, streaming: bool) -> Reply {
    let v1 = json!(answer);
    if streaming {
        return Reply::Stream(stream::message_stream(ctx, v1));
    }
    Reply::Json(match ctx.dialect {
        Dialect::V1 => json!({"message": v1}),
        Dialect::V03 => wire::v03::from_v1(v1),
    })
}

/// The settings as they are now.
pub(crate) async fn settings_of(
    ctx: &Ctx,
) -> Result<taskkeeper_core::settings::Settings, RpcError> {
    ctx.a2a
        .tasks
        .blocking(|s, _| s.settings())
        .await
        .map_err(RpcError::from_store)
}

/// One more open stream or blocking wait for this caller (see `slots`), with the setting
/// a wait needs (`a2a.blocking_wait_max`); refused beyond `a2a.streams_per_caller`.
async fn open_slot(ctx: &Ctx) -> Result<(slots::Slot, Duration), RpcError> {
    let settings = settings_of(ctx).await?;
    let slot = ctx
        .a2a
        .slots
        .take(ctx.caller.asker_name(), settings.streams_per_caller)?;
    Ok((slot, settings.blocking_wait_max))
}

/// Wait until the task ends or needs input, at most `cap` (`a2a.blocking_wait_max`); then the
/// task as it is. Pushed by the task's channel, no polling; a client that leaves drops this
/// future and the task is untouched.
async fn wait_settled(
    tasks: &Tasks,
    task: Task,
    mut stop: tokio::sync::watch::Receiver<bool>,
    cap: Duration,
) -> Arc<Task> {
    if settled(&task) {
        return Arc::new(task);
    }
    let mut rx = tasks.watch(&task.id);
    // One version held at a time, shared with the task's channel: a waiter costs no copy.
    let reread = |known: Arc<Task>| async move {
        match tasks.get(&known.id).await {
            Ok(Some(t)) => Arc::new(t),
            _ => known,
        }
    };
    // Read after subscribing: a change between the two is seen either way.
    let mut latest = reread(Arc::new(task)).await;
    let deadline = tokio::time::Instant::now() + cap;
    while !settled(&latest) {
        let next = tokio::select! {
            r = tokio::time::timeout_at(deadline, rx.recv()) => Some(r),
            _ = stop.wait_for(|s| *s) => None,
        };
        // None: the daemon is stopping; answer with the task as it is.
        let Some(next) = next else {
            return reread(latest).await;
        };
        match next {
            Err(_) => return reread(latest).await,
            Ok(Ok(t)) => {
                if t.version >= latest.version {
                    latest = t;
                }
            }
            Ok(Err(tokio::sync::broadcast::error::RecvError::Lagged(_))) => {
                latest = reread(latest).await
            }
            Ok(Err(tokio::sync::broadcast::error::RecvError::Closed)) => {
                // Subscribe again before the read, so no change falls between them.
                rx = tasks.watch(&latest.id);
                latest = reread(latest).await;
            }
        }
    }
    latest
}

async fn get_task(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let p: IdParams = decode(params)?;
    let task = own_task(ctx, &p.id).await?;
    let shape = reply_shape(ctx, p.history_length, true).await;
    Ok(wire::task_result(ctx.dialect, &task, shape))
}

async fn cancel_task(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let p: IdParams = decode(params)?;
    let task = own_task(ctx, &p.id).await?;
    let event = Event::Cancel {
        reason: Some("Canceled by the asker.".to_owned()),
    };
    let task = ctx
        .a2a
        .tasks
        .apply(&task.id, event)
        .await
        .map_err(RpcError::from_store)?
        .task;
    let shape = reply_shape(ctx, None, true).await;
    Ok(wire::task_result(ctx.dialect, &task, shape))
}

async fn ack_task(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let p: IdParams = decode(params)?;
    let task = own_task(ctx, &p.id).await?;
    let task = ctx
        .a2a
        .tasks
        .apply(&task.id, Event::Acknowledge)
        .await
        .map_err(RpcError::from_store)?
        .task;
    let shape = reply_shape(ctx, None, true).await;
    Ok(wire::task_result(ctx.dialect, &task, shape))
}

async fn subscribe(ctx: &Ctx, params: Value) -> Result<Reply, RpcError> {
    let p: IdParams = decode(params)?;
    let task = own_task(ctx, &p.id).await?;
    if task.state().is_terminal() {
        return Err(RpcError::unsupported(format!(
            "task {} has ended ({}); there is nothing to subscribe to",
            task.id,
            task.state()
        ))
        .with("taskId", task.id.as_str()));
    }
    let (slot, _) = open_slot(ctx).await?;
    Ok(Reply::Stream(stream::task_stream(
        ctx,
        task,
        slot,
        stream::Ends::Terminal,
        Shape::FULL,
    )))
}

/// The extended card (`GetExtendedAgentCard`, v0.3 `agent/getAuthenticatedExtendedCard`): the
/// public card plus what only a caller with a token may read (the desks' directories). On a
/// desk's endpoint it is that desk's card, on `/a2a` the machine's.
async fn extended_card(ctx: &Ctx) -> Result<Value, RpcError> {
    if ctx.caller.asker_name() == crate::http::auth::ANONYMOUS_ASKER {
        // Its card declares no scheme and no extended card (`extendedAgentCard: false`).
        return Err(RpcError::unsupported(
            "the extended card is for callers with a token; the conformance desk's callers \
             without one have the public card at /.well-known/agent-card.json",
        ));
    }
    let desk = ctx.desk.as_ref().map(|d| d.as_str().to_owned());
    let (desks, settings) = ctx
        .a2a
        .tasks
        .blocking(|s, _| Ok((s.desks()?, s.settings()?)))
        .await
        .map_err(RpcError::from_store)?;
    let a2a = &ctx.a2a;
    let card = match desk {
        Some(name) => {
            let desk = desks
                .iter()
                .find(|d| d.name.as_str() == name)
                .ok_or_else(|| {
                    RpcError::from_store(taskkeeper_core::StoreError::NoSuchDesk(name.clone()))
                })?;
            let opts = a2a.card_options(Some(&name), Detail::Extended, ctx.dialect);
            card::desk_card(desk, a2a.port, &settings, opts)
        }
        None => {
            let opts = a2a.card_options(None, Detail::Extended, ctx.dialect);
            card::machine_card(&desks, a2a.port, &settings, opts)
        }
    };
    Ok(card)
}

const PAGE_DEFAULT: i64 = 50;
const PAGE_MAX: i64 = 100;

fn encode_cursor(t: &Task) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!(
        "{}:{}",
        t.status.timestamp.as_millis(),
        t.id
    ))
}

fn decode_cursor(token: &str) -> Option<(Timestamp, TaskId)> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let (ms, id) = text.split_once(':')?;
    Some((Timestamp::from_millis(ms.parse().ok()?), TaskId::from(id)))
}

async fn list_tasks(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let p: ListParams = decode(params)?;
    let page_size = p.page_size.unwrap_or(PAGE_DEFAULT);
    if !(1..=PAGE_MAX).contains(&page_size) {
        return Err(RpcError::invalid_params(format!(
            "pageSize must be from 1 to {PAGE_MAX}, not {page_size}"
        )));
    }
    let after = match p.page_token.as_deref() {
        None | Some("") => None,
        Some(token) => Some(
            decode_cursor(token)
                .ok_or_else(|| RpcError::invalid_params("pageToken is not one this server gave"))?,
        ),
    };
    let status_after = match p.status_timestamp_after.as_deref() {
        None => None,
        Some(text) => Some(Timestamp::parse_rfc3339(text).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "statusTimestampAfter {text:?} is not an ISO 8601 timestamp"
            ))
        })?),
    };
    let query = PageQuery {
        asker: Some(ctx.caller.asker_name().to_owned()),
        desk: ctx.desk.clone(),
        context_id: p.context_id,
        state: p.status,
        status_after,
        after,
        limit: u32::try_from(page_size).unwrap_or(50) + 1,
    };
    let (mut tasks, total) = ctx
        .a2a
        .tasks
        .page(query)
        .await
        .map_err(RpcError::from_store)?;
    let more = tasks.len() > page_size as usize;
    tasks.truncate(page_size as usize);
    let next = if more {
        tasks.last().map(encode_cursor).unwrap_or_default()
    } else {
        String::new()
    };
    let shape = reply_shape(ctx, p.history_length, p.include_artifacts.unwrap_or(false)).await;
    Ok(json!({
        "tasks": tasks.iter().map(|t| wire::task_v1(t, shape)).collect::<Vec<_>>(),
        "nextPageToken": next,
        "pageSize": page_size,
        "totalSize": total,
    }))
}
