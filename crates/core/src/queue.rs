//! The desk's queue (DESIGN §3 rule 3): a desk works on one task at a time; other tasks wait
//! SUBMITTED in first-in, first-out order and the next starts when the one before is
//! finished, blocked or stalled.
//!
//! The queue is not a separate structure: it is the desk's SUBMITTED tasks ordered by
//! [`Task::queue_seq`]. These functions are the only place that order and the "holds the
//! desk" rule are written down.

use crate::task::{Task, TaskState};

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

/// Fill in [`Task::queue_position`] (1 = next) for the queued tasks of one desk; other tasks
/// get `None`.
pub fn positions(desk_tasks: &mut [Task]) {
    let mut queued: Vec<(i64, usize)> = desk_tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.state() == TaskState::Submitted)
        .map(|(i, t)| (t.queue_seq, i))
        .collect();
    queued.sort_unstable();
    for t in desk_tasks.iter_mut() {
        t.queue_position = None;
    }
    for (pos, (_, i)) in queued.into_iter().enumerate() {
        desk_tasks[i].queue_position = u32::try_from(pos + 1).ok();
    }
}
