//! A worker's word on its task (`task_update` over MCP, `taskkeeper task update`): the
//! ending or `working`, the files and data it attaches, checked before anything changes. One
//! function, [`worker_update`], for both ways in.

use std::str::FromStr;

use taskkeeper_core::{Event, StoreError, TransitionError};

use super::OwnerError;
use crate::tasks::Tasks;

/// The worker's word on how a task ended (`task_update`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerEnding {
    Done,
    Blocked,
    Failed,
    /// The worker declines the task: it will not take it on (A2A's REJECTED).
    Rejected,
}

impl FromStr for WorkerEnding {
    type Err = OwnerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "done" => Ok(Self::Done),
            "blocked" => Ok(Self::Blocked),
            "failed" => Ok(Self::Failed),
            "rejected" => Ok(Self::Rejected),
            other => Err(OwnerError::invalid(format!(
                "unknown status {other:?}: use done, blocked, failed or rejected"
            ))),
        }
    }
}

impl WorkerEnding {
    pub fn event(self, text: String) -> Event {
        match self {
            Self::Done => Event::WorkerDone { summary: text },
            Self::Blocked => Event::WorkerBlocked { need: text },
            Self::Failed => Event::WorkerFailed { why: text },
            Self::Rejected => Event::WorkerRejected { reason: text },
        }
    }
}

/// What a worker's `task_update` says: an ending, or `working` (artifacts attached, the task
/// still open).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerStatus {
    Working,
    Ended(WorkerEnding),
}

impl FromStr for WorkerStatus {
    type Err = OwnerError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "working" => Ok(Self::Working),
            other => WorkerEnding::from_str(other).map(Self::Ended).map_err(|_| {
                OwnerError::invalid(format!(
                    "unknown status {other:?}: use done, blocked, failed or rejected to end the \
                     task, or \
                     working to attach files or data and keep it open"
                ))
            }),
        }
    }
}

/// Why a worker's update was refused: its own arguments (`Invalid`, with the fix) or the
/// store (an ended task, a limit).
#[derive(Debug)]
pub(crate) enum UpdateRefused {
    Invalid(String),
    Store(StoreError),
}

impl From<UpdateRefused> for OwnerError {
    fn from(e: UpdateRefused) -> Self {
        match e {
            UpdateRefused::Invalid(message) => OwnerError::invalid(message),
            UpdateRefused::Store(s) => OwnerError::from(s),
        }
    }
}

/// A worker's update of `task`, the one way for MCP's `task_update` and the owner API's
/// `task update`: the files (paths inside the task's desk's directory) and data become
/// artifacts, attached first (`Event::AddArtifacts`, so subscribers see them as artifact
/// updates), then the ending, if it is one. Checked before anything changes: an ending needs
/// its text, `working` needs something to attach.
pub(crate) async fn worker_update(
    tasks: &Tasks,
    task: &taskkeeper_core::Task,
    status: WorkerStatus,
    text: &str,
    files: &[String],
    data: Vec<serde_json::Value>,
) -> Result<taskkeeper_core::Task, UpdateRefused> {
    match status {
        WorkerStatus::Ended(_) if text.trim().is_empty() => {
            return Err(UpdateRefused::Invalid(
                "text must not be empty: give the summary, what you need, why it failed or why you \
                 reject it; nothing changed"
                    .into(),
            ));
        }
        WorkerStatus::Working if files.is_empty() && data.is_empty() => {
            return Err(UpdateRefused::Invalid(
                "status working changes nothing by itself: give files or data to attach, or \
                 end the task with done, blocked, failed or rejected; nothing changed"
                    .into(),
            ));
        }
        _ => {}
    }
    let mut latest = task.clone();
    if !files.is_empty() || !data.is_empty() {
        if !task.is_open() {
            return Err(UpdateRefused::Store(StoreError::Transition(
                TransitionError::Ended {
                    id: task.id.clone(),
                    state: task.state(),
                },
            )));
        }
        let desk_name = task.desk.clone();
        let (desk, settings) = tasks
            .desks()
            .with_settings(desk_name.as_str())
            .await
            .map_err(UpdateRefused::Store)?;
        let desk = desk
            .ok_or_else(|| UpdateRefused::Store(StoreError::NoSuchDesk(task.desk.to_string())))?;
        let (store_files, t, paths) = (tasks.files().clone(), task.clone(), files.to_vec());
        let artifacts = tokio::task::spawn_blocking(move || {
            store_files.attach(&t, &desk.dir, &paths, data, &settings.limits)
        })
        .await
        .map_err(|e| UpdateRefused::Invalid(format!("the files could not be read: {e}")))?
        .map_err(|e| match e {
            crate::files::AttachError::Limit(l) => UpdateRefused::Store(StoreError::Limit(l)),
            other => UpdateRefused::Invalid(other.to_string()),
        })?;
        latest = tasks
            .apply(&task.id, Event::AddArtifacts { artifacts })
            .await
            .map_err(UpdateRefused::Store)?
            .task;
    }
    match status {
        WorkerStatus::Working => Ok(latest),
        WorkerStatus::Ended(ending) => Ok(tasks
            .apply(&task.id, ending.event(text.to_owned()))
            .await
            .map_err(UpdateRefused::Store)?
            .task),
    }
}
