//! The sessions table: every session the daemon knows, its body as JSON beside the columns
//! its queries use, and the bounds on how many are kept.

use std::time::Duration;

use rusqlite::{OptionalExtension, params};

use super::desks::{NewDesk, insert_desk, load_desk};
use super::error::StoreError;
use super::open::Store;
use super::rows::filter_on;
use super::settings::load_settings;
use crate::clock::Timestamp;
use crate::desk::DeskName;
use crate::limits;
use crate::session::{Session, SessionId};

impl Store {
    /// Insert or replace a session (the adapters fold edges in and write the result).
    pub fn put_session(&self, session: Session) -> Result<Session, StoreError> {
        self.write(move |c| {
            if load_desk(c, session.desk.as_str())?.is_none() {
                return Err(StoreError::NoSuchDesk(session.desk.to_string()));
            }
            let body = serde_json::to_string(&session)?;
            c.prepare_cached(
                "INSERT INTO sessions (id, desk, body, updated_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (id) DO UPDATE SET desk = excluded.desk, body = excluded.body, \
                 updated_at = excluded.updated_at",
            )?
            .execute(params![
                session.id.as_str(),
                session.desk.as_str(),
                body,
                session.updated_at.as_millis()
            ])?;
            Ok(session)
        })
    }

    /// Take in a session seen for the first time, with the desk it asked for (`new_desk`)
    /// created in the same step. Both are bounded: a desk only while there are fewer than
    /// `sessions.create_desks_max`, and a session only while fewer than `sessions.max` are
    /// kept, or by taking the place of the oldest ended one (see [`limits::session_room`]).
    /// A refusal changes nothing. A session that is already there (its first hooks raced)
    /// is returned as it is.
    pub fn add_session(
        &self,
        session: Session,
        new_desk: Option<NewDesk>,
        now: Timestamp,
    ) -> Result<Session, StoreError> {
        self.desk_write(move |c| {
            let mut stmt = c.prepare_cached("SELECT body FROM sessions WHERE id = ?1")?;
            let body: Option<String> = stmt
                .query_row([session.id.as_str()], |r| r.get(0))
                .optional()?;
            if let Some(body) = body {
                return Ok(serde_json::from_str(&body)?);
            }
            let settings = load_settings(c)?;
            if let Some(desk) = new_desk {
                match load_desk(c, desk.name.as_str())? {
                    // Another session made the same desk a moment ago.
                    Some(d) if d.dir == desk.dir => {}
                    Some(_) => return Err(StoreError::DeskExists(desk.name)),
                    None => {
                        let desks: i64 =
                            c.query_row("SELECT COUNT(*) FROM desks", [], |r| r.get(0))?;
                        limits::desk_from_session(desks.unsigned_abs(), &settings.limits)?;
                        insert_desk(c, desk, now)?;
                    }
                }
            }
            if load_desk(c, session.desk.as_str())?.is_none() {
                return Err(StoreError::NoSuchDesk(session.desk.to_string()));
            }
            let kept: i64 = c.query_row("SELECT COUNT(*) FROM sessions", [], |r| r.get(0))?;
            let oldest_ended: Option<String> = c
                .prepare_cached(
                    "SELECT id FROM sessions WHERE json_extract(body, '$.activity') = 'ended' \
                     ORDER BY updated_at, id LIMIT 1",
                )?
                .query_row([], |r| r.get(0))
                .optional()?;
            let oldest_ended = oldest_ended.map(SessionId::from);
            if let Some(gone) =
                limits::session_room(kept.unsigned_abs(), oldest_ended, &settings.limits)?
            {
                c.execute("DELETE FROM sessions WHERE id = ?1", [gone.as_str()])?;
            }
            let body = serde_json::to_string(&session)?;
            c.prepare_cached(
                "INSERT INTO sessions (id, desk, body, updated_at) VALUES (?1, ?2, ?3, ?4)",
            )?
            .execute(params![
                session.id.as_str(),
                session.desk.as_str(),
                body,
                session.updated_at.as_millis()
            ])?;
            Ok(session)
        })
    }

    /// Delete sessions that ended and have not changed for more than `keep` before `now`;
    /// returns how many.
    pub fn prune_ended_sessions(
        &self,
        now: Timestamp,
        keep: Duration,
    ) -> Result<usize, StoreError> {
        let cutoff = now.minus(keep).as_millis();
        self.write(move |c| {
            Ok(c.execute(
                "DELETE FROM sessions WHERE json_extract(body, '$.activity') = 'ended' \
                 AND updated_at < ?1",
                [cutoff],
            )?)
        })
    }

    /// When the oldest ended session is due to be pruned, if any session has ended.
    pub fn next_session_prune_at(&self, keep: Duration) -> Result<Option<Timestamp>, StoreError> {
        self.read(|c| {
            let oldest: Option<i64> = c.query_row(
                "SELECT MIN(updated_at) FROM sessions WHERE json_extract(body, '$.activity') = 'ended'",
                [],
                |r| r.get(0),
            )?;
            Ok(oldest.map(|t| Timestamp::from_millis(t).plus(keep)))
        })
    }

    /// Change a session in one step: read, `change`, write, inside one write transaction,
    /// so concurrent hooks (a Stop and the waiter it starts) never write back a stale copy.
    /// `change` returns whether it changed anything; an unchanged session is not written.
    pub fn update_session<R: Send + 'static>(
        &self,
        id: &SessionId,
        change: impl FnOnce(&mut Session) -> (bool, R) + Send + 'static,
    ) -> Result<Option<(Session, R)>, StoreError> {
        let id = id.clone();
        self.write(move |c| {
            let mut stmt = c.prepare_cached("SELECT body FROM sessions WHERE id = ?1")?;
            let body: Option<String> = stmt.query_row([id.as_str()], |r| r.get(0)).optional()?;
            let Some(body) = body else { return Ok(None) };
            let mut session: Session = serde_json::from_str(&body)?;
            let (changed, out) = change(&mut session);
            if changed {
                let body = serde_json::to_string(&session)?;
                c.prepare_cached(
                    "UPDATE sessions SET desk = ?2, body = ?3, updated_at = ?4 WHERE id = ?1",
                )?
                .execute(params![
                    id.as_str(),
                    session.desk.as_str(),
                    body,
                    session.updated_at.as_millis()
                ])?;
            }
            Ok(Some((session, out)))
        })
    }

    pub fn session(&self, id: &SessionId) -> Result<Option<Session>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached("SELECT body FROM sessions WHERE id = ?1")?;
            let body: Option<String> = stmt.query_row([id.as_str()], |r| r.get(0)).optional()?;
            Ok(body.map(|b| serde_json::from_str(&b)).transpose()?)
        })
    }

    /// Sessions, most recently changed first; `desk` narrows to one desk.
    pub fn sessions(&self, desk: Option<&DeskName>) -> Result<Vec<Session>, StoreError> {
        self.read(|c| {
            let mut stmt = c.prepare_cached(&sessions_sql(desk.is_some()))?;
            let rows = stmt.query_map([desk.map(DeskName::as_str)], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for body in rows {
                out.push(serde_json::from_str(&body?)?);
            }
            Ok(out)
        })
    }
}

/// [`Store::sessions`]'s query: `?1` the desk.
pub(super) fn sessions_sql(desk_given: bool) -> String {
    format!(
        "SELECT body FROM sessions WHERE {} ORDER BY updated_at DESC, id",
        filter_on("desk", 1, desk_given)
    )
}
