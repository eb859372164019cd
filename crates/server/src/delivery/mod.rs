//! Getting a task's text into a session, and the one rule every way in obeys: an item (a task,
//! or a cancel notice) is marked delivered by a transition in the store, at the version that
//! was told, which succeeds once (`Delivery::record_told`); whoever wins that claim (the Stop
//! hook's handover, the waiter, the push loop) delivers the text and nobody else does. Which
//! means is tried first, and which next, is [`taskkeeper_core::delivery::ranked`]'s decision,
//! among the ways the session's kind of agent has ([`Delivery::ranked`]).
//!
//! What they write comes from askers, foreign agents: every pushed text goes through
//! [`taskkeeper_core::delivery::terminal_safe`] at the write, so no escape sequence reaches a
//! terminal or a stdin.

#[cfg(unix)]
mod command;
#[cfg(unix)]
mod inbox;
pub(crate) mod process;
mod push;
mod stdin;
mod tmux;
mod waiter;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use taskkeeper_core::delivery::{self, Means, Method};
use taskkeeper_core::session::{Session, SessionId};
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{AgentKind, Desk, DeskName, Event, StoreError, Task, TaskState};

use crate::sessions::{Sessions, lock};

pub(crate) use push::Pushed;
pub use waiter::WaitOutcome;

/// Claude Code ends a turn anyway after eight Stop-hook blocks in a row.
pub(crate) const MAX_HANDOVERS_IN_A_ROW: u32 = 7;

/// The delivery service over the sessions registry: every way a task's text gets into a
/// session, and the state only delivery keeps (who waits, who is expected to start a turn,
/// what is on its way). Hook intakes, the launcher and the daemon's push loop hold one.
#[derive(Clone, Debug)]
pub struct Delivery {
    sessions: Sessions,
    state: Arc<State>,
    /// The stdins of the sessions Taskkeeper launched (the launcher's registry).
    stdins: Arc<dyn Stdins>,
    /// The ways into a session of each kind, best first: its adapter's, given by the daemon,
    /// so delivery knows no agent.
    ways_in: WaysIn,
    /// The agent's own server as a way into an idle session ([`Method::AppServer`]).
    app_server: Arc<dyn AppServerWay>,
}

/// A way into an idle session that the agent's own server offers (Codex's app server,
/// [`Method::AppServer`]): the agents provide it (`agents::codex::wake`), delivery asks it
/// and keeps the claim, so delivery needs nothing of the agents.
pub(crate) trait AppServerWay: Send + Sync + std::fmt::Debug {
    /// Start a turn in `session` with `text` (already made terminal-safe or not: the way
    /// makes it so); `written` is called once the request is written, from when a turn may
    /// start.
    fn start_turn<'a>(
        &'a self,
        session: &'a Session,
        text: &'a str,
        written: &'a (dyn Fn() + Send + Sync),
    ) -> futures_util::future::BoxFuture<'a, Pushed>;
}

/// The ways into a session of a kind of agent, best first (an adapter's `ways_in`).
pub(crate) type WaysIn = fn(AgentKind) -> &'static [Method];

/// What delivery remembers in this process (none of it is stored: a restart starts over,
/// and the store's claim rule keeps that safe).
#[derive(Debug, Default)]
pub(crate) struct State {
    /// How often a waiter woke and looked again (tests count it).
    waiter_wakes: AtomicU64,
    /// The newest waiter's generation per session: an older waiter is superseded.
    waiters: Mutex<HashMap<SessionId, u64>>,
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
    /// Numbers the tmux pastes, so each has a buffer of its own.
    pastes: AtomicU64,
    /// Why the latest push to each session did not deliver, until something is delivered to
    /// it: the owner sees it on the session.
    problems: Mutex<HashMap<SessionId, DeliveryProblem>>,
}

/// Why a push to a session did not deliver (a pane refused, a command that failed), as the
/// owner sees it on the session until something is delivered to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryProblem {
    /// The way in that was tried.
    pub method: Method,
    pub why: String,
    pub at: taskkeeper_core::Timestamp,
}

/// The stdins Taskkeeper holds, of the sessions it launched: the launcher keeps them
/// (`agents::launched`), delivery only asks and writes, so delivery needs nothing of the
/// agents.
pub(crate) trait Stdins: Send + Sync + std::fmt::Debug {
    /// Whether Taskkeeper holds the session's stdin.
    fn holds(&self, id: &SessionId) -> bool;
    /// Queue `text` as a task for the session; false when its stdin is gone.
    fn send(&self, id: &SessionId, text: &str) -> bool;
}

