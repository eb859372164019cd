//! The owner's snooze of a stalled task (a stall notification's "Snooze 1 h"): the stall is
//! told again once the snooze has passed on the daemon's clock, if the task is still stalled
//! then. The clock is the injected one, so a test moves it instead of waiting an hour, and a
//! suspend that jumps the wall clock past the snooze tells it at the next look. A snooze is
//! kept in memory only: after a restart the stall shows in the tray and the list as ever.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use taskkeeper_core::{StoreError, TaskId};
use tokio::sync::watch;

use super::{OwnerError, OwnerService};
use crate::owner::api::TaskView;

/// The longest a snooze sleeps before it looks at the clock again (the wall clock may jump).
const CAP: Duration = Duration::from_secs(30);

/// What the snoozes share: a wake, so each looks at the clock now, and a count of looks.
#[derive(Debug)]
pub(crate) struct Snoozes {
    /// Bumped to make every snooze look at the clock now (a test that moved it).
    wake: watch::Sender<u64>,
    /// Looks at the clock so far, by all snoozes, each counted once it has told what was due
    /// (or found nothing due): a test waits on it instead of sleeping.
    looks: AtomicU64,
}

impl Default for Snoozes {
    fn default() -> Self {
        Self {
            wake: watch::Sender::new(0),
            looks: AtomicU64::new(0),
        }
    }
}

impl Snoozes {
    fn looked(&self) {
        self.looks.fetch_add(1, Ordering::SeqCst);
    }
}

impl OwnerService {
    /// Tell the owner about a stalled task again once `after` has passed on the daemon's
    /// clock, if it is still stalled then. The task itself is not changed.
    pub async fn snooze_task(&self, id: &str, after: Duration) -> Result<TaskView, OwnerError> {
        let id = TaskId::from(id);
        let task = self
            .tasks
            .get(&id)
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(id.clone()))?;
        if task.stalled_at.is_none() || !task.is_open() {
            return Err(OwnerError::invalid(format!(
                "task {id} is not stalled ({}); only a stalled task can be snoozed",
                task.state()
            )));
        }
        let due = self.tasks.now().plus(after);
        tracing::info!(task = %id, after_s = after.as_secs(), due = %due, "stall snoozed");
        let (tasks, notifier, mut stop) = (
            self.tasks.clone(),
            self.sessions.notifier().clone(),
            self.stop.clone(),
        );
        let snoozes = Arc::clone(&self.snoozes);
        let mut wake = snoozes.wake.subscribe();
        tokio::spawn(async move {
            loop {
                let now = tasks.now();
                if now >= due {
                    break;
                }
                snoozes.looked();
                tokio::select! {
                    () = tokio::time::sleep(due.since(now).min(CAP)) => {}
                    _ = wake.changed() => {}
                    _ = stop.wait_for(|stopping| *stopping) => return,
                }
            }
            match tasks.get(&id).await {
                Ok(Some(task)) if task.is_open() && task.stalled_at.is_some() => {
                    notifier.stalled(&task);
                }
                Ok(_) => tracing::debug!(task = %id, "a snoozed stall ended meanwhile"),
                Err(error) => {
                    tracing::warn!(%error, task = %id, "could not re-read a snoozed task")
                }
            }
            snoozes.looked();
        });
        Ok(TaskView::from(&task))
    }

    /// Make every snooze look at the clock now (for tests that moved it).
    pub(crate) fn wake_snoozes(&self) {
        self.snoozes.wake.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// How many times the snoozes have looked at the clock since the start.
    pub(crate) fn snooze_looks(&self) -> u64 {
        self.snoozes.looks.load(Ordering::SeqCst)
    }
}
