//! The owner's desks and sessions: list, add, change and remove desks; launch, stop, pause
//! and answer a session's permission request. Part of the one owner service.

use std::str::FromStr;

use taskkeeper_core::store::NewDesk;
use taskkeeper_core::{AgentKind, DeskName, StoreError};

use crate::agents::launch::LaunchError;
use crate::error::OwnerErrorKind;

use super::{OwnerError, OwnerService, given, non_empty, parse_desk};
use crate::owner::api::{DeskView, SessionView};

/// A delivery command: a blank one is no command; one line only (it is shown and logged).
fn checked_command(command: Option<String>) -> Result<Option<String>, OwnerError> {
    let Some(command) = given(command) else {
        return Ok(None);
    };
    if command.contains(['\n', '\r', '\0']) || command.len() > 4096 {
        return Err(OwnerError::invalid(
            "deliverCommand must be one line of at most 4096 bytes; put a longer one in a script",
        ));
    }
    Ok(Some(command))
}

impl OwnerService {
    /// The desks, each with its open tasks and whether it has a live session (a desk with
    /// work and none is shown as such: nothing moves until a session is launched).
    pub async fn list_desks(&self) -> Result<Vec<DeskView>, OwnerError> {
        let (desks, loads, sessions, now) = self.tasks().desks().overview().await?;
        Ok(desks
            .iter()
            .map(|d| {
                let mut view = DeskView::from(d);
                let load = loads.get(&d.name).copied().unwrap_or_default();
                view.open_tasks = load.open_tasks;
                view.live_session = taskkeeper_core::autolaunch::has_live_session(
                    sessions.iter().filter(|x| x.desk == d.name),
                );
                view.needs_session = !view.live_session && load.has_work;
                crate::owner::autolaunch::describe(&mut view, &d.name, &self.auto_launches, now);
                view
            })
            .collect())
    }

    /// One desk as [`OwnerService::list_desks`] shows it.
    async fn desk_view(&self, name: &DeskName) -> Result<DeskView, OwnerError> {
        self.list_desks()
            .await?
            .into_iter()
            .find(|d| d.name == name.as_str())
            .ok_or_else(|| StoreError::NoSuchDesk(name.to_string()).into())
    }

    /// Turn a desk's launching a session by itself on or off; either way its guard starts
    /// afresh.
    pub async fn set_auto_launch(&self, name: &str, on: bool) -> Result<DeskView, OwnerError> {
        let name = parse_desk(name)?;
        let desk = name.clone();
        self.tasks().desks().set_auto_launch(&desk, on).await?;
        self.auto_launches.reset(&name);
        self.desk_view(&name).await
    }

    /// What the daemon launches by itself for a desk set to (`autolaunch.rs`): the same
    /// launch as the owner's.
    pub(crate) async fn launch_by_itself(
        &self,
        desk: &DeskName,
    ) -> Result<taskkeeper_core::Session, OwnerError> {
        Ok(self.launcher.launch(desk.as_str()).await?)
    }

    pub async fn add_desk(
        &self,
        name: &str,
        agent: Option<&str>,
        dir: &str,
        deliver_command: Option<String>,
    ) -> Result<DeskView, OwnerError> {
        let name = parse_desk(name)?;
        let deliver_command = checked_command(deliver_command)?;
        let agent = match agent {
            Some(a) => AgentKind::from_str(a).map_err(|e| OwnerError::invalid(e.to_string()))?,
            None => AgentKind::default(),
        };
        non_empty("dir", dir)?;
        let dir = std::path::PathBuf::from(dir);
        if !dir.is_absolute() {
            return Err(OwnerError::invalid(format!(
                "dir {} must be an absolute path",
                dir.display()
            )));
        }
        taskkeeper_core::session::check_dir(&dir)
            .map_err(|e| OwnerError::invalid(format!("dir: {e}")))?;
        let desk = NewDesk {
            name,
            agent,
            dir,
            deliver_command,
        };
        let desk = self.tasks().desks().add(desk).await?;
        Ok(DeskView::from(&desk))
    }

