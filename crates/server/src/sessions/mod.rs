//! The sessions registry: attaching a session to a desk, folding its agent-neutral edges in,
//! and correcting it from a level signal (`reconcile`), so the rest of the daemon asks one
//! place what a session is doing. Adapters (`agents`) translate their world into calls here;
//! nothing here knows a hook's JSON, a launched process or a way into a session. Who hears a
//! change is [`changes`]; getting text into a session is `delivery`, and launching one is
//! `agents::launched`: both are services over this registry.

mod changes;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use changes::{CHANGES_CHANNEL, Generation, Interest};
use taskkeeper_core::session::{Activity, Edge, Level, Reach, Session, SessionId};
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{AgentKind, DeskName, Event, StoreError, Task, TaskState, Timestamp};
use tokio::sync::broadcast;

use crate::tasks::Tasks;

pub use changes::Change;
pub(crate) use changes::{Interested, Look, drain};

/// The sessions registry service: what every session is doing, the waiting-on-owner mark that
/// follows it, and who hears a change. `Delivery` and the launcher each hold one.
#[derive(Clone, Debug)]
pub struct Sessions {
    pub(crate) tasks: Tasks,
    pub(crate) inner: Arc<Inner>,
    /// The daemon is stopping: waiters leave so the graceful shutdown is not held up.
    pub(crate) stop: tokio::sync::watch::Receiver<bool>,
    pub(crate) notifier: Arc<dyn crate::notify::Notifier>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    /// Who follows which session or desk: a change wakes only those (issue 13).
    pub(crate) interest: Interest,
    /// Every change, by what changed, for the loops that follow all sessions and desks (the
    /// delivery loop, the watchdog); each handles only what changed.
    pub(crate) changes: broadcast::Sender<Change>,
    /// Counts changes of what the owner sees of sessions (activity, a permission request).
    pub(crate) shown: Generation,
    /// Turns started per session (in this process), counted as the edges are folded in:
    /// delivery confirms a push by a turn starting, and a waiter leaves when one starts.
    pub(crate) turns: Mutex<HashMap<SessionId, u64>>,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            interest: Interest::default(),
            changes: broadcast::channel(CHANGES_CHANNEL).0,
            shown: Generation::default(),
            turns: Mutex::default(),
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sessions {
    pub fn new(
        tasks: Tasks,
        stop: tokio::sync::watch::Receiver<bool>,
        notifier: Arc<dyn crate::notify::Notifier>,
    ) -> Self {
        Self {
            tasks,
            inner: Arc::new(Inner::default()),
            stop,
            notifier,
        }
    }

    pub(crate) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stop.clone()
    }

    /// How many turns session `id` has started in this process.
    pub(crate) fn turns(&self, id: &SessionId) -> u64 {
        *lock(&self.inner.turns).get(id).unwrap_or(&0)
    }

    pub fn notifier(&self) -> &Arc<dyn crate::notify::Notifier> {
        &self.notifier
    }

    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// The session, attaching it to a desk the first time it is seen: the desk named by the
    /// environment (`TASKKEEPER_DESK`), else the desk whose directory contains `cwd` (the
    /// deepest), else a new desk for `cwd` when `sessions.create_desks` allows it.
    pub async fn attach(
        &self,
        id: &SessionId,
        cwd: &Path,
        desk_hint: Option<String>,
        reach: Reach,
        agent: AgentKind,
    ) -> Result<Session, StoreError> {
        self.tasks
            .session_store()
            .attach(id, cwd, desk_hint, reach, agent)
            .await
    }

    /// Insert or replace a session Taskkeeper launched.
    pub(crate) async fn put(&self, session: Session) -> Result<Session, StoreError> {
        self.tasks.session_store().put(session).await
    }

