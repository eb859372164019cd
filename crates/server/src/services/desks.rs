//! The desks service: adding, changing and removing desks, and the reads of desks each area
//! makes in one trip (a desk with the settings for its card, the owner's desk list, what the
//! auto-launch loop and the push delivery look at).

use std::collections::{BTreeMap, HashSet};

use taskkeeper_core::settings::Settings;
use taskkeeper_core::store::{DeskLoad, NewDesk};
use taskkeeper_core::{Desk, DeskName, Session, SessionId, StoreError, Timestamp, autolaunch};

use super::Stored;

/// The owner's desk list as read in one trip: the desks, what each holds of open work, every
/// session, and the time of the read.
pub type DeskOverview = (
    Vec<Desk>,
    BTreeMap<DeskName, DeskLoad>,
    Vec<Session>,
    Timestamp,
);

/// See the module doc.
#[derive(Clone, Debug)]
pub struct DeskStore(pub(crate) Stored);

impl DeskStore {
    /// Desk `name`.
    pub async fn get(&self, name: &str) -> Result<Option<Desk>, StoreError> {
        let name = name.to_owned();
        self.0.blocking(move |s, _| s.desk(&name)).await
    }

    /// Every desk, by name.
    pub async fn list(&self) -> Result<Vec<Desk>, StoreError> {
        self.0.blocking(|s, _| s.desks()).await
    }

    pub async fn add(&self, desk: NewDesk) -> Result<Desk, StoreError> {
        self.0.blocking(move |s, now| s.add_desk(desk, now)).await
    }

    /// Remove a desk that has no open tasks.
    pub async fn remove(&self, name: &DeskName) -> Result<(), StoreError> {
        let name = name.clone();
        self.0.blocking(move |s, _| s.remove_desk(&name)).await
    }

    pub async fn set_auto_launch(&self, name: &DeskName, on: bool) -> Result<Desk, StoreError> {
        let name = name.clone();
        self.0
            .blocking(move |s, _| s.set_auto_launch(&name, on))
            .await
    }

    pub async fn set_deliver_command(
        &self,
        name: &DeskName,
        command: Option<String>,
    ) -> Result<Desk, StoreError> {
        let name = name.clone();
        self.0
            .blocking(move |s, _| s.set_deliver_command(&name, command))
            .await
    }

    /// Desk `name` and the settings, in one trip (a desk's card, a worker's update).
    pub async fn with_settings(&self, name: &str) -> Result<(Option<Desk>, Settings), StoreError> {
        let name = name.to_owned();
        self.0
            .blocking(move |s, _| Ok((s.desk(&name)?, s.settings()?)))
            .await
    }

    /// Every desk and the settings, in one trip (the machine's card).
    pub async fn all_with_settings(&self) -> Result<(Vec<Desk>, Settings), StoreError> {
        self.0
            .blocking(|s, _| Ok((s.desks()?, s.settings()?)))
            .await
    }

    /// The owner's desk list, in one trip (see [`DeskOverview`]).
    pub async fn overview(&self) -> Result<DeskOverview, StoreError> {
        self.0
            .blocking(|s, now| Ok((s.desks()?, s.desk_loads()?, s.sessions(None)?, now)))
            .await
    }

    /// The desks set to launch by themselves, each with whether it has work a session would
    /// take and whether it has a live session, from indexes (no task is read).
    pub async fn auto_launch_work(&self) -> Result<Vec<(Desk, bool, bool)>, StoreError> {
        self.0
            .blocking(|s, _| {
                let mut desks = Vec::new();
                for desk in s.auto_launch_desks()? {
                    let work = s.desk_has_work(&desk.name)?;
                    let live = autolaunch::has_live_session(&s.sessions(Some(&desk.name))?);
                    desks.push((desk, work, live));
                }
                Ok(desks)
            })
            .await
    }

    /// The desks set to launch by themselves if the store has them in memory (`None`: not
    /// read since a desk last changed).
    pub fn cached_auto_launch(&self) -> Option<Vec<Desk>> {
        self.0.store.cached_auto_launch_desks()
    }

    /// The sessions and desks a delivery pass looks at: all of them (`None`), or the desks
    /// named and those of the sessions named, each desk that exists with its sessions.
    pub async fn sessions_and_desks(
        &self,
        named: Option<(HashSet<DeskName>, HashSet<SessionId>)>,
    ) -> Result<(Vec<Session>, Vec<Desk>), StoreError> {
        self.0
            .blocking(move |s, _| match named {
                None => Ok((s.sessions(None)?, s.desks()?)),
                Some((desks, sessions)) => {
                    let mut names = desks;
                    for id in &sessions {
                        if let Some(session) = s.session(id)? {
                            names.insert(session.desk);
                        }
                    }
                    let (mut all, mut found) = (Vec::new(), Vec::new());
                    for name in names {
                        if let Some(desk) = s.desk(name.as_str())? {
                            all.extend(s.sessions(Some(&name))?);
                            found.push(desk);
                        }
                    }
                    Ok((all, found))
                }
            })
            .await
    }
}
