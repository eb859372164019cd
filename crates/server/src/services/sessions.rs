//! The sessions service: the store's side of every session write (the sessions registry,
//! `crate::sessions::Sessions`, is its one writer: attaching, folding edges, corrections
//! from a level signal, the watchdog's and the owner's messages, a launched session, a
//! pause), and the reads of sessions.

use std::path::Path;

use taskkeeper_core::desk::{self, Placement};
use taskkeeper_core::session::{Activity, Level, Reach, Session, SessionId};
use taskkeeper_core::settings::Settings;
use taskkeeper_core::store::NewDesk;
use taskkeeper_core::{AgentKind, DeskName, Store, StoreError, Timestamp};

use super::Stored;

/// Reads a session's level signal, where it has one (`crate::sessions::level_of`).
pub type LevelOf = fn(&Session) -> Option<Level>;

/// A correction of a session from its level signal: the session and its activity before.
pub type Corrected = Option<(Session, Activity)>;

/// See the module doc.
#[derive(Clone, Debug)]
pub struct SessionStore(pub(crate) Stored);

impl SessionStore {
    pub async fn get(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        let id = id.clone();
        self.0.blocking(move |s, _| s.session(&id)).await
    }

    /// Sessions, most recently changed first; `desk` narrows to one desk.
    pub async fn list(&self, desk: Option<DeskName>) -> Result<Vec<Session>, StoreError> {
        self.0.blocking(move |s, _| s.sessions(desk.as_ref())).await
    }

    /// The settings, every session and the time of the read, in one trip.
    pub async fn with_settings(&self) -> Result<(Settings, Vec<Session>, Timestamp), StoreError> {
        self.0
            .blocking(|s, now| Ok((s.settings()?, s.sessions(None)?, now)))
            .await
    }

    /// Insert or replace a session (a session Taskkeeper launched).
    pub(crate) async fn put(&self, session: Session) -> Result<Session, StoreError> {
        self.0.blocking(move |s, _| s.put_session(session)).await
    }

    /// Change session `id` in one step (`Store::update_session`): `change` gets the session
    /// and the time of the call and says whether it changed anything. `None`: no such session.
    pub(crate) async fn update<R: Send + 'static>(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut Session, Timestamp) -> (bool, R) + Send + 'static,
    ) -> Result<Option<(Session, R)>, StoreError> {
        let id = id.clone();
        self.0
            .blocking(move |s, now| s.update_session(&id, move |x| change(x, now)))
            .await
    }

    /// Change the session that works on `task` (`core::session::works_on`: the one it was
    /// handed to), if one does, in the same trip as finding it.
    pub(crate) async fn update_working_on<R: Send + 'static>(
        &self,
        task: &taskkeeper_core::Task,
        change: impl FnOnce(&mut Session, Timestamp) -> (bool, R) + Send + 'static,
    ) -> Result<Option<(Session, R)>, StoreError> {
        let task = task.clone();
        self.0
            .blocking(move |s, now| {
                let sessions = s.sessions(Some(&task.desk))?;
                let Some(session) = taskkeeper_core::session::works_on(&task, &sessions) else {
                    return Ok(None);
                };
                s.update_session(&session.id, move |x| change(x, now))
            })
            .await
    }

    /// Change every session in one trip, each in its own step.
    pub(crate) async fn update_each(
        &self,
        change: impl Fn(&mut Session) -> bool + Send + Sync + 'static,
    ) -> Result<(), StoreError> {
        let change = std::sync::Arc::new(change);
        self.0
            .blocking(move |s, _| {
                for session in s.sessions(None)? {
                    let change = std::sync::Arc::clone(&change);
                    s.update_session(&session.id, move |x| (change(x), ()))?;
                }
                Ok(())
            })
            .await
    }

    /// The session, attaching it to a desk the first time it is seen (see
    /// `Sessions::attach`): a session already kept gets `reach` merged in; a new one is
    /// placed (`desk::place`) and added with the desk it asked for, if any, in one step.
    pub(crate) async fn attach(
        &self,
        id: &SessionId,
        cwd: &Path,
        desk_hint: Option<String>,
        reach: Reach,
        agent: AgentKind,
    ) -> Result<Session, StoreError> {
        let (id, cwd) = (id.clone(), cwd.to_owned());
        self.0
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

    /// Correct session `id` from its level signal in one step.
    pub(crate) async fn reconcile(
        &self,
        id: &SessionId,
        level_of: LevelOf,
    ) -> Result<Corrected, StoreError> {
        let id = id.clone();
        self.0
            .blocking(move |s, now| reconcile_stored(s, &id, now, level_of))
            .await
    }

    /// Every session, each corrected from its level signal first, in one trip; with the
    /// sessions whose activity moved.
    pub(crate) async fn reconcile_all(
        &self,
        level_of: LevelOf,
    ) -> Result<(Vec<Session>, Vec<(Session, Activity)>), StoreError> {
        self.0
            .blocking(move |s, now| {
                let mut sessions = s.sessions(None)?;
                let mut moved = Vec::new();
                for session in sessions.iter_mut() {
                    if let Some((fresh, before)) = reconcile_stored(s, &session.id, now, level_of)?
                    {
                        *session = fresh;
                        if session.activity != before {
                            moved.push((session.clone(), before));
                        }
                    }
                }
                Ok((sessions, moved))
            })
            .await
    }
}

/// The desk a new session works at (`desk::place`: the desk its hint names, else the desk its
/// directory belongs to, else a new one); the store creates a new desk together with the
/// session (`Store::add_session`), which also bounds how many desks sessions may create.
fn resolve_desk(
    s: &Store,
    cwd: &Path,
    hint: Option<String>,
    agent: AgentKind,
) -> Result<(DeskName, Option<NewDesk>), StoreError> {
    let desks = s.desks()?;
    let placed = desk::place(&desks, cwd, hint.as_deref(), s.settings()?.create_desks);
    match placed {
        Ok(Placement::Existing(name)) => Ok((name, None)),
        Ok(Placement::New(name)) => {
            let desk = NewDesk {
                name: name.clone(),
                agent,
                dir: cwd.to_owned(),
                deliver_command: None,
            };
            Ok((name, Some(desk)))
        }
        Err(unplaced) => Err(StoreError::NoSuchDesk(unplaced.to_string())),
    }
}

/// Correct a stored session from its level signal in one step: the level is read and the
/// decision made inside the same write as the update, so a hook that changed the session
/// meanwhile is never overwritten. Returns the session and its activity before.
fn reconcile_stored(
    s: &Store,
    id: &SessionId,
    now: Timestamp,
    level_of: LevelOf,
) -> Result<Corrected, StoreError> {
    s.update_session(id, move |session| {
        let before = session.activity;
        if let Some(level) = level_of(session) {
            session.reconcile(level, now);
        }
        (session.activity != before, before)
    })
}
