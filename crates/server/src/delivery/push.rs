//! The push loop: the means Taskkeeper drives itself (a headless session's stdin, the tmux
//! paste, the desk's command), tried in the order [`taskkeeper_core::delivery::ranked`]
//! gives. These cannot be taken back, so they send first and claim exactly what they sent
//! once a started turn (or the command's success) confirms it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use taskkeeper_core::delivery::{self, Method};
use taskkeeper_core::session::{Session, SessionId};
use taskkeeper_core::{Desk, DeskName, StoreError, Task};

use super::Delivery;
use super::telling;
use crate::sessions::{Interested, Look, drain, lock};

/// A session this young may not have painted its prompt box yet; keys sent now get lost.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);
/// How long a pasted prompt (or a stdin message) has to start a turn before it counts as not
/// delivered (the paste gets one more Enter first).
pub(crate) const VERIFY: Duration = Duration::from_secs(5);
/// How long a failed push waits before the same text is tried again (when trying again
/// cannot double it: a command that failed, a stdin that was gone).
pub(crate) const RETRY: Duration = Duration::from_secs(60);

/// Whom a push goes to: a live session, or a desk with a command and no live session.
#[derive(Debug, Clone)]
pub(crate) struct Target {
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
pub(crate) struct Parcel {
    pub(crate) note: Option<(u64, String)>,
    pub(crate) items: Vec<Task>,
}

impl Parcel {
    fn text(&self, files: &crate::files::Files) -> String {
        let texts: Vec<String> = self
            .note
            .iter()
            .map(|(_, text)| text.clone())
            .chain(self.items.iter().map(|t| telling(t, None, files).1))
            .collect();
        delivery::joined(texts)
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
pub(crate) enum Pushed {
    /// Confirmed: the parcel is claimed.
    Delivered,
    /// Not confirmed, and the text may have landed (a paste): never send it again.
    Unconfirmed(String),
    /// Not delivered: it may be tried again later.
    Failed(String),
    /// Not delivered: this way in is not there for the session (nothing listens where its
    /// hooks point, as for `codex --no-daemon`'s app server). The next is tried, without a
    /// warning, since that is the session's ordinary state.
    Absent(String),
    /// Not delivered, and no other way is tried now: the session is busy after all (its
    /// turn's end hands it over); tried again later.
    Later(String),
}

impl Delivery {
    /// The methods that can reach `session` right now, best first ([`Delivery::ranked`]).
    fn methods(&self, session: &Session, desk: &Desk) -> Vec<Method> {
        self.ranked(session, self.means(session, Some(desk)))
    }

    /// Pushes what idle sessions (and desks with a command and no live session) have to be
    /// told through the methods Taskkeeper drives, best first, falling back to the next
    /// method when one is not confirmed. Runs until `stop`.
    ///
    /// The first pass looks at every desk; after it, a pass looks only at the desks and
    /// sessions that changed since the one before (a timer's recheck looks at all again).
    pub async fn deliver_loop(self) {
        let mut stop = self.sessions.stopping();
        // Subscribed before the first pass: a change while a pass runs goes to the next one.
        let mut changes = self.sessions.changes();
        let mut look = Look::All;
        // When to look at everything again (a session too young to paste into): kept across
        // passes, since a pass that looks only at what changed meanwhile does not see it.
        let mut recheck_at: Option<tokio::time::Instant> = None;
        loop {
            let recheck = match self.deliver_pass(std::mem::take(&mut look)).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "delivery pass failed");
                    look = Look::All;
                    Some(Duration::from_secs(30))
                }
            };
            if let Some(d) = recheck {
                let at = tokio::time::Instant::now() + d;
                recheck_at = Some(recheck_at.map_or(at, |r| r.min(at)));
            }
            tokio::select! {
                r = changes.recv() => look.add(r),
                () = async {
                    match recheck_at {
                        Some(at) => tokio::time::sleep_until(at).await,
                        None => std::future::pending().await,
                    }
                } => {
                    recheck_at = None;
                    look = Look::All;
                }
                _ = stop.wait_for(|s| *s) => return,
            }
            // Everything that came meanwhile goes into the same pass.
            drain(&mut changes, &mut look);
        }
    }

