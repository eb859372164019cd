//! The owner service: every action the owner can take, once. The HTTP owner API and the tray
//! app's commands are thin wrappers around it, so the two can never disagree.
//!
//! Task changes go through [`Tasks`], so they are published like every other change.

pub(crate) mod agents;
pub mod api;
pub(crate) mod autolaunch;
pub(crate) mod digest;
mod error;
mod events;
mod routes;
#[cfg(test)]
mod ui_types;
mod worker;

use std::str::FromStr;

use serde::Deserialize;
use taskkeeper_core::store::{NewDesk, OWNER_ASKER, StateFilter, TaskFilter};
use taskkeeper_core::{
    AgentKind, DeskName, Event, Message, NewTask, Store, StoreError, TaskId, Timestamp,
};

use crate::http::auth::{Credentials, token_hash};
use crate::owner::api::{AskerView, DeskView, NewAsker, SessionView, TaskDetail, TaskView};
use crate::tasks::Tasks;
use crate::token::Token;

pub use error::{OwnerError, OwnerErrorKind};
pub(crate) use events::events;
pub(crate) use routes::room;
pub(crate) use worker::{UpdateRefused, worker_update};
pub use worker::{WorkerEnding, WorkerStatus};

#[derive(Clone, Debug)]
pub struct OwnerService {
    tasks: Tasks,
    credentials: Credentials,
    sessions: crate::sessions::Sessions,
    /// Poked when a setting or an owner action moves the watchdog's next due time.
    schedule: std::sync::Arc<tokio::sync::Notify>,
    /// Counts settings changes, for those who show a setting (the tray, the owner's events).
    settings_changed: std::sync::Arc<tokio::sync::watch::Sender<u64>>,
    /// The daemon is stopping: the owner's event streams end.
    stop: tokio::sync::watch::Receiver<bool>,
    /// Where Connect finds agents' settings and what it names (`agents.rs`).
    machine: std::sync::Arc<crate::owner::agents::Machine>,
    /// The desks that launch a session by themselves: their guard (`autolaunch.rs`).
    auto_launches: std::sync::Arc<crate::owner::autolaunch::AutoLaunches>,
}

/// Which tasks to list.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct TaskQuery {
    /// `open`, `ended` or absent for all.
    pub state: Option<String>,
    pub desk: Option<String>,
}

impl TaskQuery {
    pub fn open() -> Self {
        Self {
            state: Some("open".into()),
            desk: None,
        }
    }

    fn to_filter(&self) -> Result<TaskFilter, OwnerError> {
        let state = match self.state.as_deref() {
            None | Some("all") => StateFilter::All,
            Some("open") => StateFilter::Open,
            Some("ended") => StateFilter::Ended,
            Some(other) => {
                return Err(OwnerError::invalid(format!(
                    "unknown state filter {other:?}: use open, ended or all"
                )));
            }
        };
        let desk = self.desk.as_deref().map(parse_desk).transpose()?;
        Ok(TaskFilter {
            state,
            desk,
            asker: None,
            limit: None,
        })
    }
}

fn parse_desk(name: &str) -> Result<DeskName, OwnerError> {
    name.parse()
        .map_err(|e: taskkeeper_core::desk::InvalidDeskName| OwnerError::invalid(e.to_string()))
}

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

/// Every setting as text, keyed by name (the owner API's and the app's settings map).
pub type SettingsMap = serde_json::Map<String, serde_json::Value>;

/// A setting's value as the store keeps it: text, or a number or a boolean as its text.
fn setting_text(key: &str, value: serde_json::Value) -> Result<String, OwnerError> {
    match value {
        serde_json::Value::String(s) => Ok(s),
        serde_json::Value::Number(n) => Ok(n.to_string()),
        serde_json::Value::Bool(b) => Ok(b.to_string()),
        other => Err(OwnerError::invalid(format!(
            "{key}: give the value as text, not {other}"
        ))),
    }
}

/// Optional text from any caller: blank text is no text, the same for every caller.
fn given(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.trim().is_empty())
}

fn non_empty(field: &str, text: &str) -> Result<(), OwnerError> {
    if text.trim().is_empty() {
        Err(OwnerError::invalid(format!("{field} must not be empty")))
    } else {
        Ok(())
    }
}

