//! The watchdog's reads: the desks a pass looks at, each read without its queue (its working
//! and blocked tasks, and of its queued tasks only those that may expire and the earliest),
//! batch by batch, so a pass never holds every session and task at once.

use std::collections::HashSet;

use taskkeeper_core::settings::Settings;
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{DeskName, Session, SessionId, Store, StoreError, Task, Timestamp, watchdog};

use super::Stored;

/// One desk as the watchdog reads it: its sessions and the open tasks its plan looks at.
pub type DeskState = (DeskName, Vec<Session>, Vec<Task>);

/// A pass's first read: the settings, the desks to look at, and, when they are at most
/// `batch`, all of them read.
pub type FirstRead = (Settings, Vec<DeskName>, Option<Vec<DeskState>>);

/// See the module doc.
#[derive(Clone, Debug)]
pub struct WatchdogReads(pub(crate) Stored);

impl WatchdogReads {
    /// The settings and the desks `named` names (every desk in use for `None`), and when
    /// they are few (a pass after a change) the desks read, all in one trip: this runs after
    /// every change of any task.
    pub async fn first(
        &self,
        named: Option<(HashSet<DeskName>, HashSet<SessionId>)>,
        now: Timestamp,
        batch: usize,
    ) -> Result<FirstRead, StoreError> {
        self.0
            .blocking(move |s, _| {
                let settings = s.settings()?;
                let names = desks_to_read(s, named)?;
                let created_by = watchdog::expired_if_created_by(now, &settings);
                let first = if names.len() <= batch {
                    Some(read_desks(s, names.clone(), created_by)?)
                } else {
                    None
                };
                Ok((settings, names, first))
            })
            .await
    }

    /// Read these desks (see the module doc), in one trip.
    pub async fn desks(
        &self,
        names: Vec<DeskName>,
        created_by: Timestamp,
    ) -> Result<Vec<DeskState>, StoreError> {
        self.0
            .blocking(move |s, _| read_desks(s, names, created_by))
            .await
    }
}

/// The desks `named` names: every desk with a session or an open task (`None`), or the desks
/// named and those of the sessions named.
fn desks_to_read(
    s: &Store,
    named: Option<(HashSet<DeskName>, HashSet<SessionId>)>,
) -> Result<Vec<DeskName>, StoreError> {
    match named {
        None => s.desks_in_use(),
        Some((desks, sessions)) => {
            let mut names = desks;
            for id in &sessions {
                if let Some(session) = s.session(id)? {
                    names.insert(session.desk);
                }
            }
            Ok(names.into_iter().collect())
        }
    }
}

fn read_desks(
    s: &Store,
    names: Vec<DeskName>,
    created_by: Timestamp,
) -> Result<Vec<DeskState>, StoreError> {
    names
        .into_iter()
        .map(|desk| {
            let sessions = s.sessions(Some(&desk))?;
            let mut tasks = s.tasks(&TaskFilter {
                state: StateFilter::Unqueued,
                desk: Some(desk.clone()),
                ..Default::default()
            })?;
            for t in s.expiring_tasks(&desk, created_by)? {
                if !tasks.iter().any(|held| held.id == t.id) {
                    tasks.push(t);
                }
            }
            Ok((desk, sessions, tasks))
        })
        .collect()
}