    /// One pass over what `look` names; returns when to look again for a session that was
    /// too fresh to paste into.
    async fn deliver_pass(&self, look: Look) -> Result<Option<Duration>, StoreError> {
        let now = self.sessions.tasks.now();
        let (sessions, desks) = self
            .sessions
            .tasks
            .desks()
            .sessions_and_desks(look.named())
            .await?;
        let desks: HashMap<DeskName, Desk> =
            desks.into_iter().map(|d| (d.name.clone(), d)).collect();
        let mut recheck: Option<Duration> = None;
        // Every live session is pushed what it works on (`session::works_on`: what was handed
        // to it, and, for the desk's newest, what no session was handed) and its own note.
        let live: Vec<&Session> = sessions.iter().filter(|s| s.is_live()).collect();
        let seen_desks: HashSet<&DeskName> = live.iter().map(|s| &s.desk).collect();
        let mut targets = Vec::new();
        for session in live.iter().copied() {
            let Some(desk) = desks.get(&session.desk) else {
                continue;
            };
            if session.activity != taskkeeper_core::Activity::Idle {
                continue;
            }
            let methods = self.methods(session, desk);
            match methods.first() {
                // A waiter (or nothing) answers for this session.
                None | Some(Method::StartMessage | Method::Handover | Method::Waiter) => continue,
                // A session this young may not take a message yet (and its SessionStart
                // hook may be handing it the first task in its answer; Codex may still be
                // closing the turn whose Stop just made it idle).
                Some(Method::Inbox | Method::AppServer | Method::Paste) => {
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
                    session: Some(session.clone()),
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
        let mut undelivered: HashMap<DeskName, Vec<Task>> = HashMap::new();
        for (target, methods) in targets {
            if !undelivered.contains_key(&target.desk.name) {
                let items = self.undelivered(&target.desk.name).await?;
                undelivered.insert(target.desk.name.clone(), items);
            }
            let items = undelivered.get(&target.desk.name).into_iter().flatten();
            let parcel = Parcel {
                note: target
                    .session
                    .as_ref()
                    .and_then(|s| s.watch.pending.clone()),
                // A desk's command with no live session there takes everything.
                items: items
                    .filter(|t| {
                        target.session.as_ref().is_none_or(|s| {
                            taskkeeper_core::session::works_on(t, &sessions)
                                .is_some_and(|w| w.id == s.id)
                        })
                    })
                    .cloned()
                    .collect(),
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
            if lock(&self.state.pushed).get(&target_key) == Some(&parcel_key)
                || !lock(&self.state.in_flight).insert(target_key.clone())
            {
                continue;
            }
            lock(&self.state.pushed).insert(target_key.clone(), parcel_key.clone());
            let this = self.clone();
            tokio::spawn(async move {
                let desk = target.desk.name.clone();
                this.push(target, methods, parcel, target_key.clone(), parcel_key)
                    .await;
                lock(&this.state.in_flight).remove(&target_key);
                // What arrived while this push was on its way goes next.
                this.sessions.desk_changed(&desk);
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
        let text = parcel.text(self.sessions.tasks.files());
        let mut may_have_landed = false;
        for method in methods.into_iter().filter(|m| m.is_push()) {
            let outcome = match (method, &target.session) {
                (Method::Stdin, Some(session)) => self.send_stdin(session, &text).await,
                #[cfg(unix)]
                (Method::Inbox, Some(session)) => self.send_inbox(session, &text).await,
                (Method::AppServer, Some(session)) => self.send_app_server(session, &text).await,
                (Method::Paste, Some(session)) => self.paste(session, &text).await,
                (Method::Command, session) => {
                    self.run_command(&target.desk, session.as_ref(), &parcel, &text)
                        .await
                }
                _ => continue,
            };
            if let (Some(session), Pushed::Unconfirmed(why) | Pushed::Failed(why)) =
                (&target.session, &outcome)
            {
                self.note_problem(&session.id, method, why);
            }
            match outcome {
                Pushed::Delivered => {
                    if let Some(session) = &target.session {
                        self.clear_problem(&session.id);
                    }
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
                Pushed::Absent(why) => {
                    tracing::debug!(target = %target_key, method = method.as_str(), %why, "no such way in; trying the next method");
                }
                Pushed::Later(why) => {
                    tracing::info!(target = %target_key, method = method.as_str(), %why, "delivery put off");
                    break;
                }
            }
        }
        if !may_have_landed {
            // Nothing landed: try the same text again later (unless it changed meanwhile).
            let this = self.clone();
            let desk = target.desk.name.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RETRY).await;
                let mut pushed = lock(&this.state.pushed);
                if pushed.get(&target_key) == Some(&parcel_key) {
                    pushed.remove(&target_key);
                }
                drop(pushed);
                this.sessions.desk_changed(&desk);
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
    pub(crate) async fn turn_started(&self, id: &SessionId, turn0: u64) -> bool {
        let deadline = tokio::time::Instant::now() + VERIFY;
        let mut own = self.sessions.follow(Interested::Session(id.clone()));
        while tokio::time::Instant::now() < deadline {
            own.borrow_and_update();
            if self.sessions.turns(id) != turn0 {
                return true;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), own.changed()).await;
        }
        false
    }
}
