//! The Tauri commands the window calls. They are thin: each one forwards to the daemon's
//! [`OwnerService`], the same service behind the owner HTTP API, so an owner action exists once
//! (DESIGN §8) and the webview never needs the owner token or a port.
//!
//! Commands live in this module rather than at the crate root because `#[tauri::command]` on a
//! `pub fn` in `lib.rs` collides with the macro's own glue (E0255, docs/tauri.md §11).

use taskkeeper_server::api::TaskView;
use taskkeeper_server::{OwnerError, OwnerService, TaskQuery};
use tauri::ipc::Invoke;
use tauri::{Runtime, State};

/// The open tasks of every desk, as the owner API's `GET /api/tasks?state=open` lists them.
#[tauri::command]
pub async fn list_open_tasks(owner: State<'_, OwnerService>) -> Result<Vec<TaskView>, OwnerError> {
    owner.list_tasks(TaskQuery::open()).await
}

/// The page reports how many tasks it drew after each change. The log line is how the app's
/// end-to-end test sees the real window's DOM without a WebDriver; it is also useful when a
/// user reports an empty window.
#[tauri::command]
pub fn ui_rendered(count: u32) {
    tracing::info!(count, "ui rendered {count} open tasks");
}

/// The invoke handler for every command above, for any runtime (the real one and the mock).
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    tauri::generate_handler![list_open_tasks, ui_rendered]
}
