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
//! | `get_settings_catalogue` | | `SettingsCatalogue` | `GET /api/settings/catalogue` |
//! | `save_settings` | `changes` (`{key: value}`) | `{key: value}` | `PUT /api/settings` |
//! | `pause_reminders`, `resume_reminders` | | `{key: value}` | `POST /api/reminders/pause`, `…/resume` |
//! | `get_network` | | `NetworkView` | `GET /api/network` |
//! | `list_agents` | | `AgentView[]` | `GET /api/agents` |
//! | `connect_agent` | `agent`, `force?` | `AgentChange` | `POST /api/agents/{agent}/connect` |
//! | `disconnect_agent` | `agent` | `AgentChange` | `POST /api/agents/{agent}/disconnect` |
//! | `get_autostart` | | `bool` | (the app only) |
//! | `set_autostart` | `enabled` | `bool` | (the app only) |
//! | `ui_rendered` | `count` | | (the app's end-to-end test; the first one from a new page lets a held navigation go; `window::answer`) |
//! | `ui_first_frame` | `pageMs?` (the page's clock then, from when it was on screen), `hiddenMs?` (a page loaded hidden: its clock when shown) | | (the page's first frame is on screen: the app logs how long after the open it came; `window::answer`) |
//!
//! One function, [`run`], answers every command by its name but the page's two reports about
//! itself, which are the window's (`window::answer`, which hands the rest here), for every way
//! a page reaches the app: the window's webview in this process (`window::handler`: the mock
//! runtime's tests, macOS and Windows) and the window process's, whose calls come over its
//! pipe (`window::process`). This module names no other of the app's: what calls it is above.
//! Arguments are read from the call's JSON object by their camelCase names, as Tauri's own
//! command macro reads them; a missing or mistyped one is an `invalid` error naming it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use taskkeeper_server::{OwnerError, OwnerErrorKind, OwnerService, TaskQuery};
use tauri::ipc::InvokeBody;
use tauri::{AppHandle, Manager as _, Runtime};

/// The settings as the owner API shows them: every key with its value as text.
pub use taskkeeper_server::owner::SettingsMap;

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

/// One argument of a call, by its camelCase name; absent reads as null (so an `Option` is
/// `None`).
pub(crate) fn arg<T: DeserializeOwned>(args: &Value, name: &str) -> Result<T, OwnerError> {
    let value = args.get(name).cloned().unwrap_or(Value::Null);
    serde_json::from_value(value).map_err(|error| OwnerError {
        kind: OwnerErrorKind::Invalid,
        message: format!("the argument `{name}`: {error}"),
    })
}

fn answer<T: Serialize>(result: Result<T, OwnerError>) -> Result<Value, OwnerError> {
    let value = result?;
    serde_json::to_value(value).map_err(|error| OwnerError {
        kind: OwnerErrorKind::Internal,
        message: format!("the answer could not be written: {error}"),
    })
}

fn state<'a, R: Runtime, T: Send + Sync + 'static>(
    app: &'a AppHandle<R>,
    what: &str,
) -> Result<&'a T, OwnerError> {
    app.try_state::<T>()
        .map(|state| state.inner())
        .ok_or_else(|| OwnerError {
            kind: OwnerErrorKind::Internal,
            message: format!("the app has no {what} yet; try again in a moment"),
        })
}

