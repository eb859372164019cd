//! The Tauri commands the window calls. They are thin: each one forwards to the daemon's
//! [`OwnerService`], the same service behind the owner HTTP API, so an owner action exists once
//! (design.md §8) and the webview never needs the owner token or a port. Arguments arrive in
//! camelCase; errors leave as `{kind, message}` ([`OwnerError`]), the same kinds as `/api`.
//!
//! | command | arguments | answers | owner API twin |
//! |---|---|---|---|
//! | `list_tasks` | `state?` (`open`, `ended`, `all`), `desk?` | `TaskView[]` | `GET /api/tasks` |
//! | `list_open_tasks` | | `TaskView[]` | `GET /api/tasks?state=open` |
//! | `get_task` | `id` | `TaskDetail` | `GET /api/tasks/{id}` |
//! | `cancel_task` | `id`, `reason?` | `TaskView` | `POST /api/tasks/{id}/cancel` |
//! | `remind_task` | `id` | `TaskView` | `POST /api/tasks/{id}/remind` |
//! | `resume_task` | `id` | `TaskView` | `POST /api/tasks/{id}/resume` |
//! | `list_desks` | | `DeskView[]` | `GET /api/desks` |
//! | `set_deliver_command` | `name`, `command` (text, or null/blank for none) | `DeskView` | `PATCH /api/desks/{name}` |
//! | `set_auto_launch` | `name`, `on` | `DeskView` | `PATCH /api/desks/{name}` (`autoLaunch`) |
//! | `get_digest` | `take` (mark it read) | `DigestView` | `GET /api/digest`, `POST` to take |
//! | `list_sessions` | | `SessionView[]` | `GET /api/sessions` |
//! | `pause_session`, `resume_session` | `id` | `SessionView` | `POST /api/sessions/{id}/pause`, `…/resume` |
//! | `launch_session` | `desk` | `SessionView` | `POST /api/desks/{name}/launch` |
//! | `stop_session` | `id` | | `POST /api/sessions/{id}/stop` |
//! | `answer_permission` | `id`, `allow`, `message?`, `requestId?` | `SessionView` | `POST /api/sessions/{id}/permission` |
//! | `get_settings` | | `{key: value}` | `GET /api/settings` |
//! | `save_settings` | `changes` (`{key: value}`) | `{key: value}` | `PUT /api/settings` |
//! | `pause_reminders`, `resume_reminders` | | `{key: value}` | `POST /api/reminders/pause`, `…/resume` |
//! | `list_agents` | | `AgentView[]` | `GET /api/agents` |
//! | `connect_agent` | `agent`, `force?` | `AgentChange` | `POST /api/agents/{agent}/connect` |
//! | `disconnect_agent` | `agent` | `AgentChange` | `POST /api/agents/{agent}/disconnect` |
//! | `get_autostart` | | `bool` | (the app only) |
//! | `set_autostart` | `enabled` | `bool` | (the app only) |
//! | `ui_rendered` | `count` | | (the app's end-to-end test; the first one from a new page lets a held navigation go) |
//! | `ui_first_frame` | | | (the page's first frame is on screen: the app logs how long after the open it came) |
//!
//! Commands live in this module rather than at the crate root because `#[tauri::command]` on a
//! `pub fn` in `lib.rs` collides with the macro's own glue (E0255, docs/tauri.md §11).

use taskkeeper_server::owner::api::{
    AgentChange, AgentView, DeskView, DigestView, SessionView, TaskDetail, TaskView,
};
use taskkeeper_server::{OwnerError, OwnerErrorKind, OwnerService, TaskQuery};
use tauri::ipc::Invoke;
use tauri::{Runtime, State};

/// The settings as the owner API shows them: every key with its value as text.
pub use taskkeeper_server::owner::SettingsMap;

/// The open tasks of every desk, as the owner API's `GET /api/tasks?state=open` lists them.
#[tauri::command]
pub async fn list_open_tasks(owner: State<'_, OwnerService>) -> Result<Vec<TaskView>, OwnerError> {
    owner.list_tasks(TaskQuery::open()).await
}

/// Tasks by state (`open`, `ended`, or all when absent) and optionally one desk.
#[tauri::command]
pub async fn list_tasks(
    owner: State<'_, OwnerService>,
    state: Option<String>,
    desk: Option<String>,
) -> Result<Vec<TaskView>, OwnerError> {
    owner.list_tasks(TaskQuery { state, desk }).await
}

