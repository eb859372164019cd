//! The worker side's state machine around sessions: attaching a session to a desk, folding
//! its edges in, and getting text into it. Adapters (the Claude Code hook intake) translate
//! their world into calls here; nothing here knows a hook's JSON.
//!
//! Delivery has one rule, written once in `Sessions::record_told`: a task (or a cancel
//! notice) is marked delivered by a transition in the store, at the version that was told,
//! which succeeds once; whoever wins that claim — the Stop hook handing over the next task, the waiter waking an idle session —
//! delivers the text, and nobody else does. Which method is tried, and which next when one
//! is not confirmed, is [`delivery::ranked`]'s decision; [`Sessions::deliver_loop`] pushes
//! through the methods that Taskkeeper drives itself (a headless session's stdin, the tmux
//! paste, the desk's command), which cannot be taken back: they send first and claim exactly
//! what they sent once it was confirmed.
//!
//! What they write comes from askers, foreign agents: every pushed text goes through
//! [`delivery::terminal_safe`] at the write, so no escape sequence reaches a terminal or a
//! stdin; a tmux pane is pasted into only when it belongs to the session's own process
//! (`Sessions::owned_pane`), since the pane a hook names is only what the hook says; and
//! the processes started here get an environment without our tokens
//! (`child_env::scrub_secrets`).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskkeeper_core::delivery::{self, Means, Method};
use taskkeeper_core::session::{Edge, Level, Reach, Session, SessionId};
use taskkeeper_core::store::{NewDesk, StateFilter, TaskFilter};
use taskkeeper_core::{AgentKind, Desk, DeskName, Event, StoreError, Task, TaskState};
use tokio::sync::{broadcast, watch};

use crate::agents::claude_code::headless::{LaunchConfig, Launched};
use crate::tasks::Tasks;

#[derive(Clone, Debug)]
pub struct Sessions {
    tasks: Tasks,
    inner: Arc<Inner>,
    /// How to launch headless sessions (none in tests that need none).
    launch: Option<Arc<LaunchConfig>>,
    launched: Arc<Launched>,
    /// The daemon is stopping: waiters leave so the graceful shutdown is not held up.
    stop: tokio::sync::watch::Receiver<bool>,
    notifier: Arc<dyn crate::notify::Notifier>,
}

#[derive(Debug)]
struct Inner {
    /// Who follows which session or desk: a change wakes only those (issue 13).
    interest: Interest,
    /// Every change, by what changed, for the loops that follow all sessions and desks (the
    /// delivery loop, the watchdog); each handles only what changed.
    changes: broadcast::Sender<Change>,
    /// Counts changes of what the owner sees of sessions (activity, a permission request).
    shown: Generation,
    /// How often a waiter woke and looked again (tests count it).
    waiter_wakes: std::sync::atomic::AtomicU64,
    /// The newest waiter's generation per session: an older waiter is superseded.
    waiters: Mutex<HashMap<SessionId, u64>>,
    /// Turns started per session (in this process): a waiter leaves when a turn starts.
    turns: Mutex<HashMap<SessionId, u64>>,
    /// Sessions whose next turn Taskkeeper started (a delivery is on its way in).
    expecting: Mutex<HashSet<SessionId>>,
    /// Stop-hook handovers in a row per session (Claude Code overrides the eighth).
    handovers: Mutex<HashMap<SessionId, u32>>,
    /// Sessions with a waiter waiting right now: the waiter delivers, not the paste.
    waiting: Mutex<HashSet<SessionId>>,
    /// What is being (or was, unconfirmed) pushed to each session or desk: never sent twice.
    pushed: Mutex<HashMap<String, Vec<String>>>,
    /// Sessions and desks a push is going to right now: one at a time, so a task that
    /// arrives meanwhile is not sent again alongside the one on its way.
    in_flight: Mutex<HashSet<String>>,
}

impl Default for Inner {
    fn default() -> Self {
        Self {
            interest: Interest::default(),
            changes: broadcast::channel(CHANGES_CHANNEL).0,
            shown: Generation::default(),
            waiter_wakes: std::sync::atomic::AtomicU64::new(0),
            waiters: Mutex::default(),
            turns: Mutex::default(),
            expecting: Mutex::default(),
            handovers: Mutex::default(),
            waiting: Mutex::default(),
            pushed: Mutex::default(),
            in_flight: Mutex::default(),
        }
    }
}

#[derive(Debug)]
struct Generation(watch::Sender<u64>);

impl Default for Generation {
    fn default() -> Self {
        Self(watch::Sender::new(0))
    }
}

/// What changed, as the loops that follow every change hear it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A session changed (its record, its turn, its waiter).
    Session(SessionId),
    /// A task of this desk changed, or the desk itself.
    Desk(DeskName),
    /// Anything may have changed (an owner action, a feed that fell behind): look at all.
    All,
}

/// Changes buffered for the loops that follow every change; one that falls further behind
/// hears [`Change::All`].
const CHANGES_CHANNEL: usize = 4096;

/// What one follower is interested in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Interested {
    Session(SessionId),
    Desk(DeskName),
}

/// A watch channel per session and per desk that someone follows right now: a change wakes
/// the followers of what changed and nobody else, so a change costs what its followers cost,
/// not what every waiter costs. A channel nobody follows any more goes at the next change.
#[derive(Debug, Default)]
struct Interest {
    channels: Mutex<HashMap<Interested, watch::Sender<u64>>>,
}

