//! Telling the owner: the [`Notifier`] is called when a task stalls, when a session ends
//! with tasks open, and when a headless session asks the owner to allow a tool. The headless daemon logs it and publishes it on the owner's event stream
//! (`/api/events`); the tray app adds a desktop notification.

use serde::Serialize;
use taskkeeper_core::Task;
use tokio::sync::broadcast;

use crate::api::TaskView;

/// Something the owner should hear about.
#[derive(Debug, Clone, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum Notice {
    Stalled {
        task: Box<TaskView>,
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
    },
    /// The digest is offered (at login or its time of day): its counts; the view shows it.
    Digest {
        counts: crate::api::DigestCounts,
    },
}

pub trait Notifier: Send + Sync + std::fmt::Debug {
    fn notice(&self, notice: Notice);

    fn stalled(&self, task: &Task) {
        self.notice(Notice::Stalled {
            task: Box::new(TaskView::from(task)),
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
        }
        if let Some(also) = &self.also {
            also.notice(notice.clone());
        }
        let _ = self.events.send(notice);
    }
}
