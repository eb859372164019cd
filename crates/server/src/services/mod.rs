//! The store's services: every call the daemon makes into the store is a named method here
//! (or, for tasks, in `tasks.rs`), so what each part of the daemon does with the store is
//! read from its name, and no closure that hands out the store leaves this layer
//! (`tidy::only_the_services_reach_the_store`). A call runs on the blocking pool, one trip
//! for what its caller needs in one go (as the closures it replaces did), counted in
//! [`TripCounts`]; task writes go to the store's writer from `tasks.rs`.
//!
//! Each service is a cheap handle over the same store, taken from [`crate::tasks::Tasks`]
//! (`tasks.desks()`, `tasks.session_store()`, …): the task service is what every area
//! already holds.

mod askers;
mod desks;
mod housekeeping;
mod marks;
mod push;
mod sessions;
mod settings;
mod watchdog;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use taskkeeper_core::{Clock, Store, StoreError, Timestamp};

pub use askers::AskerStore;
pub use desks::{DeskOverview, DeskStore};
pub use housekeeping::Housekeeping;
pub use marks::MarkStore;
pub use push::PushStore;
pub use sessions::SessionStore;
pub use settings::SettingStore;
pub use watchdog::{DeskState, WatchdogReads};

/// The thread trips the services made (see `crate::Trips`).
#[derive(Debug, Default)]
pub(crate) struct TripCounts {
    pub(crate) pool: AtomicU64,
    pub(crate) writer: AtomicU64,
    pub(crate) direct: AtomicU64,
}

/// The store with the daemon's clock and the trip counts: what every service holds.
#[derive(Clone, Debug)]
pub(crate) struct Stored {
    pub(crate) store: Store,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) trips: Arc<TripCounts>,
}

impl Stored {
    pub(crate) fn new(store: Store, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            trips: Arc::default(),
        }
    }

    /// Run store calls on the blocking pool, with the time of the call. Only the services
    /// call it.
    pub(crate) async fn blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Store, Timestamp) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        self.trips.pool.fetch_add(1, Ordering::Relaxed);
        let store = self.store.clone();
        let now = self.clock.now();
        tokio::task::spawn_blocking(move || f(&store, now))
            .await
            .map_err(|e| StoreError::Sqlite(format!("the store call did not finish: {e}")))?
    }
}
