//! The owner service: every action the owner can take, once. The HTTP owner API and the tray
//! app's commands are thin wrappers around it, so the two can never disagree.
//!
//! Task changes go through [`Tasks`], so they are published like every other change.

pub(crate) mod agents;
pub mod api;
pub(crate) mod autolaunch;
mod desks;
pub(crate) mod digest;
mod events;
mod routes;
mod snooze;
#[cfg(test)]
mod ui_types;
mod worker;

use serde::Deserialize;
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{DeskName, Event, Message, NewTask, StoreError, TaskId};

use crate::http::auth::{Credentials, token_hash};
use crate::owner::api::{AskerView, NewAsker, TaskDetail, TaskView};
use crate::tasks::Tasks;
use crate::token::Token;

pub use crate::error::{OwnerError, OwnerErrorKind};
pub(crate) use events::events;
pub(crate) use routes::room;
pub(crate) use worker::{UpdateRefused, worker_update};
pub use worker::{WorkerEnding, WorkerStatus};

#[derive(Clone, Debug)]
pub struct OwnerService {
    tasks: Tasks,
    credentials: Credentials,
    sessions: crate::sessions::Sessions,
    /// Launches, answers and stops the sessions Taskkeeper owns.
    launcher: crate::agents::launched::Launcher,
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
    /// The stalls the owner snoozed, waiting on the daemon's clock (`snooze.rs`).
    snoozes: std::sync::Arc<snooze::Snoozes>,
    /// What the network listener for askers on other machines is doing.
    network: tokio::sync::watch::Receiver<crate::network::NetworkStatus>,
    /// The key the Agent Cards are signed with.
    card_key: crate::card_key::CardKey,
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

/// The owner service reads as the owner: every task (`asker::may_read`).
const OWNER_READS: taskkeeper_core::asker::Reader<'static> = taskkeeper_core::asker::Reader::Owner;

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
        launcher: crate::agents::launched::Launcher,
        stop: tokio::sync::watch::Receiver<bool>,
        machine: crate::owner::agents::Machine,
        network: tokio::sync::watch::Receiver<crate::network::NetworkStatus>,
        card_key: crate::card_key::CardKey,
    ) -> Self {
        Self {
            tasks,
            credentials,
            sessions: launcher.sessions().clone(),
            launcher,
            schedule: std::sync::Arc::default(),
            settings_changed: std::sync::Arc::new(tokio::sync::watch::Sender::new(0)),
            stop,
            machine: std::sync::Arc::new(machine),
            auto_launches: std::sync::Arc::default(),
            snoozes: std::sync::Arc::default(),
            network,
            card_key,
        }
    }

    /// The network listener for askers on other machines, now.
    pub fn network(&self) -> crate::owner::api::NetworkView {
        crate::owner::api::NetworkView::from(&*self.network.borrow())
    }

    /// The key the Agent Cards are signed with now.
    pub fn card_key(&self) -> crate::owner::api::CardKeyView {
        crate::owner::api::CardKeyView::from(&self.card_key)
    }

    /// Make a new card-signing key and sign every card with it from now on; the old one is
    /// gone, and no longer verifies against the published key set.
    pub async fn rotate_card_key(&self) -> Result<crate::owner::api::CardKeyView, OwnerError> {
        let key = self.card_key.clone();
        let internal = |message: String| OwnerError {
            kind: OwnerErrorKind::Internal,
            message,
        };
        tokio::task::spawn_blocking(move || key.rotate())
            .await
            .map_err(|e| internal(e.to_string()))?
            .map_err(|e| internal(e.to_string()))?;
        Ok(self.card_key())
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

    pub(crate) fn launcher(&self) -> &crate::agents::launched::Launcher {
        &self.launcher
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

    /// What every setting is (core's settings table): what the settings panel draws and
    /// `taskkeeper settings list` prints.
    pub fn settings_catalogue(&self) -> crate::owner::api::SettingsCatalogue {
        crate::owner::api::SettingsCatalogue::of_core()
    }

    /// Every setting as text, keyed by name.
    pub async fn settings(&self) -> Result<SettingsMap, OwnerError> {
        let settings = self.tasks.setting_store().get().await?;
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
        let mut check = self.tasks.setting_store().get().await?;
        for (k, v) in &changes {
            check
                .set(k, v)
                .map_err(|e| OwnerError::invalid(e.to_string()))?;
        }
        // One transaction: a concurrent change cannot leave half of these written.
        self.tasks.setting_store().set(changes).await?;
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
        let task_for_text = task.clone();
        let found = self
            .sessions
            .update_working_on(&task, move |x, now| {
                // The owner asked: not counted against the hourly cap.
                x.watch.record(now, false, |seq| {
                    taskkeeper_core::delivery::watchdog_text(seq, &[&task_for_text], &[])
                });
                (true, ())
            })
            .await?
            .is_some();
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

    /// The digest since the owner last took one; `take` records this one as taken, so the
    /// next starts from now.
    pub async fn digest(&self, take: bool) -> Result<crate::owner::api::DigestView, OwnerError> {
        let (tasks, since, now) = self.tasks.marks().digest(take).await?;
        Ok(crate::owner::api::DigestView::from(
            &taskkeeper_core::digest::digest(&tasks, since, now),
        ))
    }

    /// The digest's counts, without taking it.
    pub async fn digest_counts(&self) -> Result<taskkeeper_core::digest::Counts, OwnerError> {
        Ok(self.digest(false).await?.counts.into())
    }

    /// Fill in the timelines of the open tasks among `views` (`core::watchdog::timeline`),
    /// from one read of the settings and the sessions.
    async fn with_timelines(
        &self,
        tasks: Vec<taskkeeper_core::Task>,
    ) -> Result<Vec<TaskView>, OwnerError> {
        let (settings, sessions, now) = self.tasks.session_store().with_settings().await?;
        // By desk once: a scan of every session per task would be quadratic in a long list.
        let mut by_desk: std::collections::HashMap<&DeskName, Vec<&taskkeeper_core::Session>> =
            std::collections::HashMap::new();
        for s in sessions.iter().filter(|s| s.is_live()) {
            by_desk.entry(&s.desk).or_default().push(s);
        }
        Ok(tasks
            .iter()
            .map(|t| {
                let mut view = TaskView::from(t);
                let desk = by_desk.get(&t.desk).into_iter().flatten().copied();
                let session = taskkeeper_core::session::works_on(t, desk);
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

    /// The tasks the query names, every one the owner may read (`asker::may_read`: all).
    pub async fn list_tasks(&self, query: TaskQuery) -> Result<Vec<TaskView>, OwnerError> {
        let filter = query.to_filter()?;
        let mut tasks = self.tasks.list(filter).await?;
        tasks.retain(|t| taskkeeper_core::asker::may_read(OWNER_READS, t));
        self.with_timelines(tasks).await
    }

    /// One task in full, if the owner may read it (`asker::may_read`: any).
    pub async fn get_task(&self, id: &str) -> Result<TaskDetail, OwnerError> {
        let id = TaskId::from(id);
        let task = self
            .tasks
            .get(&id)
            .await?
            .filter(|t| taskkeeper_core::asker::may_read(OWNER_READS, t))
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
            asker: taskkeeper_core::asker::OWNER.to_owned(),
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
        let asker = self.tasks.askers().add(name, &hash).await?;
        self.credentials.add_asker(&asker);
        tracing::info!(asker = %asker.name, "asker added");
        let network = self.network();
        Ok(NewAsker {
            asker: AskerView::from(&asker),
            token: token.as_str().to_owned(),
            card_key: self.card_key(),
            network: (network.state == crate::owner::api::NetworkStateView::Listening)
                .then_some(network),
        })
    }

    pub async fn list_askers(&self) -> Result<Vec<AskerView>, OwnerError> {
        let askers = self.tasks.askers().list().await?;
        Ok(askers.iter().map(AskerView::from).collect())
    }

    /// Remove an asker: its token stops working at once; its tasks stay.
    pub async fn remove_asker(&self, name: &str) -> Result<(), OwnerError> {
        self.tasks.askers().remove(name).await?;
        self.credentials.remove_asker(name);
        tracing::info!(asker = %name, "asker removed");
        Ok(())
    }
}
