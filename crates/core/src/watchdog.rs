//! The watchdog's policy (design.md §3 rule 2): pure functions over sessions, their desks'
//! tasks, the settings and `now`. The scheduler in the server calls [`plan`] on every wake
//! and carries out what it returns; every rule about *when* to remind, stall or expire is
//! here and nowhere else.
//!
//! - A session is **quiet** when it is idle, runs no background command, waits on nobody,
//!   was not stopped by the owner, is not rate-limited, has no wake-up of its own still to
//!   come and is not paused.
//! - Its quiet clock starts at the latest of turn end, background command end, the last
//!   watchdog message and its own wake-up's due time, moved later by the time the machine
//!   slept.
//! - Each task it holds climbs a ladder: the first rung after `first_after` (per agent
//!   kind), then each `ladder` step; `stall_after` after the last reminder it stalls.
//! - At most `hourly_cap` watchdog messages (reminders and stall notes) per session in any
//!   hour, and at most one per session per call: one message names every due task, oldest
//!   first.
//! - Open tasks expire `expire_after` after they were created, on the wall clock.

use std::time::Duration;

use crate::clock::Timestamp;
use crate::session::{Activity, Session, SessionId};
use crate::settings::Settings;
use crate::task::{Task, TaskId, TaskState};

const HOUR: Duration = crate::session::CAP_WINDOW;

/// What holds an idle session back until a time, and ends on its own then: a rate limit,
/// or a wake-up the session scheduled for itself (it starts a turn on its own when that is
/// due, so a reminder before it would only interrupt). The later of the two still to come.
pub fn waits_until(s: &Session, now: Timestamp) -> Option<(Timestamp, Hold)> {
    let rate = s
        .rate_limited_until
        .filter(|t| *t > now)
        .map(|t| (t, Hold::RateLimited(t)));
    let wake = s
        .wakes_at
        .filter(|t| *t > now)
        .map(|t| (t, Hold::WakesItself(t)));
    rate.into_iter().chain(wake).max_by_key(|(t, _)| *t)
}

/// Whether the watchdog may speak to this session now.
pub fn is_quiet(s: &Session, now: Timestamp, all_paused: bool) -> bool {
    s.activity == Activity::Idle
        && s.background.is_empty()
        && waits_until(s, now).is_none()
        && !s.watch.paused
        && !all_paused
}

/// When the session went quiet (the latest of turn end, background command end, the last
/// watchdog message and the wake-up it had scheduled for itself), moved later by the time
/// the machine slept since.
pub fn quiet_since(s: &Session) -> Timestamp {
    let latest = [
        Some(s.since),
        s.turn_ended_at,
        s.background_ended_at,
        s.watch.sent.last().copied(),
        s.wakes_at,
    ]
    .into_iter()
    .flatten()
    .max()
    .unwrap_or(s.since);
    Timestamp::from_millis(latest.as_millis().saturating_add(s.watch.slept_ms))
}

/// Of the tasks `s` works on ([`crate::session::works_on`]), those the watchdog reminds it
/// of: delivered, working tasks of its desk that are neither stalled nor waiting on the owner.
pub fn held<'a>(s: &Session, desk_tasks: &[&'a Task]) -> Vec<&'a Task> {
    desk_tasks
        .iter()
        .copied()
        .filter(|t| {
            t.desk == s.desk
                && t.state() == TaskState::Working
                && t.delivered_at.is_some()
                && t.stalled_at.is_none()
                && !t.waiting_on_owner
        })
        .collect()
}

/// What the next step of a task's ladder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rung {
    Remind,
    Stall,
}

/// The step of the ladder after `sent` reminders: how much quiet it waits for, and what it
/// is; `None` past the stall.
pub fn rung_after(
    sent: u32,
    agent: crate::desk::AgentKind,
    settings: &Settings,
) -> Option<(Duration, Rung)> {
    let n = sent as usize;
    Some(match n {
        0 => (settings.first_after(agent), Rung::Remind),
        n if n <= settings.ladder.len() => (settings.ladder[n - 1], Rung::Remind),
        n if n == settings.ladder.len() + 1 => (settings.stall_after, Rung::Stall),
        _ => return None,
    })
}

/// The next step of `t`'s ladder and when it is due, given the session's quiet clock.
pub fn next_rung(t: &Task, s: &Session, settings: &Settings) -> Option<(Timestamp, Rung)> {
    rung_due(t.reminders_sent, t.delivered_at, s, settings)
}

