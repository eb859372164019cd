//! Who hears which change: one watch channel per followed session and desk, and a broadcast
//! of [`Change`]s for the loops that follow everything, so a change costs what its followers
//! cost, not what every waiter costs. The task service's feed is relayed here by desk. What
//! a loop's pass looks at after some changes is [`Look`], the push loop's and the watchdog's.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;

use taskkeeper_core::DeskName;
use taskkeeper_core::session::SessionId;
use tokio::sync::{broadcast, watch};

use super::{Sessions, lock};

#[derive(Debug)]
pub(crate) struct Generation(watch::Sender<u64>);

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
pub(crate) const CHANGES_CHANNEL: usize = 4096;

/// What one follower is interested in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Interested {
    Session(SessionId),
    Desk(DeskName),
}

/// A watch channel per session and per desk that someone follows right now: a change wakes
/// the followers of what changed and nobody else, so a change costs what its followers cost,
/// not what every waiter costs. A channel nobody follows any more goes at the next change.
#[derive(Debug, Default)]
pub(crate) struct Interest {
    channels: Mutex<HashMap<Interested, watch::Sender<u64>>>,
}

impl Interest {
    pub(crate) fn follow(&self, what: Interested) -> watch::Receiver<u64> {
        lock(&self.channels)
            .entry(what)
            .or_insert_with(|| watch::Sender::new(0))
            .subscribe()
    }

    pub(crate) fn tell(&self, what: &Interested) {
        let mut channels = lock(&self.channels);
        if let Some(tx) = channels.get(what) {
            if tx.receiver_count() == 0 {
                channels.remove(what);
            } else {
                tx.send_modify(|g| *g = g.wrapping_add(1));
            }
        }
    }

    pub(crate) fn tell_all(&self) {
        lock(&self.channels).retain(|_, tx| {
            let followed = tx.receiver_count() > 0;
            if followed {
                tx.send_modify(|g| *g = g.wrapping_add(1));
            }
            followed
        });
    }
}

/// What a pass of a loop that follows every change looks at (the push loop's, the
/// watchdog's): everything, or the desks and sessions the changes named.
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
    /// What the store's services read for it: `None` for everything, else the desks and
    /// sessions named.
    pub(crate) fn named(self) -> Option<(HashSet<DeskName>, HashSet<SessionId>)> {
        match self {
            Look::All => None,
            Look::Some { desks, sessions } => Some((desks, sessions)),
        }
    }

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

/// Take in every change already queued, so one pass handles them all.
pub(crate) fn drain(changes: &mut broadcast::Receiver<Change>, look: &mut Look) {
    loop {
        match changes.try_recv() {
            Ok(change) => look.add(Ok(change)),
            Err(broadcast::error::TryRecvError::Empty | broadcast::error::TryRecvError::Closed) => {
                return;
            }
            Err(broadcast::error::TryRecvError::Lagged(n)) => {
                look.add(Err(broadcast::error::RecvError::Lagged(n)));
            }
        }
    }
}

impl Sessions {
    /// Follow one session or desk: the receiver changes when it does.
    pub(crate) fn follow(&self, what: Interested) -> watch::Receiver<u64> {
        self.inner.interest.follow(what)
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

    /// A session changed in a way only the owner sees (why a delivery to it failed): the
    /// owner's event stream and the app hear it; the loops and waiters have nothing to do.
    pub(crate) fn shown_changed(&self) {
        self.inner.shown.0.send_modify(|g| *g = g.wrapping_add(1));
    }

    /// Session `id` changed in a way only its own followers care about (a waiter came).
    pub(crate) fn session_touched(&self, id: &SessionId) {
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
}
