//! The task service: the store's task operations made async (they block on SQLite and fsync,
//! so they run on the blocking pool) and published. After every committed change the new
//! version of each changed task goes to that task's channel and to the all-tasks feed, so
//! blocking SendMessage calls, SSE streams and the owner's event stream are pushed from the
//! transition that made the change, with no polling.
//!
//! Every task write of the daemon goes through here; nothing else calls `Store::submit` or
//! `Store::apply`.
//! The other tables are reached through the services it hands out (`tasks.desks()`,
//! `tasks.session_store()`, …, in `crate::services`), over the same store, clock and trip
//! counts.
//!
//! A task's channel lives while someone watches it: the last [`TaskWatch`] to go removes it,
//! so a task nobody follows costs nothing here, and [`Tasks::watchers`] counts who follows.
//!
//! Thread trips are the cost that showed in the profile (issue 13: on two cores, a third of
//! a send's CPU was the kernel switching threads), so the calls made on every request take
//! none they can avoid: a task write goes to the store's writer thread and its answer comes
//! back on a channel the async caller awaits (no blocking-pool thread waits between), and a
//! task read takes an idle read connection where the caller is. [`Tasks::trips`] counts them.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use taskkeeper_core::store::{Changed, PageQuery, Resend, TaskFilter};
use taskkeeper_core::{Clock, Event, NewTask, Store, StoreError, Task, TaskId, Timestamp};

use crate::services::{
    AskerStore, DeskStore, Housekeeping, MarkStore, PushStore, SessionStore, SettingStore, Stored,
    WatchdogReads,
};
use tokio::sync::broadcast;

/// Events buffered per task channel; a subscriber that falls further behind re-reads the
/// task from the store.
const TASK_CHANNEL: usize = 64;
const FEED_CHANNEL: usize = 1024;

#[derive(Clone, Debug)]
pub struct Tasks {
    stored: Stored,
    hub: Arc<Hub>,
    /// The files that travel with tasks (`files`).
    files: crate::files::Files,
}

#[derive(Debug)]
struct Hub {
    per_task: Mutex<HashMap<TaskId, Channel>>,
    /// Numbers the channels, so a watch removes only the channel it subscribed to.
    made: std::sync::atomic::AtomicU64,
    feed: broadcast::Sender<Arc<Task>>,
    pokes: broadcast::Sender<()>,
    /// Told when a change queued a push for a webhook: the push sender's wake.
    pushes: Arc<tokio::sync::Notify>,
}

/// The thread trips the task service made since it was made, for tests that pin a cost by
/// counting (never by time).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Trips {
    /// Calls run on the blocking pool (every service's calls but the task writes and reads
    /// below).
    pub pool: u64,
    /// Task writes handed to the store's writer thread and awaited without a pool thread.
    pub writer: u64,
    /// Reads done where the caller was, on an idle read connection.
    pub direct: u64,
}

impl std::ops::Sub for Trips {
    type Output = Trips;
    fn sub(self, before: Trips) -> Trips {
        Trips {
            pool: self.pool - before.pool,
            writer: self.writer - before.writer,
            direct: self.direct - before.direct,
        }
    }
}

#[derive(Debug)]
struct Channel {
    number: u64,
    tx: broadcast::Sender<Arc<Task>>,
}

impl Hub {
    fn channels(&self) -> std::sync::MutexGuard<'_, HashMap<TaskId, Channel>> {
        self.per_task.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn publish(&self, task: Task) {
        let task = Arc::new(task);
        let mut map = self.channels();
        if let Some(channel) = map.get(&task.id) {
            // No receivers left, or nothing more will come: drop the channel.
            if channel.tx.send(Arc::clone(&task)).is_err() || !task.is_open() {
                map.remove(&task.id);
            }
        }
        drop(map);
        let _ = self.feed.send(task);
    }
}

/// One follower of one task's channel (see [`Tasks::watch`]). Dropping the last one of a
/// channel removes the channel.
#[derive(Debug)]
pub struct TaskWatch {
    hub: Arc<Hub>,
    id: TaskId,
    number: u64,
    rx: broadcast::Receiver<Arc<Task>>,
}

impl TaskWatch {
    /// The next version published, as [`broadcast::Receiver::recv`] answers.
    pub async fn recv(&mut self) -> Result<Arc<Task>, broadcast::error::RecvError> {
        self.rx.recv().await
    }
}

