//! The desk's queue (design.md §3 rule 3): a desk works on one task at a time; other tasks wait
//! SUBMITTED in first-in, first-out order and the next starts when the one before is
//! finished, blocked or stalled.
//!
//! The queue is not a separate structure: it is the desk's SUBMITTED tasks ordered by
//! [`Task::queue_seq`]. These functions are the only place the "holds the desk" rule, which
//! session may end a task, and what a session's end gives back are written down. A queued
//! task's position is counted by the store, on its index (`store::counts`).

use crate::desk::DeskName;
use crate::session::{Session, SessionId};
use crate::task::{Task, TaskId, TaskState};

/// Whether `task` keeps its desk busy: it is being worked on and has not stalled. A blocked
/// (INPUT_REQUIRED), stalled or ended task frees the desk.
pub fn holds_desk(task: &Task) -> bool {
    task.state() == TaskState::Working && task.stalled_at.is_none()
}

/// The task of this desk that should start now, if any: none while a task holds the desk,
/// else the queued task that came first.
pub fn next_to_start<'a>(desk_tasks: impl IntoIterator<Item = &'a Task>) -> Option<&'a Task> {
    let mut first: Option<&Task> = None;
    for t in desk_tasks {
        if holds_desk(t) {
            return None;
        }
        if t.state() == TaskState::Submitted && first.is_none_or(|f| t.queue_seq < f.queue_seq) {
            first = Some(t);
        }
    }
    first
}

/// Why a session may not end a task.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotHeld {
    #[error(
        "task {task} is held by desk {task_desk}, not by this session's desk {desk}; nothing changed. task_list shows this desk's open tasks"
    )]
    OtherDesk {
        task: TaskId,
        task_desk: DeskName,
        desk: DeskName,
    },
    #[error(
        "task {task} has not been handed to this session yet ({where_}); nothing changed: it reaches the session, with its header, when the desk is free"
    )]
    NotDelivered { task: TaskId, where_: String },
    #[error(
        "task {task} was handed to session {other}, not to this one; nothing changed: that session ends it, or the owner does (`taskkeeper task update`)"
    )]
    OtherSession { task: TaskId, other: SessionId },
}

/// Whether `session` may end `task` (the worker's `task_update`): only a task of its own
/// desk that was handed to this very session. Another session of the same desk is refused,
/// even while the task is the desk's current one: a session that ended gave its tasks back
/// ([`goes_back`]), and its successor (after a `/clear`, say) is handed them again, with
/// their header, before it may end them. A task a desk's command took names no session, so
/// any session of the desk may end it. A queued or undelivered task is refused, whoever
/// asks; the owner ends any task without naming a session. An ended task of the desk is let
/// through, so the transition says it has ended.
pub fn session_may_end(task: &Task, session: &Session) -> Result<(), NotHeld> {
    if task.desk != session.desk {
        return Err(NotHeld::OtherDesk {
            task: task.id.clone(),
            task_desk: task.desk.clone(),
            desk: session.desk.clone(),
        });
    }
    if !task.is_open() {
        return Ok(());
    }
    match &task.delivered_to {
        Some(to) if *to == session.id => Ok(()),
        Some(other) => Err(NotHeld::OtherSession {
            task: task.id.clone(),
            other: other.clone(),
        }),
        // Handed over by the desk's command, which names no session.
        None if task.delivered_at.is_some() => Ok(()),
        None => Err(NotHeld::NotDelivered {
            task: task.id.clone(),
            where_: match task.queue_position {
                Some(p) => format!("it is queued, position {p}"),
                None => format!("it is {}, not yet delivered", task.state().as_str()),
            },
        }),
    }
}

/// Whether `task` goes back to its desk now that session `ended` has ended: it is open and
/// was handed to that session. It keeps its place (a working task still holds the desk, so
/// nothing queued overtakes it) and is handed again, whole and with its header, to the
/// desk's next session, which alone may then end it ([`session_may_end`]). The one rule for
/// what a session's end does to its tasks; [`crate::Event::HandBack`] applies it.
pub fn goes_back(task: &Task, ended: &SessionId) -> bool {
    task.is_open() && task.delivered_to.as_ref() == Some(ended)
}