impl Delivery {
    pub(crate) fn new(
        sessions: Sessions,
        stdins: Arc<dyn Stdins>,
        ways_in: WaysIn,
        app_server: Arc<dyn AppServerWay>,
    ) -> Self {
        Self {
            sessions,
            state: Arc::default(),
            stdins,
            ways_in,
            app_server,
        }
    }

    /// The text as a turn the session's own app server starts ([`AppServerWay`]); the turn
    /// is Taskkeeper's once the request is written, and not, if nothing was delivered.
    pub(crate) async fn send_app_server(&self, session: &Session, text: &str) -> Pushed {
        let expect = || self.expect_turn(&session.id);
        let outcome = self.app_server.start_turn(session, text, &expect).await;
        if !matches!(outcome, Pushed::Delivered) {
            lock(&self.state.expecting).remove(&session.id);
        }
        outcome
    }

    /// The ways into `session` that its `means` allow, best first: [`delivery::ranked`] over
    /// the ways its kind has.
    pub(crate) fn ranked(&self, session: &Session, means: Means) -> Vec<Method> {
        delivery::ranked((self.ways_in)(session.agent), means)
    }

    /// The sessions registry it delivers into.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// Why the latest push to session `id` did not deliver, if nothing was delivered since.
    pub fn problem(&self, id: &SessionId) -> Option<DeliveryProblem> {
        lock(&self.state.problems).get(id).cloned()
    }

    /// `method` did not deliver to session `id`, for `why`: the owner sees it on the session.
    pub(crate) fn note_problem(&self, id: &SessionId, method: Method, why: &str) {
        let problem = DeliveryProblem {
            method,
            why: why.to_owned(),
            at: self.sessions.tasks.now(),
        };
        lock(&self.state.problems).insert(id.clone(), problem);
        self.sessions.shown_changed();
    }

    /// Something was delivered to session `id`: its latest problem is over.
    pub(crate) fn clear_problem(&self, id: &SessionId) {
        if lock(&self.state.problems).remove(id).is_some() {
            self.sessions.shown_changed();
        }
    }
}

/// How an item is told ([`delivery::telling`]: its text, and the transition that records it
/// was told). The asker's file parts are saved (if a crash came between the commit and the
/// save) before the text names them.
pub(crate) fn telling(
    t: &Task,
    to: Option<&SessionId>,
    files: &crate::files::Files,
) -> (Event, String) {
    if !t.cancel_to_tell()
        && let Err(e) = files.save_inbound(t)
    {
        tracing::warn!(task = %t.id, error = %e, "the asker's files could not be saved");
    }
    delivery::telling(t, to, files.root())
}

impl Delivery {
    /// Take the session's recorded watchdog message, if it has one not yet delivered.
    /// With `seq`, only the message of that number (the one that was sent): a newer one
    /// stays to be delivered.
    pub async fn claim_note(
        &self,
        id: &SessionId,
        seq: Option<u64>,
    ) -> Result<Option<String>, StoreError> {
        let id = id.clone();
        let taken = self
            .sessions
            .update(&id, move |session, _| {
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
            })
            .await?;
        Ok(taken.and_then(|(_, note)| note))
    }

    /// Who started the turn that is starting: Taskkeeper, if it was expecting one.
    pub fn take_expected(&self, id: &SessionId) -> bool {
        lock(&self.state.expecting).remove(id)
    }

    pub(crate) fn expect_turn(&self, id: &SessionId) {
        lock(&self.state.expecting).insert(id.clone());
    }

    /// What the desk's session has still to be told, without claiming it.
    pub(crate) async fn undelivered(&self, desk: &DeskName) -> Result<Vec<Task>, StoreError> {
        let mut due: Vec<Task> = self
            .sessions
            .desk_unqueued_tasks(desk)
            .await?
            .into_iter()
            .filter(Task::to_deliver)
            .collect();
        let ended = self
            .sessions
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
        Ok((!texts.is_empty()).then(|| delivery::joined(texts)))
    }