/// [`next_rung`] for a task that has had `sent` reminders and was handed over at
/// `delivered_at`.
fn rung_due(
    sent: u32,
    delivered_at: Option<Timestamp>,
    s: &Session,
    settings: &Settings,
) -> Option<(Timestamp, Rung)> {
    let (delay, rung) = rung_after(sent, s.agent, settings)?;
    let mut base = quiet_since(s);
    if let Some(d) = delivered_at {
        base = base.max(d);
    }
    Some((base.plus(delay), rung))
}

/// When the hourly cap allows the next message: now, or when the oldest message of the
/// last hour leaves the window.
pub fn cap_allows_at(s: &Session, now: Timestamp, cap: u32) -> Timestamp {
    let window_start = now.minus(HOUR);
    let recent: Vec<Timestamp> = s
        .watch
        .sent
        .iter()
        .copied()
        .filter(|t| *t > window_start)
        .collect();
    if recent.len() < cap as usize {
        return now;
    }
    let mut sorted = recent;
    sorted.sort_unstable();
    // The message that must leave the window before another may go.
    sorted[sorted.len() - cap as usize].plus(HOUR)
}

/// One watchdog message into one session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub session: SessionId,
    /// Tasks to remind about, oldest first.
    pub remind: Vec<TaskId>,
    /// Tasks whose ladder ran out: they are marked stalled now.
    pub stall: Vec<TaskId>,
    /// False when the hourly cap holds the note back (a stall is still marked on time).
    pub speak: bool,
}

/// What to do now, and when to look again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub messages: Vec<Message>,
    pub expire: Vec<TaskId>,
    /// The earliest time something becomes due; `None`: nothing will until an edge.
    pub next_due: Option<Timestamp>,
}

fn earliest(a: Option<Timestamp>, b: Timestamp) -> Option<Timestamp> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// The watchdog's decision at `now`. `sessions` pairs each live session with the open tasks
/// it works on ([`crate::session::work`]: the session a task was handed to, else the desk's
/// newest live one); `open` is every open task (for expiry).
/// Tasks created at or before this have expired at `now`: with the earliest open task,
/// all of a desk's queue that [`plan`] needs for expiry.
pub fn expired_if_created_by(now: Timestamp, settings: &Settings) -> Timestamp {
    now.minus(settings.expire_after)
}

pub fn plan(
    now: Timestamp,
    settings: &Settings,
    all_paused: bool,
    sessions: &[(&Session, Vec<&Task>)],
    open: &[&Task],
) -> Plan {
    let mut out = Plan::default();
    let created_by = expired_if_created_by(now, settings);
    for t in open {
        let expires = t.created_at.plus(settings.expire_after);
        if t.created_at <= created_by {
            out.expire.push(t.id.clone());
        } else {
            out.next_due = earliest(out.next_due, expires);
        }
    }
    for (s, desk_tasks) in sessions {
        let mut held = held(s, desk_tasks);
        held.retain(|t| !out.expire.contains(&t.id));
        if held.is_empty() || !s.is_live() {
            continue;
        }
        if !is_quiet(s, now, all_paused) {
            // A rate limit and a wake-up of its own end on their own; everything else waits
            // for an edge.
            if let Some((until, _)) = waits_until(s, now)
                && s.activity == Activity::Idle
                && s.background.is_empty()
                && !s.watch.paused
                && !all_paused
            {
                out.next_due = earliest(out.next_due, until);
            }
            continue;
        }
        held.sort_by_key(|t| (t.created_at, t.id.clone()));
        let mut remind = Vec::new();
        let mut stall = Vec::new();
        for t in &held {
            match next_rung(t, s, settings) {
                Some((at, rung)) if at <= now => match rung {
                    Rung::Remind => remind.push(t.id.clone()),
                    Rung::Stall => stall.push(t.id.clone()),
                },
                Some((at, _)) => out.next_due = earliest(out.next_due, at),
                None => {}
            }
        }
        if remind.is_empty() && stall.is_empty() {
            continue;
        }
        let allowed_at = cap_allows_at(s, now, settings.hourly_cap);
        let speak = allowed_at <= now;
        if !speak {
            out.next_due = earliest(out.next_due, allowed_at);
            // Reminders wait for the cap; stalls happen on time, without a note.
            remind.clear();
            if stall.is_empty() {
                continue;
            }
        }
        out.messages.push(Message {
            session: s.id.clone(),
            remind,
            stall,
            speak,
        });
    }
    out
}