/// One task with its history and artifacts.
#[tauri::command]
pub async fn get_task(
    owner: State<'_, OwnerService>,
    id: String,
) -> Result<TaskDetail, OwnerError> {
    owner.get_task(&id).await
}

/// Cancels a task for the owner; the asker sees CANCELED with the reason.
#[tauri::command]
pub async fn cancel_task(
    owner: State<'_, OwnerService>,
    id: String,
    reason: Option<String>,
) -> Result<TaskView, OwnerError> {
    owner.cancel_task(&id, reason).await
}

/// Reminds the desk's session of this task now, outside the ladder.
#[tauri::command]
pub async fn remind_task(
    owner: State<'_, OwnerService>,
    id: String,
) -> Result<TaskView, OwnerError> {
    owner.remind_now(&id).await
}

/// A stalled task's ladder starts again.
#[tauri::command]
pub async fn resume_task(
    owner: State<'_, OwnerService>,
    id: String,
) -> Result<TaskView, OwnerError> {
    owner.resume_task(&id).await
}

#[tauri::command]
pub async fn list_desks(owner: State<'_, OwnerService>) -> Result<Vec<DeskView>, OwnerError> {
    owner.list_desks().await
}

/// Sets the command that delivers text to a desk's agent (on its stdin), or removes it (null
/// or blank). One line of at most 4096 bytes; the owner service checks.
#[tauri::command]
pub async fn set_deliver_command(
    owner: State<'_, OwnerService>,
    name: String,
    command: Option<String>,
) -> Result<DeskView, OwnerError> {
    owner.set_deliver_command(&name, command).await
}

/// Sets whether a desk launches a headless session by itself when it has work and none is
/// live (behind the owner service's launch guard).
#[tauri::command]
pub async fn set_auto_launch(
    owner: State<'_, OwnerService>,
    name: String,
    on: bool,
) -> Result<DeskView, OwnerError> {
    owner.set_auto_launch(&name, on).await
}

/// The digest since it was last taken; `take` marks it taken now.
#[tauri::command]
pub async fn get_digest(
    owner: State<'_, OwnerService>,
    take: bool,
) -> Result<DigestView, OwnerError> {
    owner.digest(take).await
}

/// Sessions, most recently active first.
#[tauri::command]
pub async fn list_sessions(owner: State<'_, OwnerService>) -> Result<Vec<SessionView>, OwnerError> {
    owner.list_sessions().await
}

/// Stops the watchdog from reminding one session.
#[tauri::command]
pub async fn pause_session(
    owner: State<'_, OwnerService>,
    id: String,
) -> Result<SessionView, OwnerError> {
    owner.pause_session(&id, true).await
}

#[tauri::command]
pub async fn resume_session(
    owner: State<'_, OwnerService>,
    id: String,
) -> Result<SessionView, OwnerError> {
    owner.pause_session(&id, false).await
}

/// Launches a headless Claude Code session at a claude-code desk; the daemon owns it and
/// speaks to it on its stdin.
#[tauri::command]
pub async fn launch_session(
    owner: State<'_, OwnerService>,
    desk: String,
) -> Result<SessionView, OwnerError> {
    owner.launch_session(&desk).await
}

/// Stops a session this daemon launched. It ends shortly after; the answer does not wait.
#[tauri::command]
pub async fn stop_session(owner: State<'_, OwnerService>, id: String) -> Result<(), OwnerError> {
    owner.stop_session(&id).await
}

/// Answers the tool a headless session asks to use (its `permission`): allow it, or deny it
/// with an optional message the model reads. Answers the session, nothing waiting any more.
#[tauri::command]
pub async fn answer_permission(
    owner: State<'_, OwnerService>,
    id: String,
    allow: bool,
    message: Option<String>,
    request_id: Option<String>,
) -> Result<SessionView, OwnerError> {
    owner
        .answer_permission(&id, allow, message, request_id)
        .await
}

#[tauri::command]
pub async fn get_settings(owner: State<'_, OwnerService>) -> Result<SettingsMap, OwnerError> {
    owner.settings().await
}

