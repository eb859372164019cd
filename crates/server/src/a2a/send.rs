//! `SendMessage` and `SendStreamingMessage`: a message checked (its parts, media types and
//! sizes), submitted to the desk as a new task or a follow-up, and answered at once, after a
//! blocking wait, or as a stream.

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};
use taskkeeper_core::task::PartContent;
use taskkeeper_core::{Event, Message, NewTask, Role, Task};

use super::rpc::RpcError;
use super::wire::{Dialect, Shape};
use super::{
    Ctx, Reply, card, decode, own_task, push, reply_shape, settings_of, slots, stream, wire,
};
use crate::tasks::Tasks;

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

/// Whether a send's params decode (a request that cannot run: `super::unanswerable`).
pub(super) fn check(dialect: Dialect, params: Value) -> Result<(), RpcError> {
    message_params(dialect, params).map(drop)
}

/// v0.3 params carry v0.3 messages: translate before decoding.
fn message_params(dialect: Dialect, mut params: Value) -> Result<SendParams, RpcError> {
    if dialect == Dialect::V03
        && let Some(m) = params.get_mut("message")
    {
        *m = wire::v03::message_to_v1(m.take()).map_err(RpcError::invalid_params)?;
    }
    decode(params)
}

/// Whether a part's media type is one the desk takes (`card::INPUT_MODES`), compared as
/// media types are: case-insensitively, parameters (`; charset=…`) aside.
pub(super) fn takes_media_type(media_type: &str) -> bool {
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

pub(super) async fn send(ctx: &Ctx, params: Value, streaming: bool) -> Result<Reply, RpcError> {
    let params = message_params(ctx.dialect, params)?;
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
                .push_store()
                .set(&id, webhook)
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
        // A webhook set with it queued its first push, and the task service woke the push
        // sender for it (`Changed::pushed`); without one there is nothing to wake it for.
        submitted.map_err(RpcError::from_store)?.task
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

/// One more open stream or blocking wait for this caller (see `slots`), with the setting
/// a wait needs (`a2a.blocking_wait_max`); refused beyond `a2a.streams_per_caller`.
pub(super) async fn open_slot(ctx: &Ctx) -> Result<(slots::Slot, Duration), RpcError> {
    let settings = settings_of(ctx).await?;
    // From the network, opening one also counts against the asker's minute
    // (`network.streams_per_minute`), whether or not it stays open.
    if let Some(outside) = &ctx.a2a.outside {
        outside
            .open_stream(ctx.caller.asker_name())
            .map_err(|e| RpcError::limit(&e).with("caller", ctx.caller.asker_name()))?;
    }
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
    if stream::settled(&task) {
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
    while !stream::settled(&latest) {
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
