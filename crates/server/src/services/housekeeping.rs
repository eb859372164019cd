//! The housekeeping service: what the daemon's pruning reads and deletes (ended sessions, the
//! files of pruned tasks); ended tasks themselves go through the task service.

use std::time::Duration;

use taskkeeper_core::{StoreError, Timestamp};

use super::Stored;

/// See the module doc.
#[derive(Clone, Debug)]
pub struct Housekeeping(pub(crate) Stored);

/// How long ended tasks and ended sessions are kept, and whether ended tasks are due to be
/// pruned now.
pub type PruneDue = (Duration, Duration, bool);

impl Housekeeping {
    /// The settings' keep times and whether an ended task is due to go, in one trip.
    pub async fn tasks_due(&self) -> Result<PruneDue, StoreError> {
        self.0
            .blocking(move |s, now| {
                let settings = s.settings()?;
                let (keep_tasks, keep_sessions) =
                    (settings.keep_ended, settings.limits.keep_ended_sessions);
                let due = s.next_prune_at(keep_tasks)?.is_some_and(|t| t <= now);
                Ok((keep_tasks, keep_sessions, due))
            })
            .await
    }

    /// Remove the files of tasks that are gone; how many tasks' files went.
    pub async fn prune_files(
        &self,
        files: crate::files::Files,
    ) -> Result<std::io::Result<usize>, StoreError> {
        self.0
            .blocking(move |s, _| Ok(files.prune(|id| matches!(s.task(id), Ok(Some(_)) | Err(_)))))
            .await
    }

    /// Prune the ended sessions that are due, and say when the next prune of either is due.
    pub async fn prune_sessions(
        &self,
        keep_tasks: Duration,
        keep_sessions: Duration,
    ) -> Result<Option<Timestamp>, StoreError> {
        self.0
            .blocking(move |s, now| {
                if s.next_session_prune_at(keep_sessions)?
                    .is_some_and(|t| t <= now)
                {
                    let pruned = s.prune_ended_sessions(now, keep_sessions)?;
                    if pruned > 0 {
                        tracing::info!(pruned, "pruned ended sessions");
                    }
                }
                let next = [
                    s.next_prune_at(keep_tasks)?,
                    s.next_session_prune_at(keep_sessions)?,
                ];
                Ok(next.into_iter().flatten().min())
            })
            .await
    }
}
