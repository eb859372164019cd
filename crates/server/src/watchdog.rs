//! The scheduler that runs the watchdog's policy (`taskkeeper_core::watchdog`): event-driven,
//! not a poll, and incremental. It keeps one thing between wakes, when each desk is next due
//! ([`Schedule`]): built from the store at the start (and after a setting or the wall clock
//! changed), then changed only for the desks whose sessions or tasks changed, read from the
//! change feed ([`Sessions::changes`]). A wake reads from the store and plans just the desks
//! that changed or are due, so its cost follows the work, not how many sessions there are.
//! It sleeps until the earliest due time plus [`watchdog::COALESCE`] (due times that close
//! share a wake), capped at [`CAP`] so a suspend or a wall-clock jump is noticed, or until
//! the next change (and the changes within [`GATHER`] of it); with nothing due it sleeps
//! until a change, doing no periodic work.
//!
//! On each wake it compares wall-clock and monotonic time: a forward gap means the machine
//! slept, and every quiet session's clock moves later by the gap (the sessions slept too),
//! so there is never a burst after resume; a wall clock that stepped back skips the wake.
//! Every reminder, stall and expiry is recorded in the store before it is delivered, with
//! the session's message number, so a restart resumes exactly and never repeats a message.

use std::sync::Arc;
use std::time::Duration;

use taskkeeper_core::watchdog::{self, Plan, Schedule, Wake};
use taskkeeper_core::{Event, Session, StoreError, Task, TaskId, Timestamp, delivery};
use tokio::sync::{Notify, watch};

use crate::notify::Notifier;
use crate::sessions::{Change, Look, Sessions, drain};
use crate::tasks::Tasks;

/// The longest sleep while something is due.
pub const CAP: Duration = Duration::from_secs(30);
/// How long a change waits for the ones that follow it before its pass: a burst of sends is
/// planned in one pass instead of one each (issue 13: under load the watchdog's pass after
/// every send was a tenth of the daemon's CPU). What the pass decides it reads at the pass,
/// and a reminder is minutes away, so nothing is decided on stale data and nothing is late
/// by more than this.
pub const GATHER: Duration = Duration::from_millis(20);
/// Wall-clock drift under this is noise, not a suspend.
const TOLERANCE: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct Watchdog {
    tasks: Tasks,
    sessions: Sessions,
    notifier: Arc<dyn Notifier>,
    /// Poked when something the plan depends on changed outside tasks and sessions (a
    /// setting, an owner action).
    wake: Arc<Notify>,
    passes: Arc<watch::Sender<Pass>>,
}

/// What the scheduler's passes did, published after each one: tests wait on it instead of
/// sleeping ("the watchdog has looked at this moment and did nothing"), benches count it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pass {
    /// Passes so far.
    pub number: u64,
    /// The time the last pass planned at.
    pub at: Option<Timestamp>,
    /// Desks the last pass read and planned.
    pub desks: usize,
    /// Whether the last pass read everything (the start, a setting, a suspend).
    pub full: bool,
    /// Whether the last wake found the wall clock stepped back, and so planned nothing.
    pub clock_back: bool,
    /// The number and time of the last pass that read everything or found the clock stepped
    /// back: a test that waits for it knows the watchdog has looked at every desk then.
    pub looked_at_all: Option<(u64, Timestamp)>,
    /// Wakes of the scheduler so far (a change, a due time or the cap).
    pub wakes: u64,
    /// Desks with a due time after the last pass (the scheduler's state).
    pub scheduled: usize,
    /// The most desks the last pass held at once (at most [`BATCH`]).
    pub largest_read: usize,
    /// Open tasks the last pass read (a desk's queue is not read, only what the plan needs).
    pub tasks: usize,
    /// Trips to the blocking pool the last pass made to read (one for up to [`BATCH`] desks,
    /// so a pass after a change makes one); what it carried out comes on top.
    pub trips: usize,
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default)]
struct Done {
    /// Desks it read and planned.
    desks: usize,
    largest_read: usize,
    tasks: usize,
    trips: usize,
    /// Whether it did anything.
    acted: bool,
}

/// One desk as a pass reads it from the store: its sessions (newest first) and open tasks.
/// How many desks a pass reads and plans at a time. A full pass walks every desk in use in
/// batches of this many, so what it holds is one batch's sessions and tasks, never the whole
/// store's (issue 13: reading 10,000 desks at once grew the process by 43 MiB, which the
/// allocator kept after the read was dropped).
pub const BATCH: usize = 64;

impl Watchdog {
    pub fn new(
        tasks: Tasks,
        sessions: Sessions,
        notifier: Arc<dyn Notifier>,
        wake: Arc<Notify>,
    ) -> Self {
        Self {
            tasks,
            sessions,
            notifier,
            wake,
            passes: Arc::new(watch::Sender::new(Pass::default())),
        }
    }