impl Interest {
    fn follow(&self, what: Interested) -> watch::Receiver<u64> {
        lock(&self.channels)
            .entry(what)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    fn tell(&self, what: &Interested) {
        let mut channels = lock(&self.channels);
        if let Some(tx) = channels.get(what) {
            if tx.receiver_count() == 0 {
                channels.remove(what);
            } else {
                tx.send_modify(|g| *g = g.wrapping_add(1));
            }
        }
    }

    fn tell_all(&self) {
        lock(&self.channels).retain(|_, tx| {
            let followed = tx.receiver_count() > 0;
            if followed {
                tx.send_modify(|g| *g = g.wrapping_add(1));
            }
            followed
        });
    }
}

/// Unregisters a waiter when its long poll ends, however it ends.
struct Waiting<'a>(&'a Inner, SessionId);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        lock(&self.0.waiting).remove(&self.1);
    }
}

/// A session this young may not have painted its prompt box yet; keys sent now get lost.
const SETTLE: Duration = Duration::from_secs(2);
/// How long a pasted prompt (or a stdin message) has to start a turn before it counts as not
/// delivered (the paste gets one more Enter first).
const VERIFY: Duration = Duration::from_secs(5);
/// How long a failed push waits before the same text is tried again (when trying again
/// cannot double it: a command that failed, a stdin that was gone).
const RETRY: Duration = Duration::from_secs(60);
/// How long the desk's command may take.
const COMMAND_DEADLINE: Duration = Duration::from_secs(30);

/// What a waiter is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WaitOutcome {
    /// Wake the session with this text.
    Deliver(String),
    /// Leave quietly: a newer waiter, a turn started, the session ended.
    Leave(&'static str),
}