impl OwnerService {
    pub(crate) fn new(
        tasks: Tasks,
        credentials: Credentials,
        sessions: crate::sessions::Sessions,
        stop: tokio::sync::watch::Receiver<bool>,
        machine: crate::owner::agents::Machine,
    ) -> Self {
        Self {
            tasks,
            credentials,
            sessions,
            schedule: std::sync::Arc::default(),
            settings_changed: std::sync::Arc::new(tokio::sync::watch::Sender::new(0)),
            stop,
            machine: std::sync::Arc::new(machine),
            auto_launches: std::sync::Arc::default(),
        }
    }

    pub(crate) fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    pub(crate) fn auto_launches(&self) -> std::sync::Arc<crate::owner::autolaunch::AutoLaunches> {
        self.auto_launches.clone()
    }

    pub(crate) fn machine(&self) -> std::sync::Arc<crate::owner::agents::Machine> {
        self.machine.clone()
    }

    pub(crate) fn sessions(&self) -> &crate::sessions::Sessions {
        &self.sessions
    }

    pub(crate) fn stopping(&self) -> tokio::sync::watch::Receiver<bool> {
        self.stop.clone()
    }

    pub(crate) fn schedule_changed(&self) -> std::sync::Arc<tokio::sync::Notify> {
        self.schedule.clone()
    }

    fn reschedule(&self) {
        // notify_one keeps the permit if the watchdog is busy planning right now.
        self.schedule.notify_one();
    }

