//! The owner's notices as its event stream and the app's window read them: a
//! [`crate::notify::Notice`] in the owner API's words (its task as a [`TaskView`], the
//! digest's counts as [`DigestCounts`]). The notice itself carries core data only, so telling
//! the owner needs nothing of the owner API; this is where the two meet.

use serde::Serialize;

use super::{DigestCounts, TaskView};
use crate::notify::Notice;

/// Something the owner should hear about.
// On the wire (`notice` events) and in the UI's generated types it is named `Notice`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS), ts(rename = "Notice"))]
#[serde(
    tag = "kind",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum NoticeView {
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
        /// The session's id for the request, so an answer from a notification answers this
        /// one and no later request.
        #[serde(skip_serializing_if = "Option::is_none")]
        #[cfg_attr(test, ts(optional))]
        request_id: Option<String>,
    },
    /// The digest is offered (at login or its time of day): its counts; the view shows it.
    Digest {
        counts: DigestCounts,
    },
    /// The worker said what it needs from the asker: the task is INPUT_REQUIRED.
    Blocked {
        task: Box<TaskView>,
    },
    /// The worker finished the task: COMPLETED.
    Finished {
        task: Box<TaskView>,
    },
}

impl From<&Notice> for NoticeView {
    fn from(notice: &Notice) -> Self {
        let view = |task: &taskkeeper_core::Task| Box::new(TaskView::from(task));
        match notice {
            Notice::Stalled { task } => NoticeView::Stalled { task: view(task) },
            Notice::SessionEnded {
                session,
                desk,
                open_tasks,
            } => NoticeView::SessionEnded {
                session: session.clone(),
                desk: desk.clone(),
                open_tasks: *open_tasks,
            },
            Notice::PermissionAsked {
                session,
                desk,
                tool,
                description,
                request_id,
            } => NoticeView::PermissionAsked {
                session: session.clone(),
                desk: desk.clone(),
                tool: tool.clone(),
                description: description.clone(),
                request_id: request_id.clone(),
            },
            Notice::Digest { counts } => NoticeView::Digest {
                counts: DigestCounts::from(*counts),
            },
            Notice::Blocked { task } => NoticeView::Blocked { task: view(task) },
            Notice::Finished { task } => NoticeView::Finished { task: view(task) },
        }
    }
}

/// The counts as the owner API shows them, back as the core's (a notice carries those).
impl From<DigestCounts> for taskkeeper_core::digest::Counts {
    fn from(c: DigestCounts) -> Self {
        Self {
            stalled: c.stalled,
            finished: c.finished,
            waiting_on_owner: c.waiting_on_owner,
            ack_pending: c.ack_pending,
            reminders: c.reminders,
        }
    }
}