    /// Follows the scheduler's passes (see [`Pass`]).
    pub fn passes(&self) -> watch::Receiver<Pass> {
        self.passes.subscribe()
    }

    /// One full pass at `now` over a fresh schedule: read everything, plan, carry it out.
    /// Returns the next due time and whether anything was done.
    pub async fn tick(&self, now: Timestamp) -> Result<(Option<Timestamp>, bool), StoreError> {
        let mut schedule = Schedule::default();
        let done = self.pass(now, Look::All, &mut schedule).await?;
        Ok((schedule.next(), done.acted))
    }

    /// Read and plan the desks `look` names at `now`, carry out what is due, and set their
    /// due times in `schedule` (all of it, for [`Look::All`]), [`BATCH`] desks at a time.
    async fn pass(
        &self,
        now: Timestamp,
        look: Look,
        schedule: &mut Schedule,
    ) -> Result<Done, StoreError> {
        let full = matches!(look, Look::All);
        // The desks, and when they are few (a pass after a change) the first batch of them
        // read in the same trip: this runs after every change of any task.
        let (settings, names, mut first) = self
            .tasks
            .watchdog_reads()
            .first(look.named(), now, BATCH)
            .await?;
        if full {
            schedule.clear();
        }
        let created_by = watchdog::expired_if_created_by(now, &settings);
        let mut done = Done {
            desks: names.len(),
            trips: 1,
            ..Done::default()
        };
        for batch in names.chunks(BATCH) {
            let desks = match first.take() {
                Some(read) => read,
                None => {
                    let batch = batch.to_vec();
                    done.trips += 1;
                    self.tasks.watchdog_reads().desks(batch, created_by).await?
                }
            };
            done.largest_read = done.largest_read.max(desks.len());
            for (desk, sessions, open) in desks {
                done.tasks += open.len();
                let open_refs: Vec<&Task> = open.iter().collect();
                // Each task with the session that works on it (`session::works_on`): the one
                // it was handed to, so a reminder goes only where the task can be ended.
                let pairs = taskkeeper_core::session::work(&sessions, open_refs.iter().copied());
                let working: Vec<&Session> = pairs.iter().map(|(s, _)| *s).collect();
                let plan = watchdog::plan(
                    now,
                    &settings,
                    settings.reminders_paused,
                    &pairs,
                    &open_refs,
                );
                schedule.set(desk, plan.next_due);
                done.acted |= self.carry_out(now, &plan, &working).await?;
            }
        }
        Ok(done)
    }

    /// Do what `plan` says; whether anything was done. What it changes comes back through
    /// the change feed, so the desks it touched are planned again at once.
    async fn carry_out(
        &self,
        now: Timestamp,
        plan: &Plan,
        sessions: &[&Session],
    ) -> Result<bool, StoreError> {
        for id in &plan.expire {
            match self.tasks.apply(id, Event::Expire).await {
                Ok(_) => tracing::info!(task = %id, "expired"),
                Err(StoreError::Transition(_)) => {}
                Err(e) => return Err(e),
            }
        }
        for m in &plan.messages {
            let Some(session) = sessions.iter().find(|s| s.id == m.session) else {
                continue;
            };
            let mut reminded = Vec::new();
            let mut stalled = Vec::new();
            for id in &m.remind {
                if let Some(t) = self.apply_quietly(id, Event::Remind).await? {
                    reminded.push(t);
                }
            }
            for id in &m.stall {
                if let Some(t) = self.apply_quietly(id, Event::Stall).await? {
                    stalled.push(t);
                }
            }
            if m.speak && (!reminded.is_empty() || !stalled.is_empty()) {
                self.record_message(session, now, &reminded, &stalled)
                    .await?;
                // Its waiter (or the delivery loop) takes the message to the session.
                self.sessions.session_changed(&session.id);
            }
            for t in &stalled {
                tracing::warn!(task = %t.id, desk = %t.desk, "task stalled");
                self.notifier.stalled(t);
            }
        }
        Ok(!plan.expire.is_empty() || !plan.messages.is_empty())
    }