/// Why a task's ladder is not counting down now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The task ended.
    Ended,
    /// The ladder ran out.
    Stalled,
    /// It waits in its desk's queue.
    Queued,
    /// It waits on its asker (input-required, auth-required).
    WaitsOnAsker,
    /// A permission prompt or a question waits on the owner.
    WaitsOnOwner,
    /// The desk's session has not been handed it (or the asker's latest message) yet.
    NotDelivered,
    /// No live session at its desk.
    NoSession,
    /// The owner paused reminders (all, or this session's).
    Paused,
    /// The session is working (a turn, or a background command).
    Busy,
    /// The owner interrupted the session; nothing happens until it is written to again.
    StoppedByOwner,
    /// The session hit a rate limit; the ladder waits until then.
    RateLimited(Timestamp),
    /// The session scheduled a wake-up for itself; the ladder waits until it is due.
    WakesItself(Timestamp),
}

/// One step still to come on a task's ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    pub at: Timestamp,
    pub rung: Rung,
}

/// A task's ladder as a picture needs it: what happened and what will, if the session stays
/// quiet. Derived by the same functions the watchdog plans with ([`next_rung`],
/// [`rung_after`], [`cap_allows_at`], [`quiet_since`]), so the picture cannot disagree with
/// what the watchdog will do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timeline {
    pub now: Timestamp,
    pub created_at: Timestamp,
    pub delivered_at: Option<Timestamp>,
    /// When the holding session went quiet, while it is quiet and the ladder runs.
    pub quiet_since: Option<Timestamp>,
    /// The reminders of the current ladder, oldest first.
    pub reminders: Vec<Timestamp>,
    /// The steps still to come (reminders, then the stall), while the ladder runs.
    pub due: Vec<Step>,
    pub stalled_at: Option<Timestamp>,
    pub ended_at: Option<Timestamp>,
    /// When an open task expires.
    pub expires_at: Option<Timestamp>,
    /// The holding session's turns since the task was handed to it.
    pub turns: Vec<crate::session::Turn>,
    /// Why nothing is due, when nothing is.
    pub hold: Option<Hold>,
}

/// What stops the ladder of `t` now, if anything (the reasons [`plan`] skips a task).
fn hold_of(t: &Task, s: Option<&Session>, now: Timestamp, all_paused: bool) -> Option<Hold> {
    let hold = match t.state() {
        st if st.is_terminal() => Hold::Ended,
        _ if t.stalled_at.is_some() => Hold::Stalled,
        TaskState::Submitted => Hold::Queued,
        st if st.is_interrupted() => Hold::WaitsOnAsker,
        _ if t.waiting_on_owner => Hold::WaitsOnOwner,
        _ if t.delivered_at.is_none() => Hold::NotDelivered,
        _ => {
            let s = match s {
                Some(s) if s.is_live() && s.desk == t.desk => s,
                _ => return Some(Hold::NoSession),
            };
            if is_quiet(s, now, all_paused) {
                return None;
            }
            match s.activity {
                _ if all_paused || s.watch.paused => Hold::Paused,
                Activity::WaitingOnOwner => Hold::WaitsOnOwner,
                Activity::StoppedByOwner => Hold::StoppedByOwner,
                Activity::Idle if s.background.is_empty() => match waits_until(s, now) {
                    Some((_, hold)) => hold,
                    None => Hold::Busy,
                },
                _ => Hold::Busy,
            }
        }
    };
    Some(hold)
}

/// The longest ladder the projection walks (a ladder is a handful of steps; this only
/// bounds a pathological setting).
const MAX_STEPS: usize = 64;

