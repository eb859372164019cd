//! The worker side's state machine around sessions: attaching a session to a desk, folding
//! its edges in, and getting text into it. Adapters (the Claude Code hook intake) translate
//! their world into calls here; nothing here knows a hook's JSON.
//!
//! Delivery has one rule, written once in [`Sessions::claim`]: a task (or a cancel notice)
//! is marked delivered by a transition in the store, which succeeds once; whoever wins that
//! claim — the Stop hook handing over the next task, the waiter waking an idle session —
//! delivers the text, and nobody else does. The tmux paste, which cannot be taken back,
//! pastes first and claims only after the session started a turn.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use taskkeeper_core::delivery;
use taskkeeper_core::session::{Edge, Level, Reach, Session, SessionId};
use taskkeeper_core::store::{NewDesk, StateFilter, TaskFilter};
use taskkeeper_core::{AgentKind, Desk, DeskName, Event, StoreError, Task, TaskState};
use tokio::sync::Notify;

use crate::tasks::Tasks;

#[derive(Clone, Debug)]
pub struct Sessions {
    tasks: Tasks,
    inner: Arc<Inner>,
    /// The daemon is stopping: waiters leave so the graceful shutdown is not held up.
    stop: tokio::sync::watch::Receiver<bool>,
    notifier: Arc<dyn crate::notify::Notifier>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Woken on every session or task change; waiters re-check.
    changed: Notify,
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
    /// What was pasted into each session and not confirmed: never pasted twice.
    pasted: Mutex<HashMap<SessionId, Vec<String>>>,
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
/// How long a pasted prompt has to start a turn before Enter is sent again (once).
const VERIFY: Duration = Duration::from_secs(5);

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

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
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
    ) -> Self {
        Self {
            tasks,
            inner: Arc::new(Inner::default()),
            stop,
            notifier,
        }
    }

    pub fn notifier(&self) -> &Arc<dyn crate::notify::Notifier> {
        &self.notifier
    }

    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Wake waiters after a change elsewhere (a task changed).
    pub fn poke(&self) {
        self.inner.changed.notify_waiters();
    }

    /// Resolves at the next session change (or poke).
    pub async fn changed(&self) {
        self.inner.changed.notified().await;
    }

    /// Take the session's recorded watchdog message, if it has one not yet delivered.
    pub async fn claim_note(&self, id: &SessionId) -> Result<Option<String>, StoreError> {
        let id = id.clone();
        self.tasks
            .blocking(move |s, _| {
                let taken = s.update_session(&id, |session| {
                    let note = session.watch.pending.take().map(|(_, text)| text);
                    (note.is_some(), note)
                })?;
                Ok(taken.and_then(|(_, note)| note))
            })
            .await
    }

    /// Relay every task change to the waiters until `stop`.
    pub async fn follow_tasks(self, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut feed = self.tasks.feed();
        let mut pokes = self.tasks.pokes();
        loop {
            tokio::select! {
                r = feed.recv() => match r {
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => self.poke(),
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
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
                let desk = resolve_desk(s, &cwd, desk_hint, agent, now)?;
                let mut session = Session::new(id, desk.name, agent, cwd, now);
                session.reach = reach;
                s.put_session(session)
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
        self.poke();
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
        let session = self
            .tasks
            .blocking(move |s, now| Ok(reconcile_stored(s, &id2, now)?.map(|(session, _)| session)))
            .await?;
        self.poke();
        Ok(session)
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

    /// Apply `event` to each of the desk's open tasks `which` selects; refusals (a task that
    /// changed meanwhile) are skipped.
    pub async fn for_desk_tasks(
        &self,
        desk: &DeskName,
        which: impl Fn(&Task) -> bool,
        event: impl Fn() -> Event,
    ) {
        let Ok(tasks) = self.desk_tasks(desk).await else {
            return;
        };
        for t in tasks.iter().filter(|t| which(t)) {
            if let Err(e) = self.tasks.apply(&t.id, event()).await {
                tracing::debug!(task = %t.id, error = %e, "skipped a session-driven change");
            }
        }
    }

    /// What the desk's session has still to be told, without claiming it.
    async fn undelivered(&self, desk: &DeskName) -> Result<Vec<Task>, StoreError> {
        let mut due: Vec<Task> = self
            .desk_tasks(desk)
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

    /// Claim everything the desk's session has to be told and return its text; `None` when
    /// there is nothing (or someone else claimed it first).
    pub async fn claim(&self, desk: &DeskName) -> Result<Option<String>, StoreError> {
        let mut texts = Vec::new();
        for t in self.undelivered(desk).await? {
            let (event, text) = if t.cancel_to_tell() {
                (Event::CancelTold, delivery::cancel_text(&t))
            } else {
                (Event::Delivered, delivery::task_text(&t))
            };
            match self.tasks.apply(&t.id, event).await {
                Ok(c) if c.changed => texts.push(text),
                Ok(_) | Err(StoreError::Transition(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok((!texts.is_empty()).then(|| texts.join("\n\n---\n\n")))
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
        let text = self.claim(&session.desk).await?;
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
        // Let an older waiter see it was superseded.
        self.poke();
        loop {
            let notified = self.inner.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
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
            if session.activity == taskkeeper_core::Activity::Idle {
                let note = self.claim_note(id).await?;
                let tasks = self.claim(&session.desk).await?;
                let text: Vec<String> = note.into_iter().chain(tasks).collect();
                if !text.is_empty() {
                    self.expect_turn(id);
                    return Ok(WaitOutcome::Deliver(text.join("\n\n---\n\n")));
                }
            }
            // The cap lets a level signal (a killed process) be noticed while nothing else
            // happens.
            let mut stop = self.stop.clone();
            tokio::select! {
                _ = tokio::time::timeout(Duration::from_secs(30), notified) => {}
                _ = stop.wait_for(|s| *s) => return Ok(WaitOutcome::Leave("the daemon is stopping")),
            }
            self.reconcile(id).await?;
        }
    }
}

impl Sessions {
    /// The tmux fallback: for each idle session that has something to be told, no waiter
    /// and a known tmux pane, paste the text (bracketed), press Enter separately, and
    /// confirm by the turn it starts; Enter is pressed once more if no turn starts, and the
    /// items are claimed only once a turn did. Runs until `stop`.
    pub async fn paste_loop(self) {
        let mut stop = self.stop.clone();
        loop {
            let recheck = match self.paste_pass().await {
                Ok(r) => r,
                Err(e) => {
                    tracing::warn!(error = %e, "paste delivery pass failed");
                    Some(Duration::from_secs(30))
                }
            };
            let changed = self.changed();
            tokio::select! {
                () = changed => {}
                () = async {
                    match recheck {
                        Some(d) => tokio::time::sleep(d).await,
                        None => std::future::pending().await,
                    }
                } => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
    }

    /// One pass; returns when to look again for a session that was too fresh to paste into.
    async fn paste_pass(&self) -> Result<Option<Duration>, StoreError> {
        let now = self.tasks.now();
        let sessions = self.tasks.blocking(|s, _| s.sessions(None)).await?;
        let mut recheck: Option<Duration> = None;
        let mut seen_desks = HashSet::new();
        for session in sessions {
            // The newest live session of a desk is the one that works there.
            if !session.is_live() || !seen_desks.insert(session.desk.clone()) {
                continue;
            }
            let (Some(pane), Some(socket)) = (
                session.reach.tmux_pane.clone(),
                session.reach.tmux_socket.clone(),
            ) else {
                continue;
            };
            if session.activity != taskkeeper_core::Activity::Idle
                || lock(&self.inner.waiting).contains(&session.id)
            {
                continue;
            }
            let young = now.since(session.since);
            if young < SETTLE {
                recheck = Some(recheck.map_or(SETTLE - young, |r| r.min(SETTLE - young)));
                continue;
            }
            let items = self.undelivered(&session.desk).await?;
            let note = session.watch.pending.clone().map(|(_, text)| text);
            if items.is_empty() && note.is_none() {
                continue;
            }
            let key: Vec<String> = items
                .iter()
                .map(|t| format!("{}@{}", t.id, t.version))
                .chain(note.iter().map(|n| n.chars().take(40).collect()))
                .collect();
            if lock(&self.inner.pasted).get(&session.id) == Some(&key) {
                continue;
            }
            lock(&self.inner.pasted).insert(session.id.clone(), key);
            let texts: Vec<String> = note
                .into_iter()
                .chain(items.iter().map(|t| {
                    if t.cancel_to_tell() {
                        delivery::cancel_text(t)
                    } else {
                        delivery::task_text(t)
                    }
                }))
                .collect();
            let this = self.clone();
            tokio::spawn(async move {
                if let Err(e) = this
                    .paste_and_confirm(&session, &socket, &pane, &texts.join("\n\n---\n\n"))
                    .await
                {
                    tracing::warn!(session = %session.id, error = %e, "paste delivery failed; the waiter or the next Stop will try");
                }
            });
        }
        Ok(recheck)
    }

    async fn paste_and_confirm(
        &self,
        session: &Session,
        socket: &str,
        pane: &str,
        text: &str,
    ) -> Result<(), String> {
        let turn0 = *lock(&self.inner.turns).get(&session.id).unwrap_or(&0);
        self.expect_turn(&session.id);
        tmux(socket, &["set-buffer", "-b", "taskkeeper", "--", text]).await?;
        tmux(
            socket,
            &["paste-buffer", "-p", "-d", "-b", "taskkeeper", "-t", pane],
        )
        .await?;
        for attempt in 0..2 {
            tokio::time::sleep(Duration::from_millis(150)).await;
            tmux(socket, &["send-keys", "-t", pane, "Enter"]).await?;
            let deadline = tokio::time::Instant::now() + VERIFY;
            while tokio::time::Instant::now() < deadline {
                if *lock(&self.inner.turns).get(&session.id).unwrap_or(&0) != turn0 {
                    // The session took it: now it is delivered.
                    self.claim_note(&session.id)
                        .await
                        .map_err(|e| e.to_string())?;
                    self.claim(&session.desk).await.map_err(|e| e.to_string())?;
                    tracing::info!(session = %session.id, attempt, "pasted into tmux and confirmed");
                    return Ok(());
                }
                let _ = tokio::time::timeout(Duration::from_millis(200), self.changed()).await;
            }
        }
        lock(&self.inner.expecting).remove(&session.id);
        Err(format!(
            "no turn started in pane {pane} after the paste and two Enters"
        ))
    }
}

/// Run one tmux command against the session's own tmux server.
async fn tmux(socket: &str, args: &[&str]) -> Result<(), String> {
    let out = tokio::process::Command::new("tmux")
        .arg("-S")
        .arg(socket)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("cannot run tmux: {e}"))?;
    if out.status.success() {
        Ok(())
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

fn resolve_desk(
    s: &taskkeeper_core::Store,
    cwd: &Path,
    hint: Option<String>,
    agent: AgentKind,
    now: taskkeeper_core::Timestamp,
) -> Result<Desk, StoreError> {
    let desks = s.desks()?;
    if let Some(name) = hint.filter(|h| !h.trim().is_empty()) {
        if let Some(d) = desks.iter().find(|d| d.name.as_str() == name) {
            return Ok(d.clone());
        }
        let parsed = name
            .parse()
            .map_err(|_| StoreError::NoSuchDesk(name.clone()))?;
        return s.add_desk(
            NewDesk {
                name: parsed,
                agent,
                dir: cwd.to_owned(),
            },
            now,
        );
    }
    if let Some(d) = desks
        .iter()
        .filter(|d| cwd.starts_with(&d.dir))
        .max_by_key(|d| d.dir.components().count())
    {
        return Ok(d.clone());
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
    let parsed = name
        .parse()
        .map_err(|_| StoreError::NoSuchDesk(name.clone()))?;
    tracing::info!(desk = %name, dir = %cwd.display(), "created a desk for a new session's directory");
    s.add_desk(
        NewDesk {
            name: parsed,
            agent,
            dir: PathBuf::from(cwd),
        },
        now,
    )
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