/// Claude Code ends a turn anyway after eight Stop-hook blocks in a row.
const MAX_HANDOVERS_IN_A_ROW: u32 = 7;

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How an item is told: its text, and the transition that records it was told (to `to`,
/// the session that takes it, if a session does). The asker's file parts are saved (if a
/// crash came between the commit and the save) before the text names them.
fn telling(t: &Task, to: Option<&SessionId>, files: &crate::files::Files) -> (Event, String) {
    if t.cancel_to_tell() {
        (Event::CancelTold, delivery::cancel_text(t))
    } else {
        if let Err(e) = files.save_inbound(t) {
            tracing::warn!(task = %t.id, error = %e, "the asker's files could not be saved");
        }
        (
            Event::Delivered { to: to.cloned() },
            delivery::task_text(t, files.root()),
        )
    }
}

/// Several texts for a session, as one message.
fn joined(texts: impl IntoIterator<Item = String>) -> String {
    texts.into_iter().collect::<Vec<_>>().join("\n\n---\n\n")
}

/// A desk name made from a directory's last component.
fn desk_name_for(dir: &Path) -> String {
    let base = dir
        .file_name()
        .map(|s| s.to_string_lossy().to_lowercase())
        .unwrap_or_default();
    let mut name: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name = name.trim_matches('-').chars().take(40).collect();
    if name.is_empty() {
        "desk".to_owned()
    } else {
        name
    }
}

impl Sessions {
    pub fn new(
        tasks: Tasks,
        stop: tokio::sync::watch::Receiver<bool>,
        notifier: Arc<dyn crate::notify::Notifier>,
        launch: Option<LaunchConfig>,
    ) -> Self {
        Self {
            tasks,
            inner: Arc::new(Inner::default()),
            launch: launch.map(Arc::new),
            launched: Arc::default(),
            stop,
            notifier,
        }
    }

    pub(crate) fn launch_config(&self) -> Option<&LaunchConfig> {
        self.launch.as_deref()
    }

    pub(crate) fn launched(&self) -> &Launched {
        &self.launched
    }

    pub(crate) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stop.clone()
    }

    pub fn notifier(&self) -> &Arc<dyn crate::notify::Notifier> {
        &self.notifier
    }

    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Anything may have changed (an owner action): every follower looks again.
    pub fn poke(&self) {
        self.inner.interest.tell_all();
        let _ = self.inner.changes.send(Change::All);
    }

    /// A task of `desk` (or the desk) changed: its session's waiter and the loops look.
    pub fn desk_changed(&self, desk: &DeskName) {
        self.inner.interest.tell(&Interested::Desk(desk.clone()));
        let _ = self.inner.changes.send(Change::Desk(desk.clone()));
    }

    /// Session `id` changed, in a way the owner may see: its waiter and the loops look.
    pub(crate) fn session_changed(&self, id: &SessionId) {
        self.inner.shown.0.send_modify(|g| *g = g.wrapping_add(1));
        self.session_touched(id);
    }

    /// Session `id` changed in a way only its own followers care about (a waiter came).
    fn session_touched(&self, id: &SessionId) {
        self.inner.interest.tell(&Interested::Session(id.clone()));
        let _ = self.inner.changes.send(Change::Session(id.clone()));
    }

    /// Changes when a session changed in a way the owner sees (its activity, what it asks);
    /// the owner's event stream and the app follow it.
    pub fn session_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.inner.shown.0.subscribe()
    }

    /// Every change after it subscribed, by what changed (the delivery loop, the watchdog).
    pub fn changes(&self) -> broadcast::Receiver<Change> {
        self.inner.changes.subscribe()
    }

    /// How many times a waiter has woken to look again, since the start.
    pub fn waiter_wakes(&self) -> u64 {
        self.inner
            .waiter_wakes
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Take the session's recorded watchdog message, if it has one not yet delivered.
    /// With `seq`, only the message of that number (the one that was sent): a newer one
    /// stays to be delivered.
    pub async fn claim_note(
        &self,
        id: &SessionId,
        seq: Option<u64>,
    ) -> Result<Option<String>, StoreError> {
        let id = id.clone();
        self.tasks
            .blocking(move |s, _| {
                let taken = s.update_session(&id, move |session| {
                    let ours = session
                        .watch
                        .pending
                        .as_ref()
                        .is_some_and(|(n, _)| seq.is_none_or(|seq| *n == seq));
                    let note = if ours {
                        session.watch.pending.take().map(|(_, text)| text)
                    } else {
                        None
                    };
                    (note.is_some(), note)
                })?;
                Ok(taken.and_then(|(_, note)| note))
            })
            .await
    }

    /// Relay every task change to the followers of its desk until `stop`.
    pub async fn follow_tasks(self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut feed = self.tasks.feed();
        let mut pokes = self.tasks.pokes();
        loop {
            tokio::select! {
                r = feed.recv() => match r {
                    Ok(task) => self.desk_changed(&task.desk),
                    Err(broadcast::error::RecvError::Lagged(_)) => self.poke(),
                    Err(broadcast::error::RecvError::Closed) => return,
                },
                _ = pokes.recv() => self.poke(),
                _ = stop.wait_for(|s| *s) => return,
            }
        }
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
        let (id, cwd) = (id.clone(), cwd.to_owned());
        self.tasks
            .blocking(move |s, now| {
                let merge = reach.clone();
                let updated = s.update_session(&id, move |existing| {
                    let changed = merge != Reach::default() && existing.reach != merge;
                    if changed {
                        existing.reach.merge(merge);
                        existing.updated_at = now;
                    }
                    (changed, ())
                })?;
                if let Some((session, ())) = updated {
                    return Ok(session);
                }
                let (desk, new_desk) = resolve_desk(s, &cwd, desk_hint, agent)?;
                let created = new_desk.as_ref().map(|d| d.name.clone());
                let mut session = Session::new(id, desk, agent, cwd, now);
                session.reach = reach;
                let session = s.add_session(session, new_desk, now)?;
                if let Some(name) = created.filter(|n| *n == session.desk) {
                    tracing::info!(desk = %name, dir = %session.cwd.display(), "created a desk for a new session");
                }
                Ok(session)
            })
            .await
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
        let session = self
            .tasks
            .blocking(move |s, now| {
                let updated = s.update_session(&id2, move |session| {
                    for edge in edges {
                        session.apply(edge, now);
                    }
                    (true, ())
                })?;
                updated
                    .map(|(session, ())| session)
                    .ok_or_else(|| StoreError::NoSuchSession(id2.to_string()))
            })
            .await?;
        self.session_changed(id);
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
        let reconciled = self
            .tasks
            .blocking(move |s, now| reconcile_stored(s, &id2, now))
            .await?;
        // Only a session whose activity moved is news to anyone.
        if reconciled
            .as_ref()
            .is_some_and(|(session, before)| session.activity != *before)
        {
            self.session_changed(id);
        }
        Ok(reconciled.map(|(session, _)| session))
    }

    /// Who started the turn that is starting: Taskkeeper, if it was expecting one.
    pub fn take_expected(&self, id: &SessionId) -> bool {
        lock(&self.inner.expecting).remove(id)
    }

    fn expect_turn(&self, id: &SessionId) {
        lock(&self.inner.expecting).insert(id.clone());
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
    /// INPUT_REQUIRED, which is for the asker).
    pub async fn mark_owner_wait(&self, desk: &DeskName, waiting: bool) {
        self.for_desk_tasks(
            desk,
            |t| {
                if waiting {
                    t.state() == TaskState::Working
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

    /// What the desk's session has still to be told, without claiming it.
    async fn undelivered(&self, desk: &DeskName) -> Result<Vec<Task>, StoreError> {
        let mut due: Vec<Task> = self
            .desk_unqueued_tasks(desk)
            .await?
            .into_iter()
            .filter(Task::to_deliver)
            .collect();
        let ended = self
            .tasks
            .list(TaskFilter {
                state: StateFilter::Ended,
                desk: Some(desk.clone()),
                limit: Some(50),
                ..Default::default()
            })
            .await?;
        due.extend(ended.into_iter().filter(Task::cancel_to_tell));
        // Cancel notices first (stop doing that), then tasks oldest first.
        due.sort_by_key(|t| (t.state() != TaskState::Canceled, t.created_at));
        Ok(due)
    }

    /// Claim everything `session`'s desk has to tell it and return its text; `None` when
    /// there is nothing (or someone else claimed it first).
    pub async fn claim(&self, session: &Session) -> Result<Option<String>, StoreError> {
        let items = self.undelivered(&session.desk).await?;
        let texts = self.record_told(&items, Some(&session.id)).await?;
        Ok((!texts.is_empty()).then(|| joined(texts)))
    }

    /// Record that `items` were told, each as it was read: the one rule of delivery, a
    /// transition that succeeds once, and only at the version that was told. Returns the
    /// texts of the items recorded now; one that someone else recorded first, or that changed
    /// meanwhile (a follow-up), is left to be told (again, as it is now).
    async fn record_told(
        &self,
        items: &[Task],
        to: Option<&SessionId>,
    ) -> Result<Vec<String>, StoreError> {
        let mut texts = Vec::new();
        for t in items {
            let (event, text) = telling(t, to, self.tasks.files());
            match self.tasks.apply_at(&t.id, t.version, event).await {
                Ok(c) if c.changed => texts.push(text),
                Ok(_) | Err(StoreError::Transition(_) | StoreError::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(texts)
    }

    /// The Stop hook's handover: claim what is waiting, to continue the turn with it, unless
    /// Claude Code would override this block anyway. Called while the session is still busy
    /// (before its turn-end edge is stored), so the waiter this same Stop starts cannot
    /// claim it first.
    pub async fn handover(&self, session: &Session) -> Result<Option<String>, StoreError> {
        let in_a_row = *lock(&self.inner.handovers).get(&session.id).unwrap_or(&0);
        if in_a_row >= MAX_HANDOVERS_IN_A_ROW {
            lock(&self.inner.handovers).remove(&session.id);
            return Ok(None);
        }
        let text = self.claim(session).await?;
        if text.is_some() {
            *lock(&self.inner.handovers)
                .entry(session.id.clone())
                .or_insert(0) += 1;
        } else {
            lock(&self.inner.handovers).remove(&session.id);
        }
        Ok(text)
    }

    /// A turn the owner typed resets the handover count.
    pub fn owner_wrote(&self, id: &SessionId) {
        lock(&self.inner.handovers).remove(id);
    }

    /// Whether an asyncRewake waiter of `id` is parked (tests wait on it instead of a sleep).
    pub fn has_waiter(&self, id: &SessionId) -> bool {
        lock(&self.inner.waiting).contains(id)
    }

    /// The asyncRewake waiter: wait until the idle session has something to be told, then
    /// claim it; leave when superseded, when a turn starts, or when the session ends.
    pub async fn wait(&self, id: &SessionId) -> Result<WaitOutcome, StoreError> {
        let generation = {
            let mut waiters = lock(&self.inner.waiters);
            let g = waiters.entry(id.clone()).or_insert(0);
            *g += 1;
            *g
        };
        let turn0 = *lock(&self.inner.turns).get(id).unwrap_or(&0);
        lock(&self.inner.waiting).insert(id.clone());
        let _registered = Waiting(&self.inner, id.clone());
        // Let an older waiter see it was superseded (before following the session, so this
        // waiter does not wake for its own arrival).
        self.session_touched(id);
        // Only its own session and its desk's tasks concern a waiter; the desk is followed
        // from the first read of the session on.
        let mut own = self.inner.interest.follow(Interested::Session(id.clone()));
        let mut desk: Option<(DeskName, watch::Receiver<u64>)> = None;
        let mut first = true;
        loop {
            own.borrow_and_update();
            if let Some((_, rx)) = desk.as_mut() {
                rx.borrow_and_update();
            }
            if !first {
                self.inner
                    .waiter_wakes
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            first = false;
            if lock(&self.inner.waiters).get(id) != Some(&generation) {
                return Ok(WaitOutcome::Leave("a newer waiter took over"));
            }
            if *lock(&self.inner.turns).get(id).unwrap_or(&0) != turn0 {
                return Ok(WaitOutcome::Leave("the session started a turn"));
            }
            let session = match self.tasks.get_session(id).await? {
                Some(s) if s.is_live() => s,
                _ => return Ok(WaitOutcome::Leave("the session ended")),
            };
            if desk.as_ref().is_none_or(|(d, _)| *d != session.desk) {
                // Followed before the claim below reads the desk: nothing falls between.
                let rx = self
                    .inner
                    .interest
                    .follow(Interested::Desk(session.desk.clone()));
                desk = Some((session.desk.clone(), rx));
            }
            if session.reach.headless {
                return Ok(WaitOutcome::Leave(
                    "Taskkeeper speaks to this session on its stdin",
                ));
            }
            if session.activity == taskkeeper_core::Activity::Idle {
                let note = self.claim_note(id, None).await?;
                let tasks = self.claim(&session).await?;
                let text: Vec<String> = note.into_iter().chain(tasks).collect();
                if !text.is_empty() {
                    self.expect_turn(id);
                    return Ok(WaitOutcome::Deliver(joined(text)));
                }
            }
            // The cap lets a level signal (a killed process) be noticed while nothing else
            // happens.
            let mut stop = self.stop.clone();
            let changed = async {
                match desk.as_mut() {
                    Some((_, rx)) => tokio::select! {
                        _ = own.changed() => {}
                        _ = rx.changed() => {}
                    },
                    None => {
                        let _ = own.changed().await;
                    }
                }
            };
            tokio::select! {
                _ = tokio::time::timeout(Duration::from_secs(30), changed) => {}
                _ = stop.wait_for(|s| *s) => return Ok(WaitOutcome::Leave("the daemon is stopping")),
            }
            self.reconcile(id).await?;
        }
    }
}

/// What a delivery pass looks at.
#[derive(Debug)]
pub(crate) enum Look {
    All,
    Some {
        desks: HashSet<DeskName>,
        sessions: HashSet<SessionId>,
    },
}

impl Default for Look {
    fn default() -> Self {
        Look::Some {
            desks: HashSet::new(),
            sessions: HashSet::new(),
        }
    }
}

impl Look {
    /// Nothing to look at.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Look::Some { desks, sessions } if desks.is_empty() && sessions.is_empty())
    }

    /// Take in one change as the changes feed answered.
    pub(crate) fn add(&mut self, change: Result<Change, broadcast::error::RecvError>) {
        let Look::Some { desks, sessions } = self else {
            return;
        };
        match change {
            Ok(Change::Desk(d)) => {
                desks.insert(d);
            }
            Ok(Change::Session(id)) => {
                sessions.insert(id);
            }
            // All, or fell behind: look at everything. (Closed: the daemon is going.)
            Ok(Change::All) | Err(_) => *self = Look::All,
        }
    }
}

/// Whom a push goes to: a live session, or a desk with a command and no live session.
#[derive(Debug, Clone)]
struct Target {
    session: Option<Session>,
    desk: Desk,
}

impl Target {
    /// The key of what is being pushed to it.
    fn key(&self) -> String {
        match &self.session {
            Some(s) => format!("session:{}", s.id),
            None => format!("desk:{}", self.desk.name),
        }
    }
}

/// What one push carries: the session's recorded watchdog message and the desk's items.
#[derive(Debug, Clone)]
struct Parcel {
    note: Option<(u64, String)>,
    items: Vec<Task>,
}

impl Parcel {
    fn text(&self, files: &crate::files::Files) -> String {
        let texts: Vec<String> = self
            .note
            .iter()
            .map(|(_, text)| text.clone())
            .chain(self.items.iter().map(|t| telling(t, None, files).1))
            .collect();
        joined(texts)
    }

    /// Identifies the content, so the same parcel is never pushed twice.
    fn key(&self) -> Vec<String> {
        self.items
            .iter()
            .map(|t| format!("{}@{}", t.id, t.version))
            .chain(self.note.iter().map(|(seq, _)| format!("note#{seq}")))
            .collect()
    }
}

/// How a push ended.
enum Pushed {
    /// Confirmed: the parcel is claimed.
    Delivered,
    /// Not confirmed, and the text may have landed (a paste): never send it again.
    Unconfirmed(String),
    /// Not delivered: it may be tried again later.
    Failed(String),
}

impl Sessions {
    /// The methods that can reach `session` right now, best first ([`delivery::ranked`]).
    fn methods(&self, session: &Session, desk: &Desk) -> Vec<Method> {
        delivery::ranked(Means {
            at_stop: false,
            waiter: lock(&self.inner.waiting).contains(&session.id),
            stdin: self.launched.holds(&session.id),
            // Without a pid the pane's owner cannot be checked: it is never pasted into.
            tmux_pane: session.reach.tmux_pane.is_some()
                && session.reach.tmux_socket.is_some()
                && session.reach.pid.is_some(),
            command: desk.deliver_command.is_some(),
        })
    }

    /// Pushes what idle sessions (and desks with a command and no live session) have to be
    /// told through the methods Taskkeeper drives, best first, falling back to the next
    /// method when one is not confirmed. Runs until `stop`.
    ///
    /// The first pass looks at every desk; after it, a pass looks only at the desks and
    /// sessions that changed since the one before (a timer's recheck looks at all again).
    pub async fn deliver_loop(self) {
        let mut stop = self.stop.clone();
        // Subscribed before the first pass: a change while a pass runs goes to the next one.
        let mut changes = self.changes();
        let mut look = Look::All;
        loop {
            let recheck = match self.deliver_pass(std::mem::take(&mut look)).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "delivery pass failed");
                    look = Look::All;
                    Some(Duration::from_secs(30))
                }
            };
            tokio::select! {
                r = changes.recv() => look.add(r),
                () = async {
                    match recheck {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                } => look = Look::All,
                _ = stop.wait_for(|s| *s) => return,
            }
            // Everything that came meanwhile goes into the same pass.
            crate::watchdog::drain(&mut changes, &mut look);
        }
    }

    /// One pass over what `look` names; returns when to look again for a session that was
    /// too fresh to paste into.
    async fn deliver_pass(&self, look: Look) -> Result<Option<Duration>, StoreError> {
        let now = self.tasks.now();
        let (sessions, desks) = self
            .tasks
            .blocking(move |s, _| match look {
                Look::All => Ok((s.sessions(None)?, s.desks()?)),
                Look::Some { desks, sessions } => {
                    let mut names = desks;
                    for id in &sessions {
                        if let Some(session) = s.session(id)? {
                            names.insert(session.desk);
                        }
                    }
                    let (mut all, mut found) = (Vec::new(), Vec::new());
                    for name in names {
                        if let Some(desk) = s.desk(name.as_str())? {
                            all.extend(s.sessions(Some(&name))?);
                            found.push(desk);
                        }
                    }
                    Ok((all, found))
                }
            })
            .await?;
        let desks: HashMap<DeskName, Desk> =
            desks.into_iter().map(|d| (d.name.clone(), d)).collect();
        let mut recheck: Option<Duration> = None;
        let mut seen_desks = HashSet::new();
        let mut targets = Vec::new();
        for session in sessions {
            // The newest live session of a desk is the one that works there.
            if !session.is_live() || !seen_desks.insert(session.desk.clone()) {
                continue;
            }
            let Some(desk) = desks.get(&session.desk) else {
                continue;
            };
            if session.activity != taskkeeper_core::Activity::Idle {
                continue;
            }
            let methods = self.methods(&session, desk);
            match methods.first() {
                // A waiter (or nothing) answers for this session.
                None | Some(Method::Handover | Method::Waiter) => continue,
                Some(Method::Paste) => {
                    let young = now.since(session.since);
                    if young < SETTLE {
                        recheck = Some(recheck.map_or(SETTLE - young, |r| r.min(SETTLE - young)));
                        continue;
                    }
                }
                Some(Method::Stdin | Method::Command) => {}
            }
            targets.push((
                Target {
                    session: Some(session),
                    desk: desk.clone(),
                },
                methods,
            ));
        }
        // A desk whose agent Taskkeeper reaches only through its command needs no session.
        for desk in desks.values() {
            if desk.deliver_command.is_some() && !seen_desks.contains(&desk.name) {
                targets.push((
                    Target {
                        session: None,
                        desk: desk.clone(),
                    },
                    vec![Method::Command],
                ));
            }
        }
        for (target, methods) in targets {
            let parcel = Parcel {
                note: target
                    .session
                    .as_ref()
                    .and_then(|s| s.watch.pending.clone()),
                items: self.undelivered(&target.desk.name).await?,
            };
            if parcel.items.is_empty() && parcel.note.is_none() {
                continue;
            }
            let (target_key, mut parcel_key) = (target.key(), parcel.key());
            // A changed command is a new way in: what failed through the old one is tried.
            if methods.contains(&Method::Command)
                && let Some(c) = &target.desk.deliver_command
            {
                parcel_key.push(format!("command:{c}"));
            }
            if lock(&self.inner.pushed).get(&target_key) == Some(&parcel_key)
                || !lock(&self.inner.in_flight).insert(target_key.clone())
            {
                continue;
            }
            lock(&self.inner.pushed).insert(target_key.clone(), parcel_key.clone());
            let this = self.clone();
            tokio::spawn(async move {
                let desk = target.desk.name.clone();
                this.push(target, methods, parcel, target_key.clone(), parcel_key)
                    .await;
                lock(&this.inner.in_flight).remove(&target_key);
                // What arrived while this push was on its way goes next.
                this.desk_changed(&desk);
            });
        }
        Ok(recheck)
    }

    /// Try each method in turn until one is confirmed.
    async fn push(
        &self,
        target: Target,
        methods: Vec<Method>,
        parcel: Parcel,
        target_key: String,
        parcel_key: Vec<String>,
    ) {
        let text = parcel.text(self.tasks.files());
        let mut may_have_landed = false;
        for method in methods.into_iter().filter(|m| m.is_push()) {
            let outcome = match (method, &target.session) {
                (Method::Stdin, Some(session)) => self.send_stdin(session, &text).await,
                (Method::Paste, Some(session)) => self.paste(session, &text).await,
                (Method::Command, session) => {
                    self.run_command(&target.desk, session.as_ref(), &parcel, &text)
                        .await
                }
                _ => continue,
            };
            match outcome {
                Pushed::Delivered => {
                    if let Err(e) = self.claim_parcel(target.session.as_ref(), &parcel).await {
                        tracing::warn!(target = %target_key, error = %e, "claiming a delivered parcel failed");
                    }
                    tracing::info!(target = %target_key, method = method.as_str(), "delivered");
                    return;
                }
                Pushed::Unconfirmed(why) => {
                    may_have_landed = true;
                    tracing::warn!(target = %target_key, method = method.as_str(), %why, "delivery not confirmed; trying the next method");
                }
                Pushed::Failed(why) => {
                    tracing::warn!(target = %target_key, method = method.as_str(), %why, "delivery failed; trying the next method");
                }
            }
        }
        if !may_have_landed {
            // Nothing landed: try the same text again later (unless it changed meanwhile).
            let this = self.clone();
            let desk = target.desk.name.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RETRY).await;
                let mut pushed = lock(&this.inner.pushed);
                if pushed.get(&target_key) == Some(&parcel_key) {
                    pushed.remove(&target_key);
                }
                drop(pushed);
                this.desk_changed(&desk);
            });
        }
    }

    /// Claim exactly what was delivered: the watchdog message of that number, and each item
    /// at the version that was sent (a task changed meanwhile is told again).
    async fn claim_parcel(
        &self,
        session: Option<&Session>,
        parcel: &Parcel,
    ) -> Result<(), StoreError> {
        if let (Some(session), Some((seq, _))) = (session, &parcel.note) {
            self.claim_note(&session.id, Some(*seq)).await?;
        }
        self.record_told(&parcel.items, session.map(|s| &s.id))
            .await?;
        Ok(())
    }

    /// Has the session started a turn since `turn0` (within [`VERIFY`])?
    async fn turn_started(&self, id: &SessionId, turn0: u64) -> bool {
        let deadline = tokio::time::Instant::now() + VERIFY;
        let mut own = self.inner.interest.follow(Interested::Session(id.clone()));
        while tokio::time::Instant::now() < deadline {
            own.borrow_and_update();
            if *lock(&self.inner.turns).get(id).unwrap_or(&0) != turn0 {
                return true;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), own.changed()).await;
        }
        false
    }

    /// A user message on the stdin of a session Taskkeeper launched. Written is delivered:
    /// the session reads its stdin in order, however long it takes to start (a session still
    /// starting up begins its turn late, not never); the turn it starts is only logged.
    async fn send_stdin(&self, session: &Session, text: &str) -> Pushed {
        let text = &delivery::terminal_safe(text);
        let turn0 = *lock(&self.inner.turns).get(&session.id).unwrap_or(&0);
        self.expect_turn(&session.id);
        if !self.launched.send(&session.id, text) {
            lock(&self.inner.expecting).remove(&session.id);
            return Pushed::Failed("the session's stdin is closed".into());
        }
        if !self.turn_started(&session.id, turn0).await {
            tracing::info!(session = %session.id, "written to the session's stdin; no turn has started yet");
        }
        Pushed::Delivered
    }

    /// The tmux paste: the text (bracketed), a separate Enter, and the turn it starts; Enter
    /// is pressed once more if no turn starts. Only into a pane of the session's own process,
    /// checked right before each paste: a later report may have moved the reach elsewhere.
    async fn paste(&self, session: &Session, text: &str) -> Pushed {
        let (Some(pane), Some(socket)) = (&session.reach.tmux_pane, &session.reach.tmux_socket)
        else {
            return Pushed::Failed("no tmux pane is known".into());
        };
        let pane = &match Self::owned_pane(session, socket, pane).await {
            Ok(pane) => pane,
            Err(why) => {
                tracing::warn!(session = %session.id, %pane, %socket, %why, "refused to paste into the tmux pane");
                return Pushed::Failed(format!("refused tmux pane {pane}: {why}"));
            }
        };
        let text = &delivery::terminal_safe(text);
        let turn0 = *lock(&self.inner.turns).get(&session.id).unwrap_or(&0);
        self.expect_turn(&session.id);
        let pasted = async {
            tmux(socket, &["set-buffer", "-b", "taskkeeper", "--", text]).await?;
            tmux(
                socket,
                &["paste-buffer", "-p", "-d", "-b", "taskkeeper", "-t", pane],
            )
            .await
        };
        if let Err(e) = pasted.await {
            lock(&self.inner.expecting).remove(&session.id);
            return Pushed::Failed(e);
        }
        for attempt in 0..2 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            if let Err(e) = tmux(socket, &["send-keys", "-t", pane, "Enter"]).await {
                lock(&self.inner.expecting).remove(&session.id);
                return Pushed::Unconfirmed(e);
            }
            if self.turn_started(&session.id, turn0).await {
                tracing::debug!(session = %session.id, attempt, "the paste started a turn");
                return Pushed::Delivered;
            }
        }
        lock(&self.inner.expecting).remove(&session.id);
        Pushed::Unconfirmed(format!(
            "no turn started in pane {pane} after the paste and two Enters"
        ))
    }

    /// The pane (as tmux's own `%id`, so the paste goes where the check looked) when it
    /// belongs to the session's process: the pane's process is the session's pid or one of
    /// its ancestors (Claude Code runs in the pane, or under a shell that does). A hook names
    /// its pane and pid as it likes; without this, a report naming someone else's pane (a
    /// shell) would have a task's words typed into it and run.
    async fn owned_pane(session: &Session, socket: &str, pane: &str) -> Result<String, String> {
        let Some(pid) = session.reach.pid else {
            return Err(
                "the session reported no pid, so the pane's owner cannot be checked".into(),
            );
        };
        let shown = tmux(
            socket,
            &[
                "display-message",
                "-p",
                "-t",
                pane,
                "#{pane_id} #{pane_pid}",
            ],
        )
        .await?;
        let (pane_id, pane_pid) = shown
            .trim()
            .split_once(' ')
            .and_then(|(id, p)| Some((id.to_owned(), p.parse::<u32>().ok()?)))
            .ok_or_else(|| format!("tmux did not say which process runs the pane: {shown:?}"))?;
        let line = process_and_ancestors(pid)?;
        if line.contains(&pane_pid) {
            Ok(pane_id)
        } else {
            Err(format!(
                "the pane's process {pane_pid} is neither the session's process {pid} nor one of its ancestors"
            ))
        }
    }

    /// The desk's command, run by `sh -c` in the desk's directory with the text on its stdin
    /// and the task ids, desk and session in its environment; exit status 0 is the
    /// confirmation.
    async fn run_command(
        &self,
        desk: &Desk,
        session: Option<&Session>,
        parcel: &Parcel,
        text: &str,
    ) -> Pushed {
        let Some(command) = &desk.deliver_command else {
            return Pushed::Failed("the desk has no command".into());
        };
        let text = &delivery::terminal_safe(text);
        let ids: Vec<&str> = parcel.items.iter().map(|t| t.id.as_str()).collect();
        if let Some(s) = session {
            self.expect_turn(&s.id);
        }
        let run = run_shell(
            command,
            &desk.dir,
            &[
                ("TASKKEEPER_DESK", desk.name.as_str()),
                ("TASKKEEPER_TASKS", &ids.join(" ")),
                ("TASKKEEPER_SESSION", session.map_or("", |s| s.id.as_str())),
            ],
            text,
        )
        .await;
        match run {
            Ok(()) => Pushed::Delivered,
            Err(why) => {
                if let Some(s) = session {
                    lock(&self.inner.expecting).remove(&s.id);
                }
                Pushed::Failed(format!("the desk's command `{command}`: {why}"))
            }
        }
    }
}

/// Run `command` with `sh -c`, `text` on its stdin, within [`COMMAND_DEADLINE`].
async fn run_shell(
    command: &str,
    dir: &Path,
    env: &[(&str, &str)],
    text: &str,
) -> Result<(), String> {
    use tokio::io::AsyncWriteExt as _;
    let mut child = tokio::process::Command::new("sh");
    crate::child_env::scrub_secrets(&mut child);
    let mut child = child
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start it in {}: {e}", dir.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        // A command that does not read its stdin is fine: a closed pipe is not an error.
        let _ = stdin.write_all(text.as_bytes()).await;
    }
    let out = tokio::time::timeout(COMMAND_DEADLINE, child.wait_with_output())
        .await
        .map_err(|_| format!("still running after {COMMAND_DEADLINE:?}; killed"))?
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let tail: String = stderr
            .trim()
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        Err(format!("exited with {}: {tail}", out.status))
    }
}