/// The timeline of `t`, given the session that works on it ([`crate::session::works_on`], the
/// one [`plan`] pairs it with), the settings and `now`.
pub fn timeline(
    t: &Task,
    s: Option<&Session>,
    settings: &Settings,
    all_paused: bool,
    now: Timestamp,
) -> Timeline {
    let hold = hold_of(t, s, now, all_paused);
    let holder = s.filter(|s| s.desk == t.desk && t.delivered_at.is_some());
    let turns = holder
        .map(|s| {
            s.turns
                .iter()
                .filter(|x| {
                    t.delivered_at
                        .is_some_and(|d| x.ended_at.is_none_or(|e| e >= d))
                })
                .copied()
                .collect()
        })
        .unwrap_or_default();
    let mut out = Timeline {
        now,
        created_at: t.created_at,
        delivered_at: t.delivered_at,
        quiet_since: None,
        reminders: t.ladder_reminders().to_vec(),
        due: Vec::new(),
        stalled_at: t.stalled_at,
        ended_at: t.ended_at(),
        expires_at: t
            .is_open()
            .then(|| t.created_at.plus(settings.expire_after)),
        turns,
        hold,
    };
    let Some(s) = holder.filter(|_| hold.is_none()) else {
        return out;
    };
    let mut quiet = quiet_since(s);
    if let Some(d) = t.delivered_at {
        quiet = quiet.max(d);
    }
    out.quiet_since = Some(quiet);
    // Walk the ladder as the watchdog would if nothing else happened: each reminder waits
    // for the hourly cap and then moves the quiet clock; the stall happens on time.
    let (mut sent, mut session) = (t.reminders_sent, s.clone());
    while out.due.len() < MAX_STEPS {
        let Some((at, rung)) = rung_due(sent, t.delivered_at, &session, settings) else {
            break;
        };
        let at = match rung {
            Rung::Remind => at.max(cap_allows_at(&session, at, settings.hourly_cap)),
            Rung::Stall => at,
        };
        out.due.push(Step { at, rung });
        if rung == Rung::Stall {
            break;
        }
        sent += 1;
        session.watch.sent.push(at);
    }
    out
}

/// What a wake of the scheduler found about time itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    /// Time moved as expected.
    Normal,
    /// The wall clock moved this much further than the monotonic clock: the machine was
    /// suspended (or the clock jumped forward). Quiet clocks move later by as much.
    Slept(Duration),
    /// The wall clock stepped back: do nothing this wake.
    ClockBack,
}

/// Compare the wall-clock and monotonic time since the last wake. A gap under `tolerance`
/// is noise.
pub fn classify_wake(wall_elapsed_ms: i64, mono_elapsed: Duration, tolerance: Duration) -> Wake {
    if wall_elapsed_ms < 0 {
        return Wake::ClockBack;
    }
    let mono_ms = i64::try_from(mono_elapsed.as_millis()).unwrap_or(i64::MAX);
    let gap = wall_elapsed_ms.saturating_sub(mono_ms);
    if gap > i64::try_from(tolerance.as_millis()).unwrap_or(i64::MAX) {
        Wake::Slept(Duration::from_millis(u64::try_from(gap).unwrap_or(0)))
    } else {
        Wake::Normal
    }
}

/// How far apart due times may be and still be handled in one wake: the scheduler sleeps
/// until the earliest due time plus this, and then handles everything due by then. A
/// reminder is late by at most this (plus the work of the wake); a minute of ladders over
/// many sessions costs a wake per window, not one per due time.
pub const COALESCE: Duration = Duration::from_millis(300);

/// How long the scheduler sleeps at `now` when `next_due` is the earliest due time: until
/// it, plus [`COALESCE`], but never longer than `cap` (so a suspend or a clock step is
/// noticed) and not at all when it has passed.
pub fn sleep_for(next_due: Timestamp, now: Timestamp, cap: Duration) -> Duration {
    next_due.plus(COALESCE).since(now).min(cap)
}

/// When each desk next needs the watchdog: the scheduler's only state between wakes. It is
/// rebuilt from the store at the start (and when a setting changes) and changed afterwards
/// only for the desks whose sessions or tasks changed; a wake takes just the desks that are
/// due. The store stays the truth: a desk is read again before anything is done for it.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    at: std::collections::HashMap<crate::desk::DeskName, Timestamp>,
    order: std::collections::BTreeSet<(Timestamp, crate::desk::DeskName)>,
}

impl Schedule {
    /// Desk `desk` is next due at `due` (`None`: not until something changes).
    pub fn set(&mut self, desk: crate::desk::DeskName, due: Option<Timestamp>) {
        if let Some(old) = self.at.remove(&desk) {
            self.order.remove(&(old, desk.clone()));
        }
        if let Some(due) = due {
            self.order.insert((due, desk.clone()));
            self.at.insert(desk, due);
        }
    }

    /// The desks due at `now`, earliest first.
    pub fn due(&self, now: Timestamp) -> Vec<crate::desk::DeskName> {
        self.order
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, desk)| desk.clone())
            .collect()
    }

    /// The earliest due time of any desk.
    pub fn next(&self) -> Option<Timestamp> {
        self.order.first().map(|(at, _)| *at)
    }

    /// How many desks have a due time.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }

    pub fn clear(&mut self) {
        self.at.clear();
        self.order.clear();
    }
}