/// Saves some settings (`{key: value}`, values as text; numbers and booleans are accepted and
/// read as their text). All are checked first: one invalid value changes nothing. Answers every
/// setting.
#[tauri::command]
pub async fn save_settings(
    owner: State<'_, OwnerService>,
    changes: SettingsMap,
) -> Result<SettingsMap, OwnerError> {
    owner.set_settings(changes).await
}

/// Pauses every reminder (the setting `reminders.paused`); answers every setting.
#[tauri::command]
pub async fn pause_reminders(owner: State<'_, OwnerService>) -> Result<SettingsMap, OwnerError> {
    owner.pause_reminders(true).await
}

#[tauri::command]
pub async fn resume_reminders(owner: State<'_, OwnerService>) -> Result<SettingsMap, OwnerError> {
    owner.pause_reminders(false).await
}

/// The agents Taskkeeper can connect (Claude Code today), with what their settings say.
#[tauri::command]
pub async fn list_agents(owner: State<'_, OwnerService>) -> Result<Vec<AgentView>, OwnerError> {
    owner.agents().await
}

/// Connects an agent for the user, as `taskkeeper connect claude-code` does; `force` names
/// a `taskkeeper` in a build directory anyway.
#[tauri::command]
pub async fn connect_agent(
    owner: State<'_, OwnerService>,
    agent: String,
    force: Option<bool>,
) -> Result<AgentChange, OwnerError> {
    owner.connect_agent(&agent, force.unwrap_or(false)).await
}

/// Puts the agent's settings back as they were before Connect.
#[tauri::command]
pub async fn disconnect_agent(
    owner: State<'_, OwnerService>,
    agent: String,
) -> Result<AgentChange, OwnerError> {
    owner.disconnect_agent(&agent).await
}

/// Starting the app at login. The app uses `tauri-plugin-autostart` ([`crate::PluginAutostart`]);
/// tests on the mock runtime put a fake in its place so they touch no real login items.
pub trait Autostart: Send + Sync {
    fn is_enabled(&self) -> Result<bool, String>;
    fn set_enabled(&self, enabled: bool) -> Result<(), String>;
}

/// The app's [`Autostart`], as managed state.
pub struct AutostartState(pub Box<dyn Autostart>);

fn autostart_error(message: String) -> OwnerError {
    OwnerError {
        kind: OwnerErrorKind::Internal,
        message: format!("autostart: {message}"),
    }
}

/// Whether the app starts at login.
#[tauri::command]
pub fn get_autostart(autostart: State<'_, AutostartState>) -> Result<bool, OwnerError> {
    autostart.0.is_enabled().map_err(autostart_error)
}

/// Turns starting at login on or off; answers the new state as the system reports it.
#[tauri::command]
pub fn set_autostart(
    autostart: State<'_, AutostartState>,
    enabled: bool,
) -> Result<bool, OwnerError> {
    autostart.0.set_enabled(enabled).map_err(autostart_error)?;
    tracing::info!(enabled, "autostart changed");
    autostart.0.is_enabled().map_err(autostart_error)
}

/// The page reports how many tasks it drew after each change. The log line is how the app's
/// end-to-end test sees the real window's DOM without a WebDriver; it is also useful when a
/// user reports an empty window.
#[tauri::command]
pub fn ui_rendered<R: Runtime>(app: tauri::AppHandle<R>, count: u32) {
    tracing::info!(count, "ui rendered {count} open tasks");
    crate::window::page_rendered(&app);
}

/// The page's first frame is on screen (its first animation frame, and the paint after it): the
/// app logs the time since the window was asked for, by its own monotonic clock.
#[tauri::command]
pub fn ui_first_frame<R: Runtime>(app: tauri::AppHandle<R>) {
    crate::window::first_frame(&app);
}

/// The invoke handler for every command above, for any runtime (the real one and the mock).
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![
        list_open_tasks,
        list_tasks,
        get_task,
        cancel_task,
        remind_task,
        resume_task,
        list_desks,
        set_deliver_command,
        set_auto_launch,
        get_digest,
        list_sessions,
        pause_session,
        resume_session,
        launch_session,
        stop_session,
        answer_permission,
        get_settings,
        save_settings,
        pause_reminders,
        resume_reminders,
        list_agents,
        connect_agent,
        disconnect_agent,
        get_autostart,
        set_autostart,
        ui_rendered,
        ui_first_frame,
    ]
}
