//! The methods on tasks that exist already — `GetTask`, `ListTasks`, `CancelTask`, the ack,
//! `SubscribeToTask` — and the extended card: each reads or changes only the caller's own
//! tasks.

use base64::Engine as _;
use serde::Deserialize;
use serde_json::{Value, json};
use taskkeeper_core::store::PageQuery;
use taskkeeper_core::{Event, Task, TaskId, TaskState, Timestamp};

use super::card::Detail;
use super::rpc::RpcError;
use super::send::open_slot;
use super::wire::Shape;
use super::{Ctx, Reply, card, decode, own_task, readable_task, reply_shape, stream, wire};

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
    #[serde(default, deserialize_with = "status_filter")]
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

/// Whether params decode as a task's id (a request that cannot run: `super::unanswerable`).
pub(super) fn check_id(params: Value) -> Result<(), RpcError> {
    decode::<IdParams>(params).map(drop)
}

/// Whether params decode as ListTasks' (a request that cannot run: `super::unanswerable`).
pub(super) fn check_list(params: Value) -> Result<(), RpcError> {
    decode::<ListParams>(params).map(drop)
}

/// ListTasks' `status`, where "no filter" is also spelled as the enum's zero value
/// (`TASK_STATE_UNSPECIFIED`) or as `UNRECOGNIZED`, which @a2a-js/sdk sends over JSON-RPC
/// for a filter left unset.
fn status_filter<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<TaskState>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None => Ok(None),
        Some(Value::String(s)) if s == "TASK_STATE_UNSPECIFIED" || s == "UNRECOGNIZED" => Ok(None),
        Some(v) => TaskState::deserialize(v)
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

pub(super) async fn get_task(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let p: IdParams = decode(params)?;
    let task = readable_task(ctx, &p.id).await?;
    let shape = reply_shape(ctx, p.history_length, true).await;
    Ok(wire::task_result(ctx.dialect, &task, shape))
}

pub(super) async fn cancel_task(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
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

pub(super) async fn ack_task(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
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

pub(super) async fn subscribe(ctx: &Ctx, params: Value) -> Result<Reply, RpcError> {
    let p: IdParams = decode(params)?;
    let task = readable_task(ctx, &p.id).await?;
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
pub(super) async fn extended_card(ctx: &Ctx) -> Result<Value, RpcError> {
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
        .desks()
        .all_with_settings()
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
            card::desk_card(desk, &a2a.at(), &settings, opts)
        }
        None => {
            let opts = a2a.card_options(None, Detail::Extended, ctx.dialect);
            card::machine_card(&desks, &a2a.at(), &settings, opts)
        }
    };
    Ok(a2a.signed(card))
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

pub(super) async fn list_tasks(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
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
        // The tasks the caller may read (`asker::may_read`), as the store filters them.
        asker: taskkeeper_core::asker::listed_asker(ctx.caller.reader()).map(str::to_owned),
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
