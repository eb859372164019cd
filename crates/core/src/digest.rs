//! The digest: what happened while the owner was away, and when to offer it.
//!
//! [`digest`] is the one place that decides what the digest holds, from the tasks the store
//! keeps and the time the owner last took a digest; [`offer_due`] decides when the daemon
//! offers one (a notification with the counts), from the `digest.at` setting. Both are pure:
//! the store keeps the two marks ([`TAKEN`], [`OFFERED`]), the server reads the clock.
//!
//! What each part holds:
//! - **stalled**: tasks stalled now, and ended tasks that stalled since the last digest;
//! - **finished**: tasks that ended (completed, failed, canceled) since the last digest;
//! - **waiting on the owner**: open tasks whose session waits on the owner's answer;
//! - **acknowledgements pending**: ended tasks of askers (not the owner's own) that their
//!   asker has not acknowledged, however old;
//! - **reminders**: every reminder sent since the last digest.

use std::fmt;
use std::str::FromStr;

use crate::asker::OWNER;
use crate::clock::Timestamp;
use crate::task::Task;

/// The store's mark of the last digest the owner took.
pub const TAKEN: &str = "digest.taken";
/// The store's mark of the last digest the daemon offered.
pub const OFFERED: &str = "digest.offered";

/// One reminder sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Reminder<'a> {
    pub task: &'a Task,
    pub at: Timestamp,
}

/// What the digest holds, each list oldest first (ties by task id).
#[derive(Debug, Clone, PartialEq)]
pub struct Digest<'a> {
    /// The last digest the owner took; `None`: never (everything the store keeps counts).
    pub since: Option<Timestamp>,
    pub until: Timestamp,
    pub stalled: Vec<&'a Task>,
    pub finished: Vec<&'a Task>,
    pub waiting_on_owner: Vec<&'a Task>,
    pub ack_pending: Vec<&'a Task>,
    pub reminders: Vec<Reminder<'a>>,
}

/// The digest's numbers, for a notification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub stalled: usize,
    pub finished: usize,
    pub waiting_on_owner: usize,
    pub ack_pending: usize,
    pub reminders: usize,
}

impl Counts {
    pub fn is_empty(&self) -> bool {
        *self == Counts::default()
    }
}

impl Digest<'_> {
    pub fn counts(&self) -> Counts {
        Counts {
            stalled: self.stalled.len(),
            finished: self.finished.len(),
            waiting_on_owner: self.waiting_on_owner.len(),
            ack_pending: self.ack_pending.len(),
            reminders: self.reminders.len(),
        }
    }
}

/// The digest of `tasks` for the window after `since` up to `now`.
pub fn digest<'a>(tasks: &'a [Task], since: Option<Timestamp>, now: Timestamp) -> Digest<'a> {
    let after = |t: Timestamp| since.is_none_or(|s| t > s) && t <= now;
    let by = |a: &&Task, b: &&Task, key: fn(&Task) -> Option<Timestamp>| {
        (key(a), &a.id).cmp(&(key(b), &b.id))
    };
    let mut stalled: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.stalled_at.is_some_and(|at| t.is_open() || after(at)))
        .collect();
    stalled.sort_by(|a, b| by(a, b, |t| t.stalled_at));
    let mut finished: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.ended_at().is_some_and(after))
        .collect();
    finished.sort_by(|a, b| by(a, b, Task::ended_at));
    let mut waiting_on_owner: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.is_open() && t.waiting_on_owner)
        .collect();
    waiting_on_owner.sort_by(|a, b| by(a, b, |t| Some(t.created_at)));
    let mut ack_pending: Vec<&Task> = tasks
        .iter()
        .filter(|t| !t.is_open() && t.asker != OWNER && t.acknowledged_at.is_none())
        .collect();
    ack_pending.sort_by(|a, b| by(a, b, Task::ended_at));
    let mut reminders: Vec<Reminder<'a>> = tasks
        .iter()
        .flat_map(|task| {
            task.reminder_times
                .iter()
                .filter(|at| after(**at))
                .map(move |at| Reminder { task, at: *at })
        })
        .collect();
    reminders.sort_by(|a, b| (a.at, &a.task.id).cmp(&(b.at, &b.task.id)));
    Digest {
        since,
        until: now,
        stalled,
        finished,
        waiting_on_owner,
        ack_pending,
        reminders,
    }
}

/// When the daemon offers a digest (`digest.at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OfferAt {
    /// Never by itself; only on demand.
    Off,
    /// Once each time the daemon starts (the app starts at login).
    Login,
    /// Every day at this time of day (local time), in minutes after midnight.
    Daily(u16),
}

pub const OFFER_HELP: &str = "off, login, or a time of day such as 08:30 (24-hour, local time)";

impl FromStr for OfferAt {
    type Err = &'static str;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "off" => Ok(Self::Off),
            "login" => Ok(Self::Login),
            text => {
                let (h, m) = text.split_once(':').ok_or(OFFER_HELP)?;
                let two_digits = |x: &str| x.len() == 2 && x.bytes().all(|b| b.is_ascii_digit());
                if !two_digits(h) || !two_digits(m) {
                    return Err(OFFER_HELP);
                }
                let (h, m): (u16, u16) = (
                    h.parse().map_err(|_| OFFER_HELP)?,
                    m.parse().map_err(|_| OFFER_HELP)?,
                );
                if h > 23 || m > 59 {
                    return Err(OFFER_HELP);
                }
                Ok(Self::Daily(h * 60 + m))
            }
        }
    }
}

impl fmt::Display for OfferAt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Off => f.write_str("off"),
            Self::Login => f.write_str("login"),
            Self::Daily(min) => write!(f, "{:02}:{:02}", min / 60, min % 60),
        }
    }
}

const DAY_MS: i64 = 86_400_000;

/// When the next digest is offered: a time at or before `now` means now; `None`, not until
/// something changes (a setting, a restart). `started` is when the daemon started;
/// `utc_offset_s` the local time's offset from UTC in seconds (east positive). A daily time missed while
/// the machine was off or asleep is offered once, as soon as the daemon runs.
pub fn offer_due(
    at: OfferAt,
    last_offered: Option<Timestamp>,
    started: Timestamp,
    now: Timestamp,
    utc_offset_s: i32,
) -> Option<Timestamp> {
    let offered_after = |t: Timestamp| last_offered.is_some_and(|o| o >= t);
    match at {
        OfferAt::Off => None,
        OfferAt::Login => (!offered_after(started)).then_some(started),
        OfferAt::Daily(minute) => {
            let offset = i64::from(utc_offset_s) * 1000;
            let local_now = now.as_millis() + offset;
            let local_midnight = local_now.div_euclid(DAY_MS) * DAY_MS;
            let today = local_midnight + i64::from(minute) * 60_000 - offset;
            let latest = if today <= now.as_millis() {
                today
            } else {
                today - DAY_MS
            };
            let latest = Timestamp::from_millis(latest);
            if offered_after(latest) {
                Some(Timestamp::from_millis(latest.as_millis() + DAY_MS))
            } else {
                Some(latest)
            }
        }
    }
}