    async fn apply_quietly(&self, id: &TaskId, event: Event) -> Result<Option<Task>, StoreError> {
        match self.tasks.apply(id, event).await {
            // The task as it was when the message was decided: its rung number, its words.
            Ok(c) => Ok(Some(c.task)),
            Err(StoreError::Transition(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Record a watchdog message for the session (numbered, counted against the hourly cap)
    /// before anything delivers it.
    async fn record_message(
        &self,
        session: &Session,
        now: Timestamp,
        remind: &[Task],
        stalled: &[Task],
    ) -> Result<(), StoreError> {
        let (id, remind, stalled) = (session.id.clone(), remind.to_vec(), stalled.to_vec());
        // The reminder quotes the task as it was before this rung.
        let before: Vec<Task> = remind
            .iter()
            .map(|t| {
                let mut t = t.clone();
                t.reminders_sent = t.reminders_sent.saturating_sub(1);
                t
            })
            .collect();
        let seq = self
            .sessions
            .update(&id, move |session, _| {
                let seq = session.watch.record(now, true, |seq| {
                    delivery::watchdog_text(
                        seq,
                        &before.iter().collect::<Vec<_>>(),
                        &stalled.iter().collect::<Vec<_>>(),
                    )
                });
                (true, seq)
            })
            .await?
            .map_or(0, |(_, seq)| seq);
        tracing::info!(session = %session.id, seq, "watchdog message recorded");
        Ok(())
    }

    /// Move every quiet session's clock later by `gap`: the machine slept and so did they.
    async fn slept(&self, gap: Duration) -> Result<(), StoreError> {
        let gap_ms = i64::try_from(gap.as_millis()).unwrap_or(i64::MAX);
        self.sessions
            .update_each(move |session| {
                let quiet =
                    session.is_live() && session.activity == taskkeeper_core::Activity::Idle;
                if quiet {
                    session.watch.slept_ms = session.watch.slept_ms.saturating_add(gap_ms);
                }
                quiet
            })
            .await
    }

    /// The scheduler loop, until `stop`.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        // Subscribed before the first pass reads: no change falls between.
        let mut changes = self.sessions.changes();
        let mut schedule = Schedule::default();
        let mut look = Look::All;
        let mut last = (self.tasks.now(), self.tasks.monotonic());
        let mut pass = Pass::default();
        let mut retry: Option<Timestamp> = None;
        let mut first = true;
        loop {
            if !first {
                let now = self.tasks.now();
                let next = match (schedule.next(), retry) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                let sleep = async {
                    match next {
                        Some(due) => tokio::time::sleep(watchdog::sleep_for(due, now, CAP)).await,
                        None => std::future::pending().await,
                    }
                };
                let changed = tokio::select! {
                    r = changes.recv() => {
                        look.add(r);
                        true
                    }
                    () = self.wake.notified() => {
                        look = Look::All;
                        false
                    }
                    () = sleep => false,
                    _ = stop.wait_for(|s| *s) => return,
                };
                if changed {
                    // The changes that follow this one (a burst of sends) go into its pass.
                    tokio::select! {
                        () = tokio::time::sleep(GATHER) => {}
                        _ = stop.wait_for(|s| *s) => return,
                    }
                }
                drain(&mut changes, &mut look);
                pass.wakes += 1;
            }
            first = false;
            let (now, mono) = (self.tasks.now(), self.tasks.monotonic());
            let wall_elapsed = now.as_millis() - last.0.as_millis();
            let wake =
                watchdog::classify_wake(wall_elapsed, mono.saturating_sub(last.1), TOLERANCE);
            last = (now, mono);
            match wake {
                Wake::ClockBack => {
                    tracing::warn!(
                        by_ms = -wall_elapsed,
                        "the wall clock stepped back; no message this wake"
                    );
                    // The due times were reckoned on the old clock: all are reckoned again.
                    look = Look::All;
                    retry = Some(now.plus(CAP));
                    pass.clock_back = true;
                    self.publish(&mut pass, now, Done::default(), false, &schedule);
                    pass.clock_back = false;
                    continue;
                }
                Wake::Slept(gap) => {
                    tracing::info!(
                        slept_s = gap.as_secs(),
                        "the machine slept; quiet clocks move later"
                    );
                    if let Err(e) = self.slept(gap).await {
                        tracing::warn!(error = %e, "could not shift the quiet clocks");
                    }
                    look = Look::All;
                }
                Wake::Normal => {}
            }
            for desk in schedule.due(now) {
                look.add(Ok(Change::Desk(desk)));
            }
            if look.is_empty() {
                self.publish(&mut pass, now, Done::default(), false, &schedule);
                continue;
            }
            let full = matches!(look, Look::All);
            let planning = std::mem::take(&mut look);
            match self.pass(now, planning, &mut schedule).await {
                Ok(done) => {
                    retry = None;
                    self.publish(&mut pass, now, done, full, &schedule);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the watchdog could not plan; trying again soon");
                    look = Look::All;
                    retry = Some(now.plus(CAP));
                }
            }
        }
    }

    fn publish(&self, pass: &mut Pass, at: Timestamp, done: Done, full: bool, schedule: &Schedule) {
        pass.number += 1;
        pass.at = Some(at);
        pass.desks = done.desks;
        pass.largest_read = done.largest_read;
        pass.tasks = done.tasks;
        pass.trips = done.trips;
        pass.full = full;
        pass.scheduled = schedule.len();
        if full || pass.clock_back {
            pass.looked_at_all = Some((pass.number, at));
        }
        self.passes.send_replace(*pass);
    }
}
