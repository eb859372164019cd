//! The push service: each task's webhooks (A2A's push notification configs) and the
//! sender's queue of deliveries (what is due, and how each attempt went).

use taskkeeper_core::push::{Attempted, Delivery, NewPushConfig, PushConfig};
use taskkeeper_core::{StoreError, TaskId, Timestamp};

use super::Stored;

/// See the module doc.
#[derive(Clone, Debug)]
pub struct PushStore(pub(crate) Stored);

impl PushStore {
    /// Set (or replace) a webhook of task `id`.
    pub async fn set(&self, id: &TaskId, config: NewPushConfig) -> Result<PushConfig, StoreError> {
        let id = id.clone();
        self.0
            .blocking(move |s, now| s.put_push_config(&id, config, now))
            .await
    }

    /// The webhooks of task `id`, oldest first.
    pub async fn list(&self, id: &TaskId) -> Result<Vec<PushConfig>, StoreError> {
        let id = id.clone();
        self.0.blocking(move |s, _| s.push_configs(&id)).await
    }

    /// Delete webhook `config` of task `id`; whether there was one.
    pub async fn delete(&self, id: &TaskId, config: &str) -> Result<bool, StoreError> {
        let (id, config) = (id.clone(), config.to_owned());
        self.0
            .blocking(move |s, _| s.delete_push_config(&id, &config))
            .await
    }

    /// At most `limit` deliveries due at `now`, and when the next is due, in one trip: the
    /// sender asks after every change that queued a push.
    pub async fn due(
        &self,
        now: Timestamp,
        limit: u32,
    ) -> Result<(Vec<Delivery>, Option<Timestamp>), StoreError> {
        self.0
            .blocking(move |s, _| Ok((s.push_due(now, limit)?, s.push_next_due()?)))
            .await
    }

    /// How the attempt at delivery `seq` went.
    pub async fn attempted(
        &self,
        seq: i64,
        outcome: Result<(), String>,
    ) -> Result<Attempted, StoreError> {
        self.0
            .blocking(move |s, now| s.push_attempted(seq, outcome, now))
            .await
    }
}
