//! Task streams (SendStreamingMessage, SubscribeToTask and their v0.3 names), SSE for JSON-RPC and
//! HTTP+JSON and server streaming for gRPC: the current
//! Task first (read from the store, so it works after a restart), then an event for every
//! change as the transition publishes it. A send's stream closes when the task is in a
//! terminal or an interrupted state (the proto: SendStreamingMessage streams "until the Task is
//! in an interrupted or terminal state"), as a blocking send returns then; a subscription
//! closes after a terminal state only, so a subscriber to a task waiting on its asker sees the
//! answer's work through to the end. A client that goes away ends only its own stream.
//!
//! Each stream has a relay: a runtime task that follows the task's channel and writes the
//! events into the response. The relay ends as soon as its client does (the response's
//! receiver is dropped when the connection closes), not at the task's next change, which may
//! be a day away; it keeps the newest version it sent as a shared `Arc`, the one copy every
//! relay of that task also holds, and it holds its caller's [`Slot`] until it ends.

use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use taskkeeper_core::Task;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::ReceiverStream;

use super::slots::Slot;
use super::wire::{self, Dialect, Shape};
use super::{Ctx, Envelope};
use crate::tasks::{TaskWatch, Tasks};

/// Where a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ends {
    /// At a terminal or an interrupted state, the first Task included (a send).
    Settled,
    /// At a terminal state (a subscription).
    Terminal,
}

impl Ends {
    fn at(self, t: &Task) -> bool {
        match self {
            Ends::Settled => settled(t),
            Ends::Terminal => !t.is_open(),
        }
    }
}

/// A send's answer is due: its task is at a terminal or an interrupted state. A blocking send
/// waits for it, a streaming one ends there.
pub(super) fn settled(t: &Task) -> bool {
    t.state().is_terminal() || t.state().is_interrupted()
}

/// A stream's items as they come, each what a JSON-RPC response's `result` would carry (a
/// StreamResponse in v1.0), before any binding frames it: JSON-RPC and HTTP+JSON write them
/// as SSE events (its `IntoResponse`, in the request's envelope), gRPC as its StreamResponse
/// messages (`grpc`). Dropping it is the client leaving: the relay ends.
pub(crate) struct Events {
    pub items: mpsc::Receiver<Value>,
    envelope: Envelope,
}

impl IntoResponse for Events {
    fn into_response(self) -> Response {
        let envelope = self.envelope;
        let events = ReceiverStream::new(self.items).map(move |v| {
            Ok::<_, Infallible>(SseEvent::default().data(envelope.wrap(v).to_string()))
        });
        Sse::new(events)
            .keep_alive(KeepAlive::default())
            .into_response()
    }
}

/// `shape` is how the first Task is shown (a send's `historyLength`); the events after it
/// carry only what changed.
pub(crate) fn task_stream(ctx: &Ctx, task: Task, slot: Slot, ends: Ends, shape: Shape) -> Events {
    let (tx, rx) = mpsc::channel::<Value>(16);
    // Subscribe before the relay starts: nothing published from now on is missed.
    let watch = ctx.a2a.tasks.watch(&task.id);
    let relay = Relay {
        a2a: ctx.a2a.clone(),
        tasks: ctx.a2a.tasks.clone(),
        dialect: ctx.dialect,
        tx,
        stop: ctx.a2a.stop.clone(),
        ends,
        shape,
    };
    tokio::spawn(relay.run(task, watch, slot));
    Events {
        items: rx,
        envelope: ctx.envelope.clone(),
    }
}

/// A stream of one Message, closed after it (a send answered by a Message, not a task).
pub(crate) fn message_stream(ctx: &Ctx, message: Value) -> Events {
    let result = match ctx.dialect {
        Dialect::V1 => serde_json::json!({ "message": message }),
        Dialect::V03 => wire::v03::from_v1(message),
    };
    let (tx, rx) = mpsc::channel::<Value>(1);
    // Room for the one item, so this cannot fail; the sender dropped here ends the stream.
    let _ = tx.try_send(result);
    Events {
        items: rx,
        envelope: ctx.envelope.clone(),
    }
}

struct Relay {
    /// For the links in what is relayed (see `A2a::outward`).
    a2a: super::A2a,
    tasks: Tasks,
    dialect: Dialect,
    tx: mpsc::Sender<Value>,
    stop: tokio::sync::watch::Receiver<bool>,
    ends: Ends,
    shape: Shape,
}

impl Relay {
    async fn send(&self, item: &str, v1: Value, is_final: bool) -> bool {
        let mut result = wire::stream_item(self.dialect, item, v1, is_final);
        self.a2a.outward(&mut result);
        self.tx.send(result).await.is_ok()
    }

    /// Events for the step from `last` to `next`: changed artifacts, then the status.
    async fn send_change(&self, last: &Task, next: &Task) -> bool {
        for change in taskkeeper_core::task::artifact_changes(last, next) {
            if !self
                .send(
                    "artifactUpdate",
                    wire::artifact_update_v1(next, &change),
                    false,
                )
                .await
            {
                return false;
            }
        }
        // v0.3's `final` marks the event after which the stream closes.
        self.send(
            "statusUpdate",
            wire::status_update_v1(next),
            self.ends.at(next),
        )
        .await
    }

    /// The task as stored now, or `known` when it cannot be read.
    async fn newest(&self, known: Arc<Task>) -> Arc<Task> {
        match self.tasks.get(&known.id).await {
            Ok(Some(t)) => Arc::new(t),
            _ => known,
        }
    }

    async fn run(self, first: Task, watch: TaskWatch, slot: Slot) {
        let mut stop = self.stop.clone();
        tokio::select! {
            () = self.relay(first, watch) => {}
            // The client left: its response, and with it the receiver, is gone.
            () = self.tx.closed() => {}
            _ = stop.wait_for(|s| *s) => {}
        }
        // The slot goes back before the response ends, so a client that opens its next
        // stream when it sees this one close is never refused for this one.
        drop(slot);
        // Dropping the sender ends the stream.
        drop(self);
    }

    async fn relay(&self, first: Task, mut watch: TaskWatch) {
        // The snapshot may be older than what is stored by now; take the newest.
        let mut last = self.newest(Arc::new(first)).await;
        if !self
            .send("task", wire::task_v1(&last, self.shape), false)
            .await
            || self.ends.at(&last)
        {
            return;
        }
        loop {
            let next = match watch.recv().await {
                Ok(t) => t,
                Err(broadcast::error::RecvError::Lagged(_)) => self.newest(Arc::clone(&last)).await,
                Err(broadcast::error::RecvError::Closed) => {
                    // Subscribe again before the read, so no change falls between them.
                    watch = self.tasks.watch(&last.id);
                    self.newest(Arc::clone(&last)).await
                }
            };
            if next.version <= last.version {
                continue;
            }
            if !self.send_change(&last, &next).await || self.ends.at(&next) {
                return;
            }
            last = next;
        }
    }
}