    /// Every setting as text, keyed by name.
    pub async fn settings(&self) -> Result<SettingsMap, OwnerError> {
        let settings = self.blocking(|s, _| s.settings()).await?;
        Ok(settings
            .pairs()
            .into_iter()
            .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v)))
            .collect())
    }

    /// Change settings (`{key: value}`; a value is text, and a number or a boolean is read as
    /// its text); all are checked first, and one invalid value changes nothing. Answers every
    /// setting. The owner API, the app and the CLI all come here.
    pub async fn set_settings(&self, changes: SettingsMap) -> Result<SettingsMap, OwnerError> {
        let changes = changes
            .into_iter()
            .map(|(key, value)| setting_text(&key, value).map(|text| (key, text)))
            .collect::<Result<Vec<_>, _>>()?;
        self.set_setting_texts(changes).await
    }

    /// Pause (or resume) every reminder: the setting `reminders.paused`. Answers every setting.
    pub async fn pause_reminders(&self, paused: bool) -> Result<SettingsMap, OwnerError> {
        self.set_setting_texts(vec![(
            taskkeeper_core::settings::REMINDERS_PAUSED.to_owned(),
            paused.to_string(),
        )])
        .await
    }

    async fn set_setting_texts(
        &self,
        changes: Vec<(String, String)>,
    ) -> Result<SettingsMap, OwnerError> {
        let mut check = self.blocking(|s, _| s.settings()).await?;
        for (k, v) in &changes {
            check
                .set(k, v)
                .map_err(|e| OwnerError::invalid(e.to_string()))?;
        }
        self.blocking(move |s, _| {
            for (k, v) in &changes {
                s.set_setting(k, v)?;
            }
            Ok(())
        })
        .await?;
        self.reschedule();
        self.settings_changed
            .send_modify(|n| *n = n.wrapping_add(1));
        self.settings().await
    }

    /// Changes when a session changed in a way the owner sees (re-read the sessions).
    pub fn session_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.sessions.session_changes()
    }

    /// Changes when a setting was changed (through this service: the owner API, the app, the
    /// CLI); `changed()` on it returns at once for a change not yet seen.
    pub fn settings_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.settings_changed.subscribe()
    }

    /// Remind the session holding this task now, outside the ladder.
    pub async fn remind_now(&self, id: &str) -> Result<TaskView, OwnerError> {
        let id = TaskId::from(id);
        let task = self
            .tasks
            .get(&id)
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(id.clone()))?;
        if task.state() != taskkeeper_core::TaskState::Working {
            return Err(OwnerError::invalid(format!(
                "task {id} is {}; only a working task can be reminded",
                task.state()
            )));
        }
        let desk = task.desk.clone();
        let task_for_text = task.clone();
        let found = self
            .blocking(move |s, now| {
                let sessions = s.sessions(Some(&desk))?;
                let Some(session) = taskkeeper_core::session::holder(&sessions) else {
                    return Ok(false);
                };
                // The owner asked: not counted against the hourly cap.
                let updated = s.update_session(&session.id, move |x| {
                    x.watch.record(now, false, |seq| {
                        taskkeeper_core::delivery::watchdog_text(seq, &[&task_for_text], &[])
                    });
                    (true, ())
                })?;
                Ok(updated.is_some())
            })
            .await?;
        if !found {
            return Err(OwnerError::invalid(format!(
                "no live session at desk {}; nobody to remind",
                task.desk
            )));
        }
        self.tasks.poke_sessions();
        Ok(TaskView::from(&task))
    }

    /// A stalled task's ladder starts again.
    pub async fn resume_task(&self, id: &str) -> Result<TaskView, OwnerError> {
        let changed = self.tasks.apply(&TaskId::from(id), Event::Resume).await?;
        self.reschedule();
        Ok(TaskView::from(&changed.task))
    }

    /// Tell the owner about a stalled task again after `after` (a notification's "Snooze 1 h"),
    /// if it is still stalled then. The task itself is not changed, and a snooze does not
    /// outlive the daemon: after a restart the stall shows in the tray and the list as ever.
    pub async fn snooze_task(
        &self,
        id: &str,
        after: std::time::Duration,
    ) -> Result<TaskView, OwnerError> {
        let id = TaskId::from(id);
        let task = self
            .tasks
            .get(&id)
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(id.clone()))?;
        if task.stalled_at.is_none() || !task.is_open() {
            return Err(OwnerError::invalid(format!(
                "task {id} is not stalled ({}); only a stalled task can be snoozed",
                task.state()
            )));
        }
        tracing::info!(task = %id, after_s = after.as_secs(), "stall snoozed");
        let (tasks, notifier, mut stop) = (
            self.tasks.clone(),
            self.sessions.notifier().clone(),
            self.stop.clone(),
        );
        tokio::spawn(async move {
            tokio::select! {
                () = tokio::time::sleep(after) => {}
                _ = stop.wait_for(|stopping| *stopping) => return,
            }
            match tasks.get(&id).await {
                Ok(Some(task)) if task.is_open() && task.stalled_at.is_some() => {
                    notifier.stalled(&task);
                }
                Ok(_) => tracing::debug!(task = %id, "a snoozed stall ended meanwhile"),
                Err(error) => {
                    tracing::warn!(%error, task = %id, "could not re-read a snoozed task")
                }
            }
        });
        Ok(TaskView::from(&task))
    }

    /// Pause or resume one session's reminders.
    pub async fn pause_session(&self, id: &str, paused: bool) -> Result<SessionView, OwnerError> {
        let id = taskkeeper_core::SessionId::from(id);
        let session = self
            .blocking(move |s, _| {
                let updated = s.update_session(&id, move |x| {
                    let changed = x.watch.paused != paused;
                    x.watch.paused = paused;
                    (changed, ())
                })?;
                updated
                    .map(|(x, ())| x)
                    .ok_or_else(|| StoreError::NoSuchSession(id.to_string()))
            })
            .await?;
        self.reschedule();
        Ok(self.session_view(&session))
    }

    async fn blocking<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Store, Timestamp) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, OwnerError> {
        Ok(self.tasks.blocking(f).await?)
    }

    /// The desks, each with its open tasks and whether it has a live session (a desk with
    /// work and none is shown as such: nothing moves until a session is launched).
    pub async fn list_desks(&self) -> Result<Vec<DeskView>, OwnerError> {
        let (desks, open, sessions, now) = self
            .blocking(|s, now| {
                let open = s.tasks(&TaskFilter {
                    state: StateFilter::Open,
                    desk: None,
                    asker: None,
                    limit: None,
                })?;
                Ok((s.desks()?, open, s.sessions(None)?, now))
            })
            .await?;
        Ok(desks
            .iter()
            .map(|d| {
                let mut view = DeskView::from(d);
                let desk_tasks: Vec<_> = open.iter().filter(|t| t.desk == d.name).collect();
                view.open_tasks = desk_tasks.len();
                view.live_session = taskkeeper_core::autolaunch::has_live_session(
                    sessions.iter().filter(|x| x.desk == d.name),
                );
                view.needs_session = !view.live_session
                    && taskkeeper_core::autolaunch::has_work(desk_tasks.iter().copied());
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
        self.blocking(move |s, _| s.set_auto_launch(&desk, on))
            .await?;
        self.auto_launches.reset(&name);
        self.desk_view(&name).await
    }

    /// What the daemon launches by itself for a desk set to (`autolaunch.rs`): the same
    /// launch as the owner's.
    pub(crate) async fn launch_by_itself(
        &self,
        desk: &DeskName,
    ) -> Result<taskkeeper_core::Session, OwnerError> {
        Ok(self.sessions.launch(desk.as_str()).await?)
    }

    /// The digest since the owner last took one; `take` records this one as taken, so the
    /// next starts from now.
    pub async fn digest(&self, take: bool) -> Result<crate::owner::api::DigestView, OwnerError> {
        self.blocking(move |s, now| {
            let since = s.mark(taskkeeper_core::digest::TAKEN)?;
            let tasks = s.tasks(&TaskFilter::default())?;
            let view = crate::owner::api::DigestView::from(&taskkeeper_core::digest::digest(
                &tasks, since, now,
            ));
            if take {
                s.set_mark(taskkeeper_core::digest::TAKEN, now)?;
            }
            Ok(view)
        })
        .await
    }

    /// The digest's counts, without taking it.
    pub async fn digest_counts(&self) -> Result<crate::owner::api::DigestCounts, OwnerError> {
        Ok(self.digest(false).await?.counts)
    }

    /// Fill in the timelines of the open tasks among `views` (`core::watchdog::timeline`),
    /// from one read of the settings and the sessions.
    async fn with_timelines(
        &self,
        tasks: Vec<taskkeeper_core::Task>,
    ) -> Result<Vec<TaskView>, OwnerError> {
        let (settings, sessions, now) = self
            .blocking(|s, now| Ok((s.settings()?, s.sessions(None)?, now)))
            .await?;
        // By desk once: a scan of the holders per task would be quadratic in a long list.
        let by_desk: std::collections::HashMap<&DeskName, &taskkeeper_core::Session> =
            taskkeeper_core::session::holders(&sessions)
                .into_iter()
                .map(|s| (&s.desk, s))
                .collect();
        Ok(tasks
            .iter()
            .map(|t| {
                let mut view = TaskView::from(t);
                let session = by_desk.get(&t.desk).copied();
                let timeline = taskkeeper_core::watchdog::timeline(
                    t,
                    session,
                    &settings,
                    settings.reminders_paused,
                    now,
                );
                view.timeline = Some(crate::owner::api::TimelineView::from(&timeline));
                view
            })
            .collect())
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
            None => AgentKind::ClaudeCode,
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
        self.blocking(move |s, now| s.add_desk(desk, now).map(|d| DeskView::from(&d)))
            .await
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
            .blocking(move |s, _| s.set_deliver_command(&name, command))
            .await?;
        // Something may be waiting for exactly this way in.
        self.sessions.poke();
        Ok(DeskView::from(&desk))
    }

    /// Launch a headless session at a desk (Claude Code, Codex or Gemini, by the desk's
    /// agent); Taskkeeper speaks to it on its stdin.
    pub async fn launch_session(&self, desk: &str) -> Result<SessionView, OwnerError> {
        let session = self.sessions.launch(desk).await?;
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
        self.sessions
            .answer_permission(&id, allow, message.as_deref(), request_id.as_deref())
            .await?;
        let session = self
            .tasks
            .get_session(&id)
            .await?
            .ok_or_else(|| StoreError::NoSuchSession(id.to_string()))?;
        Ok(self.session_view(&session))
    }

    /// A session as the owner sees it, with what it asks the owner, if anything.
    fn session_view(&self, session: &taskkeeper_core::Session) -> SessionView {
        let mut view = SessionView::from(session);
        view.permission = self
            .sessions
            .launched()
            .asked(&session.id)
            .map(|p| crate::owner::api::PermissionView::from(&p));
        view
    }

    /// Stop a session Taskkeeper launched.
    pub async fn stop_session(&self, id: &str) -> Result<(), OwnerError> {
        Ok(self
            .sessions
            .stop_launched(&taskkeeper_core::SessionId::from(id))
            .await?)
    }

    pub async fn remove_desk(&self, name: &str) -> Result<(), OwnerError> {
        let name = parse_desk(name)?;
        self.blocking(move |s, _| s.remove_desk(&name)).await
    }

    pub async fn list_tasks(&self, query: TaskQuery) -> Result<Vec<TaskView>, OwnerError> {
        let filter = query.to_filter()?;
        let tasks = self.tasks.list(filter).await?;
        self.with_timelines(tasks).await
    }

    pub async fn get_task(&self, id: &str) -> Result<TaskDetail, OwnerError> {
        let id = TaskId::from(id);
        let task = self
            .tasks
            .get(&id)
            .await?
            .ok_or(StoreError::NoSuchTask(id))?;
        let mut detail = TaskDetail::from(&task);
        if let Some(view) = self.with_timelines(vec![task]).await?.pop() {
            detail.task = view;
        }
        Ok(detail)
    }

    /// The owner gives a desk a task (asker `owner`).
    pub async fn create_task(
        &self,
        desk: &str,
        text: &str,
        message_id: Option<String>,
    ) -> Result<TaskView, OwnerError> {
        let desk = parse_desk(desk)?;
        non_empty("text", text)?;
        let message_id = message_id.unwrap_or_else(|| TaskId::generate().to_string());
        let new = NewTask {
            desk,
            asker: OWNER_ASKER.to_owned(),
            request: Message::user_text(message_id, text),
            context_id: None,
            metadata: serde_json::Map::new(),
        };
        Ok(TaskView::from(&self.tasks.submit(new).await?.task))
    }

    /// The worker's update, as `task update` gives it: an ending, or `working`, with files
    /// and data to attach (see [`worker_update`]).
    pub async fn update_task(
        &self,
        id: &str,
        status: WorkerStatus,
        text: &str,
        files: &[String],
        data: Vec<serde_json::Value>,
    ) -> Result<TaskView, OwnerError> {
        let task = self
            .tasks
            .get(&TaskId::from(id))
            .await?
            .ok_or_else(|| StoreError::NoSuchTask(TaskId::from(id)))?;
        let task = worker_update(&self.tasks, &task, status, text, files, data).await?;
        Ok(TaskView::from(&task))
    }

    pub async fn cancel_task(
        &self,
        id: &str,
        reason: Option<String>,
    ) -> Result<TaskView, OwnerError> {
        // A blank reason is no reason: the asker reads the default, whoever cancelled.
        let reason = given(reason).or_else(|| Some("Canceled by the owner.".to_owned()));
        let event = Event::Cancel { reason };
        Ok(TaskView::from(
            &self.tasks.apply(&TaskId::from(id), event).await?.task,
        ))
    }

    /// Sessions, most recently active first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionView>, OwnerError> {
        // Hooks can be missed (Esc fires none): read the level signals before answering.
        let (sessions, moved) = self
            .blocking(|s, now| {
                let mut sessions = s.sessions(None)?;
                let mut moved = Vec::new();
                for session in sessions.iter_mut() {
                    let updated = crate::sessions::reconcile_stored(s, &session.id, now)?;
                    if let Some((fresh, before)) = updated {
                        *session = fresh;
                        if session.activity != before {
                            moved.push((session.clone(), before));
                        }
                    }
                }
                Ok((sessions, moved))
            })
            .await?;
        // As any correction does: who follows the session hears it, and the desk's
        // waiting-on-owner mark follows the activity.
        for (session, before) in moved {
            self.sessions.reconciled(&session, before).await;
        }
        Ok(sessions.iter().map(|s| self.session_view(s)).collect())
    }

    /// Every task change as it is committed: the tray and the UI follow this instead of
    /// polling.
    pub fn changes(
        &self,
    ) -> tokio::sync::broadcast::Receiver<std::sync::Arc<taskkeeper_core::Task>> {
        self.tasks.feed()
    }

    /// Register an asker; the answer carries its token, which is not kept and cannot be
    /// shown again.
    pub async fn add_asker(&self, name: &str) -> Result<NewAsker, OwnerError> {
        let token = Token::generate();
        let hash = token_hash(token.as_str());
        let name = name.to_owned();
        let asker = self
            .blocking(move |s, now| s.add_asker(&name, &hash, now))
            .await?;
        self.credentials.add_asker(&asker);
        tracing::info!(asker = %asker.name, "asker added");
        Ok(NewAsker {
            asker: AskerView::from(&asker),
            token: token.as_str().to_owned(),
        })
    }

    pub async fn list_askers(&self) -> Result<Vec<AskerView>, OwnerError> {
        self.blocking(|s, _| Ok(s.askers()?.iter().map(AskerView::from).collect()))
            .await
    }

    /// Remove an asker: its token stops working at once; its tasks stay.
    pub async fn remove_asker(&self, name: &str) -> Result<(), OwnerError> {
        let owned = name.to_owned();
        self.blocking(move |s, _| s.remove_asker(&owned)).await?;
        self.credentials.remove_asker(name);
        tracing::info!(asker = %name, "asker removed");
        Ok(())
    }
}
