//! The route where an asker fetches the bytes of its task's file artifacts (the URL a file
//! artifact's part names; the bytes are kept by [`crate::files`]). It is in the askers' room,
//! beside JSON-RPC, and answers whoever may read the task (`asker::may_read`: its own asker,
//! and the owner, who reads every task).

use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use taskkeeper_core::{TaskId, asker};

use super::{A2a, not_found_json};
use crate::http::auth::Caller;

/// Where an asker fetches a file artifact's bytes (the URL its part names).
/// The task's segment is named `{id}` like the HTTP+JSON binding's `/tasks/{id}` routes,
/// which share its prefix (the router refuses two names at one place).
pub(super) const ROUTE: &str = "/a2a/{desk}/tasks/{id}/files/{file}";

/// The bytes of a file artifact, for whoever may read its task (`asker::may_read`). Anything
/// else, another asker's task included, is 404: a task id is not confirmed to exist to
/// someone who may not read it (A2A §3.3.2).
pub(super) async fn file(
    State(a2a): State<A2a>,
    Path((desk, task, file)): Path<(String, String, String)>,
    caller: axum::Extension<Caller>,
) -> Response {
    let wanted = file.clone();
    let not_found = || {
        not_found_json(format!(
            "no file {wanted} of a task {task} of yours on desk {desk}; GetTask lists the task's \
             artifacts and the URL of each file"
        ))
    };
    let Ok(Some(t)) = a2a.tasks.get(&TaskId::from(task.as_str())).await else {
        return not_found();
    };
    if !asker::may_read(caller.0.reader(), &t) || t.desk.as_str() != desk {
        return not_found();
    }
    let files = a2a.tasks.files().clone();
    let found = tokio::task::spawn_blocking(move || files.artifact(&t, &file))
        .await
        .ok()
        .flatten();
    let Some((bytes, media_type, name)) = found else {
        return not_found();
    };
    // The worker's file name, kept to what a header may carry.
    let name: String = name
        .chars()
        .filter(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\\' | ';'))
        .collect();
    let mut response = bytes.into_response();
    let h = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&media_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}
