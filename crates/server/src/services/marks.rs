//! The marks service: the named times the daemon keeps (the digest's last offer and the
//! last one the owner took), and the digest, which reads one of them.

use taskkeeper_core::digest::{OFFERED, OfferAt, TAKEN};
use taskkeeper_core::store::TaskFilter;
use taskkeeper_core::{StoreError, Task, Timestamp};

use super::Stored;

/// See the module doc.
#[derive(Clone, Debug)]
pub struct MarkStore(pub(crate) Stored);

impl MarkStore {
    /// When the digest is offered (the setting) and when it last was, in one trip.
    pub async fn digest_offer(&self) -> Result<(OfferAt, Option<Timestamp>), StoreError> {
        self.0
            .blocking(|s, _| Ok((s.settings()?.digest_at, s.mark(OFFERED)?)))
            .await
    }

    /// Record the digest's offer at `at`.
    pub async fn offered(&self, at: Timestamp) -> Result<(), StoreError> {
        self.0.blocking(move |s, _| s.set_mark(OFFERED, at)).await
    }

    /// What the digest is made of, in one trip: every task, when the owner last took the
    /// digest and now; `take` records this one as taken, so the next starts from now.
    pub async fn digest(
        &self,
        take: bool,
    ) -> Result<(Vec<Task>, Option<Timestamp>, Timestamp), StoreError> {
        self.0
            .blocking(move |s, now| {
                let since = s.mark(TAKEN)?;
                let tasks = s.tasks(&TaskFilter::default())?;
                if take {
                    s.set_mark(TAKEN, now)?;
                }
                Ok((tasks, since, now))
            })
            .await
    }
}