/// `pid` and its ancestors, nearest first, up to the first process (or a bound, against a
/// table that changes while it is read).
#[cfg(target_os = "linux")]
fn process_and_ancestors(pid: u32) -> Result<Vec<u32>, String> {
    let mut line = vec![pid];
    let mut at = pid;
    while at > 1 && line.len() < 256 {
        let stat = std::fs::read_to_string(format!("/proc/{at}/stat"))
            .map_err(|e| format!("cannot read process {at}: {e}"))?;
        // Field 4 is the parent; the name (field 2) may hold spaces and parentheses, so
        // the fields are counted after its closing one.
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
            .ok_or_else(|| format!("cannot read the parent of process {at}"))?;
        if parent == 0 || line.contains(&parent) {
            break;
        }
        line.push(parent);
        at = parent;
    }
    Ok(line)
}

/// Elsewhere there is no /proc to read a process's parent from, and a pane that cannot be
/// checked is not pasted into: the waiter or the desk's command delivers instead.
#[cfg(not(target_os = "linux"))]
fn process_and_ancestors(_pid: u32) -> Result<Vec<u32>, String> {
    Err("a pane's owner can only be checked on Linux".into())
}

/// Run one tmux command against the session's own tmux server; what it printed.
async fn tmux(socket: &str, args: &[&str]) -> Result<String, String> {
    let mut command = tokio::process::Command::new("tmux");
    crate::child_env::scrub_secrets(&mut command);
    let out = command
        .arg("-S")
        .arg(socket)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run tmux: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "tmux {}: {}",
            args.first().unwrap_or(&""),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Tasks {
    pub async fn get_session(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        let id = id.clone();
        self.blocking(move |s, _| s.session(&id)).await
    }
}

/// The desk a new session works at: the desk its hint names, else the deepest desk whose
/// directory holds `cwd`; or, when there is none, the desk to create for it (the hint's
/// name, else one made from the directory). The store creates it together with the session
/// (`Store::add_session`), which also bounds how many desks sessions may create.
fn resolve_desk(
    s: &taskkeeper_core::Store,
    cwd: &Path,
    hint: Option<String>,
    agent: AgentKind,
) -> Result<(DeskName, Option<NewDesk>), StoreError> {
    let desks = s.desks()?;
    if let Some(name) = hint.filter(|h| !h.trim().is_empty()) {
        if let Some(d) = desks.iter().find(|d| d.name.as_str() == name) {
            return Ok((d.name.clone(), None));
        }
        let parsed: DeskName = name
            .parse()
            .map_err(|_| StoreError::NoSuchDesk(name.clone()))?;
        let desk = NewDesk {
            name: parsed.clone(),
            agent,
            dir: cwd.to_owned(),
            deliver_command: None,
        };
        return Ok((parsed, Some(desk)));
    }
    if let Some(d) = desks
        .iter()
        .filter(|d| cwd.starts_with(&d.dir))
        .max_by_key(|d| d.dir.components().count())
    {
        return Ok((d.name.clone(), None));
    }
    if !s.settings()?.create_desks {
        return Err(StoreError::NoSuchDesk(format!(
            "(none covers {}; add one with `taskkeeper desk add NAME --dir {}`)",
            cwd.display(),
            cwd.display()
        )));
    }
    let base = desk_name_for(cwd);
    let taken: HashSet<&str> = desks.iter().map(|d| d.name.as_str()).collect();
    let name = std::iter::once(base.clone())
        .chain((2..).map(|n| format!("{base}-{n}")))
        .find(|n| !taken.contains(n.as_str()))
        .unwrap_or(base);
    let parsed: DeskName = name
        .parse()
        .map_err(|_| StoreError::NoSuchDesk(name.clone()))?;
    let desk = NewDesk {
        name: parsed.clone(),
        agent,
        dir: PathBuf::from(cwd),
        deliver_command: None,
    };
    Ok((parsed, Some(desk)))
}

/// Correct a stored session from its level signal in one step: the level is read and the
/// decision made inside the same write as the update, so a hook that changed the session
/// meanwhile is never overwritten. Returns the session and its activity before.
pub fn reconcile_stored(
    s: &taskkeeper_core::Store,
    id: &SessionId,
    now: taskkeeper_core::Timestamp,
) -> Result<Option<(Session, taskkeeper_core::Activity)>, StoreError> {
    s.update_session(id, move |session| {
        let before = session.activity;
        if let Some(level) = level_of(session) {
            session.reconcile(level, now);
        }
        (session.activity != before, before)
    })
}

/// A level signal for a session, where one can be read: the process is gone, or the agent's
/// own status file says idle, busy or waiting. The file is written a moment after the hooks
/// fire, so a file older than the session's last change is stale and says nothing.
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

#[cfg(test)]
mod tests {
    #[test]
    fn desk_names_come_from_the_directory() {
        assert_eq!(
            super::desk_name_for(std::path::Path::new("/home/me/My Project")),
            "my-project"
        );
        assert_eq!(super::desk_name_for(std::path::Path::new("/")), "desk");
    }
}