impl Drop for TaskWatch {
    fn drop(&mut self) {
        let mut map = self.hub.channels();
        // Under the lock no one can subscribe meanwhile: a count of one is this watch.
        if map
            .get(&self.id)
            .is_some_and(|c| c.number == self.number && c.tx.receiver_count() <= 1)
        {
            map.remove(&self.id);
        }
    }
}

impl Tasks {
    pub fn new(store: Store, clock: Arc<dyn Clock>, files: crate::files::Files) -> Self {
        let hub = Hub {
            per_task: Mutex::new(HashMap::new()),
            made: std::sync::atomic::AtomicU64::new(0),
            feed: broadcast::channel(FEED_CHANNEL).0,
            pokes: broadcast::channel(16).0,
            pushes: Arc::new(tokio::sync::Notify::new()),
        };
        Self {
            stored: Stored::new(store, clock),
            hub: Arc::new(hub),
            files,
        }
    }

    /// The daemon's files directory.
    pub fn files(&self) -> &crate::files::Files {
        &self.files
    }

    pub fn now(&self) -> Timestamp {
        self.stored.clock.now()
    }

    /// The injected clock's monotonic reading.
    pub fn monotonic(&self) -> std::time::Duration {
        self.stored.clock.monotonic()
    }

    /// The thread trips made so far (see [`Trips`]).
    pub fn trips(&self) -> Trips {
        let t = &self.stored.trips;
        Trips {
            pool: t.pool.load(Ordering::Relaxed),
            writer: t.writer.load(Ordering::Relaxed),
            direct: t.direct.load(Ordering::Relaxed),
        }
    }

    /// The desks service.
    pub fn desks(&self) -> DeskStore {
        DeskStore(self.stored.clone())
    }

    /// The sessions service (its writes are the sessions registry's).
    pub fn session_store(&self) -> SessionStore {
        SessionStore(self.stored.clone())
    }

    /// The settings service.
    pub fn setting_store(&self) -> SettingStore {
        SettingStore(self.stored.clone())
    }

    /// The push service: webhooks and the sender's queue.
    pub fn push_store(&self) -> PushStore {
        PushStore(self.stored.clone())
    }

    /// The askers service.
    pub fn askers(&self) -> AskerStore {
        AskerStore(self.stored.clone())
    }

    /// The marks service (and the digest).
    pub fn marks(&self) -> MarkStore {
        MarkStore(self.stored.clone())
    }

    /// The housekeeping service (pruning).
    pub fn housekeeping(&self) -> Housekeeping {
        Housekeeping(self.stored.clone())
    }

    /// The watchdog's reads.
    pub fn watchdog_reads(&self) -> WatchdogReads {
        WatchdogReads(self.stored.clone())
    }

    /// Delete the tasks that ended more than `keep` ago (the daemon's housekeeping). Nothing
    /// is published: only ended tasks go, and an ended task's channel is already gone.
    pub async fn prune_ended(&self, keep: std::time::Duration) -> Result<usize, StoreError> {
        self.stored
            .blocking(move |s, now| s.prune_ended(now, keep))
            .await
    }

    /// A task write on the store's writer thread, awaited here: the writer answers on a
    /// channel once the commit is durable, so no blocking-pool thread sits waiting for it.
    async fn written(
        &self,
        start: impl FnOnce(&Store, Timestamp, Box<dyn FnOnce(Result<Changed, StoreError>) + Send>),
    ) -> Result<Changed, StoreError> {
        self.stored.trips.writer.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::oneshot::channel();
        start(
            &self.stored.store,
            self.stored.clock.now(),
            Box::new(move |r| {
                let _ = tx.send(r);
            }),
        );
        let changed = rx.await.map_err(|_| StoreError::Closed)??;
        self.publish(&changed);
        Ok(changed)
    }

    fn publish(&self, changed: &Changed) {
        if changed.changed {
            self.hub.publish(changed.task.clone());
        }
        for other in &changed.others {
            self.hub.publish(other.clone());
        }
        if changed.pushed {
            self.hub.pushes.notify_one();
        }
    }

    /// The push sender's wake: told after every change that queued a push (and by whoever
    /// sets a webhook), so a change of a task without one costs the sender nothing.
    pub fn push_wake(&self) -> Arc<tokio::sync::Notify> {
        Arc::clone(&self.hub.pushes)
    }

    pub async fn submit(&self, new: NewTask) -> Result<Changed, StoreError> {
        self.submit_with_push(new, None).await
    }

