//! Work that restarts itself: when a desk has work and no live session, and when a desk set
//! to launch one by itself (`auto_launch`, off by default) does so — with a guard against a
//! launch loop (a session that dies at once, a `claude` that cannot start).
//!
//! The guard: the first launch goes at once; each further one without progress waits twice
//! as long as the one before ([`FIRST_BACKOFF`], at most [`MAX_BACKOFF`]); after
//! [`GIVE_UP_AFTER`] launches without progress the desk stops trying until the owner acts
//! (launches a session, or turns the setting off and on) or one of its tasks ends. The
//! server keeps the attempts in memory: a restart of the daemon (a reboot) starts afresh,
//! which is what brings work back after a reboot.

use std::time::Duration;

use crate::clock::Timestamp;
use crate::queue;
use crate::session::Session;
use crate::task::{Task, TaskState};

pub const FIRST_BACKOFF: Duration = Duration::from_secs(60);
pub const MAX_BACKOFF: Duration = Duration::from_secs(3600);
pub const GIVE_UP_AFTER: u32 = 5;

/// Whether a desk has work a session would take: a queued task, or one that holds the desk
/// (working and not stalled, [`queue::holds_desk`]). A task that waits on its asker, a
/// stalled one and an ended one need no session. `Store::desk_has_work` answers the same
/// from the store's indexes.
pub fn has_work<'a>(desk_tasks: impl IntoIterator<Item = &'a Task>) -> bool {
    desk_tasks
        .into_iter()
        .any(|t| t.state() == TaskState::Submitted || queue::holds_desk(t))
}

/// Whether any of these sessions (a desk's) is live: whether someone works at the desk
/// ([`crate::session::holder`]).
pub fn has_live_session<'a>(desk_sessions: impl IntoIterator<Item = &'a Session>) -> bool {
    crate::session::holder(desk_sessions).is_some()
}

/// The launches a desk made by itself since its work last moved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attempts {
    pub count: u32,
    pub last: Option<Timestamp>,
}

impl Attempts {
    /// A launch was made (whether or not it started).
    pub fn launched(&mut self, now: Timestamp) {
        self.count = self.count.saturating_add(1);
        self.last = Some(now);
    }
}

/// What a desk set to launch by itself does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to do: the setting is off, there is no work, or a session is live.
    Nothing,
    Launch,
    /// The guard holds the next launch until then.
    WaitUntil(Timestamp),
    /// Too many launches without progress: the desk waits for the owner.
    GaveUp,
}

/// How long the guard holds the launch after `count` launches without progress.
pub fn backoff(count: u32) -> Duration {
    if count == 0 {
        return Duration::ZERO;
    }
    let doubled = FIRST_BACKOFF.saturating_mul(1u32 << (count - 1).min(16));
    doubled.min(MAX_BACKOFF)
}

/// The decision for one desk at `now`.
pub fn decide(
    enabled: bool,
    has_work: bool,
    live_session: bool,
    attempts: Attempts,
    now: Timestamp,
) -> Decision {
    if !enabled || !has_work || live_session {
        return Decision::Nothing;
    }
    if attempts.count >= GIVE_UP_AFTER {
        return Decision::GaveUp;
    }
    match attempts.last {
        None => Decision::Launch,
        Some(last) => {
            let due = last.plus(backoff(attempts.count));
            if due <= now {
                Decision::Launch
            } else {
                Decision::WaitUntil(due)
            }
        }
    }
}
