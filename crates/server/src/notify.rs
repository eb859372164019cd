//! Telling the owner: the [`Notifier`] is called when a task stalls, when a session ends
//! with tasks open, when a headless session asks the owner to allow a tool, and (from the
//! task feed, [`follow_tasks`]) when a worker says a task is blocked on its asker or finished.
//! The headless daemon logs it and publishes it on the owner's event stream (`/api/events`);
//! the tray app adds a desktop notification, by kind ([`Notice::kind`], one setting each).
//!
//! A notice carries core data (the task as stored), so telling the owner needs nothing of
//! the owner API: its wire form is the owner's (`owner::api::NoticeView`), made where a
//! notice leaves the daemon (the event stream, the app's window).

use std::sync::Arc;

use taskkeeper_core::digest::Counts;
use taskkeeper_core::settings::NoticeKind;
use taskkeeper_core::{Task, TaskState};
use tokio::sync::broadcast;

/// Something the owner should hear about.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    Stalled {
        task: Box<Task>,
    },
    SessionEnded {
        session: String,
        desk: String,
        open_tasks: usize,
    },
    /// A headless session waits until the owner allows or denies a tool.
    PermissionAsked {
        session: String,
        desk: String,
        tool: String,
        description: Option<String>,
        /// The session's id for the request, so an answer from a notification answers this
        /// one and no later request.
        request_id: Option<String>,
    },
    /// The digest is offered (at login or its time of day): its counts; the view shows it.
    Digest {
        counts: Counts,
    },
    /// The worker said what it needs from the asker: the task is INPUT_REQUIRED.
    Blocked {
        task: Box<Task>,
    },
    /// The worker finished the task: COMPLETED.
    Finished {
        task: Box<Task>,
    },
}

impl Notice {
    /// Its kind, which the owner turns on and off (`notifications.<kind>`); none for the
    /// digest.
    pub fn kind(&self) -> Option<NoticeKind> {
        match self {
            Notice::Stalled { .. } => Some(NoticeKind::Stalled),
            Notice::SessionEnded { .. } => Some(NoticeKind::SessionEnded),
            Notice::PermissionAsked { .. } => Some(NoticeKind::Permission),
            Notice::Blocked { .. } => Some(NoticeKind::Blocked),
            Notice::Finished { .. } => Some(NoticeKind::Finished),
            // The digest is offered by `digest.at` (which can be `off`), not by a kind.
            Notice::Digest { .. } => None,
        }
    }

    /// The notice a published task change makes, if any: the change that made the task
    /// INPUT_REQUIRED (blocked on its asker) or COMPLETED. Only the change of status itself
    /// counts (its status time is the task's update time), so later bookkeeping on the same
    /// task (an acknowledgement, a delivery) says nothing again.
    pub fn from_change(task: &Task) -> Option<Notice> {
        if task.status.timestamp != task.updated_at {
            return None;
        }
        let view = || Box::new(task.clone());
        match task.state() {
            TaskState::InputRequired => Some(Notice::Blocked { task: view() }),
            TaskState::Completed => Some(Notice::Finished { task: view() }),
            _ => None,
        }
    }
}

/// Tells `notifier` of every blocked and finished task on the task feed until it closes.
/// A lagging feed loses notices, never blocks a writer (the feed is a broadcast).
pub async fn follow_tasks(mut feed: broadcast::Receiver<Arc<Task>>, notifier: Arc<dyn Notifier>) {
    loop {
        match feed.recv().await {
            Ok(task) => {
                if let Some(notice) = Notice::from_change(&task) {
                    notifier.notice(notice);
                }
            }
            Err(broadcast::error::RecvError::Lagged(missed)) => {
                tracing::debug!(missed, "the notices' task feed lagged");
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

pub trait Notifier: Send + Sync + std::fmt::Debug {
    fn notice(&self, notice: Notice);

    fn stalled(&self, task: &Task) {
        self.notice(Notice::Stalled {
            task: Box::new(task.clone()),
        });
    }
}

/// Logs each notice and publishes it to the owner's event stream.
#[derive(Debug, Clone)]
pub struct EventNotifier {
    events: broadcast::Sender<Notice>,
    /// The app's extra: a desktop notification.
    also: Option<std::sync::Arc<dyn Notifier>>,
}

impl EventNotifier {
    pub fn new(also: Option<std::sync::Arc<dyn Notifier>>) -> Self {
        Self {
            events: broadcast::channel(256).0,
            also,
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Notice> {
        self.events.subscribe()
    }
}

impl Notifier for EventNotifier {
    fn notice(&self, notice: Notice) {
        match &notice {
            Notice::Stalled { task } => {
                tracing::warn!(task = %task.id, desk = %task.desk, "stalled: the owner is told");
            }
            Notice::SessionEnded {
                session,
                desk,
                open_tasks,
            } => {
                tracing::warn!(%session, %desk, open_tasks, "a session ended with tasks open");
            }
            Notice::PermissionAsked {
                session,
                desk,
                tool,
                ..
            } => {
                tracing::warn!(%session, %desk, %tool, "a session waits for the owner to allow a tool");
            }
            Notice::Digest { counts } => {
                tracing::info!(?counts, "the digest is offered");
            }
            Notice::Blocked { task } => {
                tracing::info!(task = %task.id, desk = %task.desk, "blocked: the task waits on its asker");
            }
            Notice::Finished { task } => {
                tracing::info!(task = %task.id, desk = %task.desk, "finished");
            }
        }
        if let Some(also) = &self.also {
            also.notice(notice.clone());
        }
        let _ = self.events.send(notice);
    }
}