    /// Change session `id` in one step: `change` gets the session and the time of the call
    /// and says whether it changed anything (an unchanged session is not written). `None`:
    /// no such session. Every session write of the daemon is this registry's.
    pub(crate) async fn update<R: Send + 'static>(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut Session, Timestamp) -> (bool, R) + Send + 'static,
    ) -> Result<Option<(Session, R)>, StoreError> {
        self.tasks.session_store().update(id, change).await
    }

    /// [`Sessions::update`] on the session that works on `task` (`core::session::works_on`),
    /// if one does.
    pub(crate) async fn update_working_on<R: Send + 'static>(
        &self,
        task: &taskkeeper_core::Task,
        change: impl FnOnce(&mut Session, Timestamp) -> (bool, R) + Send + 'static,
    ) -> Result<Option<(Session, R)>, StoreError> {
        self.tasks
            .session_store()
            .update_working_on(task, change)
            .await
    }

    /// Change every session, each in its own step, in one trip.
    pub(crate) async fn update_each(
        &self,
        change: impl Fn(&mut Session) -> bool + Send + Sync + 'static,
    ) -> Result<(), StoreError> {
        self.tasks.session_store().update_each(change).await
    }

    /// Every session, each corrected from its level signal first (hooks can be missed);
    /// with those whose activity moved, which are told as any correction is.
    pub(crate) async fn reconcile_all(&self) -> Result<Vec<Session>, StoreError> {
        let (sessions, moved) = self.tasks.session_store().reconcile_all(level_of).await?;
        for (session, before) in moved {
            self.reconciled(&session, before).await;
        }
        Ok(sessions)
    }

    /// Fold edges into a session in one step and store it.
    pub async fn edges(&self, id: &SessionId, edges: Vec<Edge>) -> Result<Session, StoreError> {
        let turns = edges
            .iter()
            .filter(|e| matches!(e, Edge::TurnStarted { .. }))
            .count() as u64;
        if turns > 0 {
            *lock(&self.inner.turns).entry(id.clone()).or_insert(0) += turns;
        }
        let id2 = id.clone();
        let (session, before) = self
            .update(&id2, move |session, now| {
                let before = session.activity;
                for edge in edges {
                    session.apply(edge, now);
                }
                (true, before)
            })
            .await?
            .ok_or_else(|| StoreError::NoSuchSession(id2.to_string()))?;
        self.session_changed(id);
        self.activity_moved(&session, before).await;
        Ok(session)
    }

    /// The session ended, as its agent says: `Edge::Ended` folded in, and the owner told when
    /// its desk still has open tasks (nobody works on them now) unless `tell_owner` is false
    /// (Claude Code's `/clear`, where the same desk goes on in a new session).
    pub async fn end(&self, id: &SessionId, tell_owner: bool) -> Result<Session, StoreError> {
        let session = self.edge(id, Edge::Ended).await?;
        if tell_owner {
            let open = self.desk_tasks(&session.desk).await?.len();
            if open > 0 {
                self.notifier().notice(crate::notify::Notice::SessionEnded {
                    session: id.to_string(),
                    desk: session.desk.to_string(),
                    open_tasks: open,
                });
            }
        }
        Ok(session)
    }

    /// Fold an edge into a session and store it.
    pub async fn edge(&self, id: &SessionId, edge: Edge) -> Result<Session, StoreError> {
        self.edges(id, vec![edge]).await
    }

    /// Correct a session from its level signal, read inside the same step as the update so a
    /// hook that changed the session meanwhile is never overwritten.
    pub async fn reconcile(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        let id2 = id.clone();
        let reconciled = self.tasks.session_store().reconcile(&id2, level_of).await?;
        if let Some((session, before)) = &reconciled {
            self.reconciled(session, *before).await;
        }
        Ok(reconciled.map(|(session, _)| session))
    }

    /// A session was corrected from its level signal (`SessionStore::reconcile`), its activity
    /// `before`: only a session whose activity moved is news to anyone.
    pub(crate) async fn reconciled(&self, session: &Session, before: Activity) {
        if session.activity != before {
            self.session_changed(&session.id);
            self.activity_moved(session, before).await;
        }
    }

    /// The one place the desk's waiting-on-owner mark follows a session's activity
    /// (`session::owner_wait_change`), and the one place a session's end reaches its tasks:
    /// every change of activity comes through here, from an edge or a level signal (the hook
    /// that says so, `/clear`, a killed process, a launched session that exits), so no
    /// adapter sets or clears the mark, or gives a task back, on its own.
    async fn activity_moved(&self, session: &Session, before: Activity) {
        if let Some(waiting) = taskkeeper_core::session::owner_wait_change(before, session.activity)
        {
            self.mark_owner_wait(&session.desk, waiting).await;
        }
        if before != Activity::Ended && session.activity == Activity::Ended {
            self.hand_back(session).await;
        }
    }

    /// The session ended: what was handed to it goes back to its desk
    /// (`queue::goes_back`), to be handed again, with its header, to the desk's next session
    /// (after Claude Code's `/clear`, the new one).
    async fn hand_back(&self, session: &Session) {
        let from = &session.id;
        self.for_desk_tasks(
            &session.desk,
            |t| taskkeeper_core::queue::goes_back(t, from),
            || Event::HandBack { from: from.clone() },
        )
        .await;
    }

    /// The desk's open tasks.
    pub async fn desk_tasks(&self, desk: &DeskName) -> Result<Vec<Task>, StoreError> {
        self.tasks
            .list(TaskFilter {
                state: StateFilter::Open,
                desk: Some(desk.clone()),
                ..Default::default()
            })
            .await
    }

    /// The desk's open tasks that are not queued (working or blocked): what its session
    /// holds or is to be told, read without the desk's queue.
    pub async fn desk_unqueued_tasks(&self, desk: &DeskName) -> Result<Vec<Task>, StoreError> {
        self.tasks
            .list(TaskFilter {
                state: StateFilter::Unqueued,
                desk: Some(desk.clone()),
                ..Default::default()
            })
            .await
    }

    /// Apply `event` to each of the desk's working or blocked tasks `which` selects;
    /// refusals (a task that changed meanwhile) are skipped.
    pub async fn for_desk_tasks(
        &self,
        desk: &DeskName,
        which: impl Fn(&Task) -> bool,
        event: impl Fn() -> Event,
    ) {
        let Ok(tasks) = self.desk_unqueued_tasks(desk).await else {
            return;
        };
        for t in tasks.iter().filter(|t| which(t)) {
            if let Err(e) = self.tasks.apply(&t.id, event()).await {
                tracing::debug!(task = %t.id, error = %e, "skipped a session-driven change");
            }
        }
    }

    /// A session of the desk waits on the owner (a permission prompt), or no longer does:
    /// the desk's tasks carry the mark, so the asker reads WORKING with it (never
    /// INPUT_REQUIRED, which is for the asker). Only [`Self::activity_moved`] calls it.
    async fn mark_owner_wait(&self, desk: &DeskName, waiting: bool) {
        self.for_desk_tasks(
            desk,
            |t| {
                if waiting {
                    t.state() == TaskState::Working && !t.waiting_on_owner
                } else {
                    t.waiting_on_owner
                }
            },
            || Event::OwnerWait { waiting },
        )
        .await;
    }

    /// A turn ended with these words: they are the last words of every task the session
    /// holds (the desk's delivered WORKING tasks), which reminders quote back.
    pub async fn worker_said(&self, desk: &DeskName, words: &str) {
        if words.trim().is_empty() {
            return;
        }
        self.for_desk_tasks(
            desk,
            |t| t.state() == TaskState::Working && t.delivered_at.is_some(),
            || Event::WorkerSaid {
                text: words.to_owned(),
            },
        )
        .await;
    }
}

impl Tasks {
    pub async fn get_session(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        self.session_store().get(id).await
    }
}

/// A level signal for a session, where one can be read: the process is gone, or the agent's
/// own status file says idle, busy or waiting. Which of them a session has is its adapter's
/// (`level_signals`), decided when its hooks say how to reach it: a kind without a status
/// file never has one recorded. The file is written a moment after the hooks fire, so a file
/// older than the session's last change is stale and says nothing.
pub fn level_of(session: &Session) -> Option<Level> {
    #[cfg(target_os = "linux")]
    if let Some(pid) = session.reach.pid
        && !Path::new(&format!("/proc/{pid}")).exists()
    {
        return Some(Level::Gone);
    }
    let path = session.reach.status_file.as_ref()?;
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok()?;
    let modified_ms = modified
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_millis();
    if i128::try_from(modified_ms).ok()? <= i128::from(session.since.as_millis()) {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    match v.get("status")?.as_str()? {
        "idle" => Some(Level::Idle),
        "busy" => Some(Level::Busy),
        "waiting" => Some(Level::Waiting),
        _ => None,
    }
}