    /// Set or remove the command that delivers text to a desk's agent.
    pub async fn set_deliver_command(
        &self,
        name: &str,
        command: Option<String>,
    ) -> Result<DeskView, OwnerError> {
        let name = parse_desk(name)?;
        let command = checked_command(command)?;
        let desk = self
            .tasks()
            .desks()
            .set_deliver_command(&name, command)
            .await?;
        // Something may be waiting for exactly this way in.
        self.sessions.poke();
        Ok(DeskView::from(&desk))
    }

    /// Launch a headless session at a desk (Claude Code, Codex or Gemini, by the desk's
    /// agent); Taskkeeper speaks to it on its stdin.
    pub async fn launch_session(&self, desk: &str) -> Result<SessionView, OwnerError> {
        let session = self.launcher.launch(desk).await?;
        // The owner acted: a desk that gave up launching by itself tries again.
        self.auto_launches.reset(&session.desk);
        Ok(self.session_view(&session))
    }

    /// Answer what a launched session asks: allow the tool, or deny it (the model reads
    /// `message`). With `request_id`, only that request is answered.
    pub async fn answer_permission(
        &self,
        id: &str,
        allow: bool,
        message: Option<String>,
        request_id: Option<String>,
    ) -> Result<SessionView, OwnerError> {
        let id = taskkeeper_core::SessionId::from(id);
        let message = given(message);
        self.launcher
            .answer_permission(&id, allow, message.as_deref(), request_id.as_deref())
            .await?;
        let session = self
            .tasks
            .get_session(&id)
            .await?
            .ok_or_else(|| StoreError::NoSuchSession(id.to_string()))?;
        Ok(self.session_view(&session))
    }

    /// A session as the owner sees it, with what it asks the owner, if anything, and why a
    /// delivery to it did not go through.
    fn session_view(&self, session: &taskkeeper_core::Session) -> SessionView {
        let mut view = SessionView::from(session);
        view.permission = self
            .launcher
            .launched()
            .asked(&session.id)
            .map(|p| crate::owner::api::PermissionView::from(&p));
        view.delivery_problem = self
            .launcher
            .delivery()
            .problem(&session.id)
            .map(|p| crate::owner::api::DeliveryProblemView::from(&p));
        view
    }

    /// Stop a session Taskkeeper launched.
    pub async fn stop_session(&self, id: &str) -> Result<(), OwnerError> {
        Ok(self
            .launcher
            .stop_launched(&taskkeeper_core::SessionId::from(id))
            .await?)
    }

    pub async fn remove_desk(&self, name: &str) -> Result<(), OwnerError> {
        let name = parse_desk(name)?;
        Ok(self.tasks().desks().remove(&name).await?)
    }

    /// Sessions, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionView>, OwnerError> {
        // Hooks can be missed (Esc fires none): read the level signals before answering. As
        // any correction does, who follows a session that moved hears it, and the desk's
        // waiting-on-owner mark follows the activity.
        let sessions = self.sessions.reconcile_all().await?;
        Ok(sessions.iter().map(|s| self.session_view(s)).collect())
    }

    /// Pause or resume one session's reminders.
    pub async fn pause_session(&self, id: &str, paused: bool) -> Result<SessionView, OwnerError> {
        let id = taskkeeper_core::SessionId::from(id);
        let session = self
            .sessions
            .update(&id, move |x, _| {
                let changed = x.watch.paused != paused;
                x.watch.paused = paused;
                (changed, ())
            })
            .await?
            .map(|(x, ())| x)
            .ok_or_else(|| StoreError::NoSuchSession(id.to_string()))?;
        self.reschedule();
        Ok(self.session_view(&session))
    }
}

/// A launch refused or failed, as the owner's tools show it. The owner converts (the launcher
/// sits below it and names no owner type).
impl From<LaunchError> for OwnerError {
    fn from(e: LaunchError) -> Self {
        use LaunchError as L;
        let kind = match &e {
            L::Store(s) => return OwnerError::from(s.clone()),
            L::NotHeadless { .. } | L::NoDirectory { .. } => OwnerErrorKind::Invalid,
            L::NotLaunched(_) => OwnerErrorKind::NotFound,
            L::NothingAsked(_) | L::AskedSomethingElse { .. } => OwnerErrorKind::Conflict,
            L::SpawnAgent { .. } | L::Config { .. } | L::Unavailable => OwnerErrorKind::Internal,
        };
        OwnerError {
            kind,
            message: e.to_string(),
        }
    }
}