    /// [`Tasks::submit`] with a webhook set in the same transaction (see
    /// `Store::submit_with_push`).
    pub async fn submit_with_push(
        &self,
        new: NewTask,
        webhook: Option<taskkeeper_core::push::NewPushConfig>,
    ) -> Result<Changed, StoreError> {
        self.written(move |s, now, done| s.submit_then(new, Resend::SameTask, webhook, now, done))
            .await
    }

    /// [`Tasks::submit_with_push`] without the resend check (`Store::submit_each`): the
    /// conformance desk's anonymous asker only.
    pub async fn submit_each(
        &self,
        new: NewTask,
        webhook: Option<taskkeeper_core::push::NewPushConfig>,
    ) -> Result<Changed, StoreError> {
        self.written(move |s, now, done| s.submit_then(new, Resend::NewTask, webhook, now, done))
            .await
    }

    pub async fn apply(&self, id: &TaskId, event: Event) -> Result<Changed, StoreError> {
        self.written(move |s, now, done| s.apply_then(id, None, event, now, done))
            .await
    }

    /// [`Tasks::apply`] to the task as it was at `version` only (see `Store::apply_at`).
    pub async fn apply_at(
        &self,
        id: &TaskId,
        version: u64,
        event: Event,
    ) -> Result<Changed, StoreError> {
        self.written(move |s, now, done| s.apply_then(id, Some(version), event, now, done))
            .await
    }

    /// The settings, from the store's memory when it has them (every A2A call asks for the
    /// limits), else read on the blocking pool.
    pub async fn settings(&self) -> Result<taskkeeper_core::settings::Settings, StoreError> {
        match self.stored.store.cached_settings() {
            Some(settings) => Ok(settings),
            None => self.setting_store().get().await,
        }
    }

    /// Desk `name`, from the store's memory when it has it (every A2A call names its desk),
    /// else read on the blocking pool.
    pub async fn desk(&self, name: &str) -> Result<Option<taskkeeper_core::Desk>, StoreError> {
        if let Some(desk) = self.stored.store.cached_desk(name) {
            return Ok(Some(desk));
        }
        self.desks().get(name).await
    }

    /// Task `id`: read where the caller is when a read connection is idle (one lookup by
    /// key, see `Store::try_task`), else on the blocking pool.
    pub async fn get(&self, id: &TaskId) -> Result<Option<Task>, StoreError> {
        if let Some(read) = self.stored.store.try_task(id) {
            self.stored.trips.direct.fetch_add(1, Ordering::Relaxed);
            return read;
        }
        let id = id.clone();
        self.stored.blocking(move |s, _| s.task(&id)).await
    }

    /// The desks set to launch by themselves if the store has them in memory (`None`: ask
    /// the store), so the auto-launch loop can tell without a trip whether a change is its.
    pub fn cached_auto_launch_desks(&self) -> Option<Vec<taskkeeper_core::Desk>> {
        self.desks().cached_auto_launch()
    }

    pub async fn list(&self, filter: TaskFilter) -> Result<Vec<Task>, StoreError> {
        self.stored.blocking(move |s, _| s.tasks(&filter)).await
    }

    pub async fn page(&self, query: PageQuery) -> Result<(Vec<Task>, u64), StoreError> {
        self.stored.blocking(move |s, _| s.task_page(&query)).await
    }

    /// Every later version of task `id`. Subscribe before reading the task, so no change can
    /// fall between the read and the subscription.
    pub fn watch(&self, id: &TaskId) -> TaskWatch {
        let mut map = self.hub.channels();
        let channel = map.entry(id.clone()).or_insert_with(|| Channel {
            number: self
                .hub
                .made
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            tx: broadcast::channel(TASK_CHANNEL).0,
        });
        TaskWatch {
            hub: Arc::clone(&self.hub),
            id: id.clone(),
            number: channel.number,
            rx: channel.tx.subscribe(),
        }
    }

    /// How many follow task `id` now (its SSE streams and blocking waits).
    pub fn watchers(&self, id: &TaskId) -> usize {
        self.hub
            .channels()
            .get(id)
            .map_or(0, |c| c.tx.receiver_count())
    }

    /// Wake whoever follows the feed without a task change (a recorded session message).
    pub fn poke_sessions(&self) {
        let _ = self.hub.pokes.send(());
    }

    pub fn pokes(&self) -> broadcast::Receiver<()> {
        self.hub.pokes.subscribe()
    }

    /// Every change to any task (the owner's event stream).
    pub fn feed(&self) -> broadcast::Receiver<Arc<Task>> {
        self.hub.feed.subscribe()
    }
}