/// Answers the command `command` with `args` (a JSON object) for a page of this app: the
/// table in the module's docs. An error is the owner API's `{kind, message}`.
pub async fn run<R: Runtime>(
    app: &AppHandle<R>,
    command: &str,
    args: &Value,
) -> Result<Value, OwnerError> {
    // The app's own need no daemon.
    match command {
        "get_autostart" => {
            let autostart = state::<R, AutostartState>(app, "autostart")?;
            return answer(autostart.0.is_enabled().map_err(autostart_error));
        }
        "set_autostart" => {
            let enabled: bool = arg(args, "enabled")?;
            let autostart = state::<R, AutostartState>(app, "autostart")?;
            autostart.0.set_enabled(enabled).map_err(autostart_error)?;
            tracing::info!(enabled, "autostart changed");
            return answer(autostart.0.is_enabled().map_err(autostart_error));
        }
        _ => {}
    }
    let owner = state::<R, OwnerService>(app, "daemon")?;
    let id = || arg::<String>(args, "id");
    match command {
        "list_open_tasks" => answer(owner.list_tasks(TaskQuery::open()).await),
        "list_tasks" => {
            let query = TaskQuery {
                state: arg(args, "state")?,
                desk: arg(args, "desk")?,
            };
            answer(owner.list_tasks(query).await)
        }
        "get_task" => answer(owner.get_task(&id()?).await),
        // The asker sees CANCELED with the reason.
        "cancel_task" => answer(owner.cancel_task(&id()?, arg(args, "reason")?).await),
        // Reminds the desk's session of this task now, outside the ladder.
        "remind_task" => answer(owner.remind_now(&id()?).await),
        // A stalled task's ladder starts again.
        "resume_task" => answer(owner.resume_task(&id()?).await),
        "list_desks" => answer(owner.list_desks().await),
        // One line of at most 4096 bytes, or null/blank for none; the owner service checks.
        "set_deliver_command" => {
            let name: String = arg(args, "name")?;
            answer(
                owner
                    .set_deliver_command(&name, arg(args, "command")?)
                    .await,
            )
        }
        // Behind the owner service's launch guard.
        "set_auto_launch" => {
            let name: String = arg(args, "name")?;
            answer(owner.set_auto_launch(&name, arg(args, "on")?).await)
        }
        "get_digest" => answer(owner.digest(arg(args, "take")?).await),
        "list_sessions" => answer(owner.list_sessions().await),
        "pause_session" => answer(owner.pause_session(&id()?, true).await),
        "resume_session" => answer(owner.pause_session(&id()?, false).await),
        // A headless Claude Code session at a claude-code desk; the daemon owns it.
        "launch_session" => {
            let desk: String = arg(args, "desk")?;
            answer(owner.launch_session(&desk).await)
        }
        // It ends shortly after; the answer does not wait.
        "stop_session" => answer(owner.stop_session(&id()?).await),
        "answer_permission" => {
            let id = id()?;
            answer(
                owner
                    .answer_permission(
                        &id,
                        arg(args, "allow")?,
                        arg(args, "message")?,
                        arg(args, "requestId")?,
                    )
                    .await,
            )
        }
        "get_settings" => answer(owner.settings().await),
        "get_settings_catalogue" => answer(Ok(owner.settings_catalogue())),
        // All are checked first: one invalid value changes nothing.
        "save_settings" => {
            let changes: SettingsMap = arg(args, "changes")?;
            answer(owner.set_settings(changes).await)
        }
        "pause_reminders" => answer(owner.pause_reminders(true).await),
        "resume_reminders" => answer(owner.pause_reminders(false).await),
        "get_network" => answer(Ok::<_, OwnerError>(owner.network())),
        "list_agents" => answer(owner.agents().await),
        // As `taskkeeper connect claude-code` does; `force` names a `taskkeeper` in a build
        // directory anyway.
        "connect_agent" => {
            let agent: String = arg(args, "agent")?;
            let force: Option<bool> = arg(args, "force")?;
            answer(owner.connect_agent(&agent, force.unwrap_or(false)).await)
        }
        "disconnect_agent" => {
            let agent: String = arg(args, "agent")?;
            answer(owner.disconnect_agent(&agent).await)
        }
        _ => Err(OwnerError {
            kind: OwnerErrorKind::NotFound,
            message: format!("no command {command:?}: the commands are in commands.rs"),
        }),
    }
}

/// A call's arguments as JSON (a page sends an object; no body reads as none).
pub fn args_of(body: &InvokeBody) -> Value {
    match body {
        InvokeBody::Json(value) => value.clone(),
        InvokeBody::Raw(bytes) => serde_json::from_slice(bytes).unwrap_or(Value::Null),
    }
}