    /// Record that `items` were told, each as it was read: the one rule of delivery, a
    /// transition that succeeds once, and only at the version that was told. Returns the
    /// texts of the items recorded now; one that someone else recorded first, or that changed
    /// meanwhile (a follow-up), is left to be told (again, as it is now).
    pub(crate) async fn record_told(
        &self,
        items: &[Task],
        to: Option<&SessionId>,
    ) -> Result<Vec<String>, StoreError> {
        let mut texts = Vec::new();
        for t in items {
            let (event, text) = telling(t, to, self.sessions.tasks.files());
            match self.sessions.tasks.apply_at(&t.id, t.version, event).await {
                Ok(c) if c.changed => {
                    if let Some(id) = to {
                        self.clear_problem(id);
                    }
                    texts.push(text);
                }
                Ok(_) | Err(StoreError::Transition(_) | StoreError::Conflict(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(texts)
    }

    /// What can reach `session` right now, for [`ranked`] to order: the one account
    /// of a session's means, which the push loop, the waiter and the Stop handover all rank
    /// (the handover and the waiter add themselves: `at_stop`, `waiter`).
    pub(crate) fn means(&self, session: &Session, desk: Option<&Desk>) -> Means {
        Means {
            at_start: false,
            at_stop: false,
            waiter: lock(&self.state.waiting).contains(&session.id),
            // A session Taskkeeper launched is reached through its stdin only, also while its
            // stdin is not (or no longer) held: nothing else knows it.
            stdin: session.reach.headless || self.stdins.holds(&session.id),
            // Whether it is the session's own is checked right before each write.
            inbox: cfg!(unix)
                && session.reach.messaging_socket.is_some()
                && session.reach.pid.is_some(),
            // Likewise checked before each write, and the app server asked whether it runs
            // the session.
            app_server: cfg!(unix) && session.reach.app_server_socket.is_some(),
            // Without a pid the pane's owner cannot be checked: it is never pasted into.
            tmux_pane: session.reach.tmux_pane.is_some()
                && session.reach.tmux_socket.is_some()
                && session.reach.pid.is_some(),
            command: desk.is_some_and(|d| d.deliver_command.is_some()),
        }
    }

    /// The best way into `session` when `means` adds what the caller is (a Stop hook
    /// running, a waiter waiting): the first of [`delivery::ranked`].
    pub(crate) async fn first_method(
        &self,
        session: &Session,
        add: impl FnOnce(Means) -> Means,
    ) -> Result<Option<Method>, StoreError> {
        let name = session.desk.clone();
        let desk = self.sessions.tasks.desks().get(name.as_str()).await?;
        Ok(self
            .ranked(session, add(self.means(session, desk.as_ref())))
            .first()
            .copied())
    }

    /// The Stop hook's handover: claim what is waiting, to continue the turn with it, when the
    /// ranking puts the handover first (a launched session is told on its stdin instead) and
    /// unless Claude Code would override this block anyway. Called while the session is
    /// still busy (before its turn-end edge is stored), so the waiter this same Stop starts
    /// cannot claim it first.
    pub async fn handover(&self, session: &Session) -> Result<Option<String>, StoreError> {
        let at_stop = |m| Means { at_stop: true, ..m };
        if self.first_method(session, at_stop).await? != Some(Method::Handover) {
            return Ok(None);
        }
        let in_a_row = *lock(&self.state.handovers).get(&session.id).unwrap_or(&0);
        if in_a_row >= MAX_HANDOVERS_IN_A_ROW {
            lock(&self.state.handovers).remove(&session.id);
            return Ok(None);
        }
        let text = self.claim(session).await?;
        if text.is_some() {
            *lock(&self.state.handovers)
                .entry(session.id.clone())
                .or_insert(0) += 1;
        } else {
            lock(&self.state.handovers).remove(&session.id);
        }
        Ok(text)
    }

    /// The SessionStart hook's first user message (for an agent that takes one, see
    /// `agents::adapter::Adapter::starts_with_message`): claim what the desk has waiting,
    /// for the session to start its first turn with. The turn it starts is Taskkeeper's.
    /// Like the handover, it acts only when the ranking puts it first.
    pub async fn start_message(&self, session: &Session) -> Result<Option<String>, StoreError> {
        let at_start = |m| Means {
            at_start: true,
            ..m
        };
        if self.first_method(session, at_start).await? != Some(Method::StartMessage) {
            return Ok(None);
        }
        let text = self.claim(session).await?;
        if text.is_some() {
            self.expect_turn(&session.id);
        }
        Ok(text)
    }
}
