//! The owner API end to end: desks, tasks, the worker's endings and cancel.

use serde_json::json;

use crate::support::TestDaemon;

#[test]
fn a_task_from_creation_to_completion() {
    let d = TestDaemon::start();
    let (status, desk) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": "/src/web"})),
    );
    assert_eq!(status, 201, "{desk}");
    assert_eq!(desk["agent"], "claude-code");

    let (status, first) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "web", "text": "Add a --json flag"})),
    );
    assert_eq!(status, 201, "{first}");
    assert_eq!(
        (first["state"].as_str(), first["asker"].as_str()),
        (Some("working"), Some("owner"))
    );
    let (_, second) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "web", "text": "Then write docs"})),
    );
    assert_eq!(
        (second["state"].as_str(), second["queuePosition"].as_u64()),
        (Some("submitted"), Some(1))
    );

    let id = first["id"].as_str().unwrap();
    let (status, done) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": "done", "text": "Added --json"})),
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["state"], "completed");
    assert_eq!(done["statusText"], "Added --json");

    // The queue moved on.
    let (_, open) = d.call("GET", "/api/tasks?state=open", None);
    let open = open["tasks"].as_array().unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(
        (open[0]["id"].as_str(), open[0]["state"].as_str()),
        (second["id"].as_str(), Some("working"))
    );

    let (status, detail) = d.call("GET", &format!("/api/tasks/{id}"), None);
    assert_eq!(status, 200);
    let from: Vec<_> = detail["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["from"].clone())
        .collect();
    assert_eq!(from, vec![json!("asker"), json!("worker")]);
    assert_eq!(detail["artifacts"][0]["text"], "Added --json");

    let (_, ended) = d.call("GET", "/api/tasks?state=ended", None);
    assert_eq!(ended["tasks"].as_array().unwrap().len(), 1);
}

#[test]
fn refusals_are_clear_and_change_nothing() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let (_, t) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "web", "text": "x"})),
    );
    let id = t["id"].as_str().unwrap().to_owned();
    let (status, _) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": "failed", "text": "no"})),
    );
    assert_eq!(status, 200);

    let cases = [
        (
            "POST",
            format!("/api/tasks/{id}/cancel"),
            Some(json!({})),
            409,
            "cannot be canceled",
        ),
        (
            "POST",
            format!("/api/tasks/{id}/update"),
            Some(json!({"status": "done", "text": "y"})),
            409,
            "already ended",
        ),
        (
            "POST",
            "/api/tasks/nope/update".to_owned(),
            Some(json!({"status": "done", "text": "y"})),
            404,
            "no task nope",
        ),
        (
            "POST",
            format!("/api/tasks/{id}/update"),
            Some(json!({"status": "finished", "text": "y"})),
            400,
            "done, blocked, failed or rejected",
        ),
        (
            "POST",
            "/api/tasks".to_owned(),
            Some(json!({"desk": "nowhere", "text": "y"})),
            404,
            "no desk named nowhere",
        ),
        (
            "POST",
            "/api/tasks".to_owned(),
            Some(json!({"desk": "web", "text": "  "})),
            400,
            "text must not be empty",
        ),
        (
            "POST",
            "/api/desks".to_owned(),
            Some(json!({"name": "web", "dir": "/tmp"})),
            409,
            "already exists",
        ),
        (
            "POST",
            "/api/desks".to_owned(),
            Some(json!({"name": "Web!", "dir": "/tmp"})),
            400,
            "invalid desk name",
        ),
        (
            "POST",
            "/api/desks".to_owned(),
            Some(json!({"name": "api", "dir": "relative"})),
            400,
            "absolute",
        ),
        (
            "POST",
            "/api/desks".to_owned(),
            Some(json!({"name": "api", "dir": "/x", "agent": "cursor"})),
            400,
            "unknown agent",
        ),
        (
            "GET",
            "/api/tasks?state=soon".to_owned(),
            None,
            400,
            "unknown state filter",
        ),
        (
            "DELETE",
            "/api/desks/nowhere".to_owned(),
            None,
            404,
            "no desk named",
        ),
        ("GET", "/api/nothing".to_owned(), None, 404, "no such route"),
    ];
    let before = d.call("GET", "/api/tasks", None).1;
    for (method, path, body, want, says) in cases {
        let (status, answer) = d.call(method, &path, body.as_ref());
        assert_eq!(status, want, "{method} {path}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains(says),
            "{method} {path}: {answer}"
        );
    }
    assert_eq!(d.call("GET", "/api/tasks", None).1, before);
    assert_eq!(
        d.call("GET", "/api/desks", None).1["desks"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn a_desk_with_open_tasks_stays() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "web", "text": "x"})),
    );
    let (status, body) = d.call("DELETE", "/api/desks/web", None);
    assert_eq!(status, 409, "{body}");
    let (_, t) = d.call("GET", "/api/tasks", None);
    let id = t["tasks"][0]["id"].as_str().unwrap().to_owned();
    let auth = (
        "Authorization".to_owned(),
        format!("Bearer {}", crate::support::TOKEN),
    );
    let (status, body) = d.raw(
        "POST",
        &format!("/api/tasks/{id}/cancel"),
        &d.host(),
        &[auth],
        "reason=spam",
    );
    assert_eq!(
        status, 415,
        "a body that is not JSON is refused, not ignored: {body}"
    );
    let (status, body) = d.call("POST", &format!("/api/tasks/{id}/cancel"), None);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "canceled");
    let (status, _) = d.call("DELETE", "/api/desks/web", None);
    assert_eq!(status, 204);
}

#[test]
fn a_resent_message_id_creates_nothing() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let req = json!({"desk": "web", "text": "x", "messageId": "m-1"});
    let (s1, a) = d.call("POST", "/api/tasks", Some(&req));
    let (s2, b) = d.call("POST", "/api/tasks", Some(&req));
    assert_eq!((s1, s2), (201, 201));
    assert_eq!(a["id"], b["id"]);
    assert_eq!(d.task_count(), 1);
}

#[test]
fn the_token_file_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let daemon = rt
        .block_on(taskkeeper_server::Daemon::start(
            taskkeeper_server::DaemonConfig::new(0, data.clone()),
        ))
        .unwrap();
    let token = std::fs::read_to_string(data.join("token")).unwrap();
    assert_eq!(token.len(), 64, "32 random bytes, hex");
    assert!(daemon.token().matches(&token));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(data.join("token"))
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o600
        );
        assert_eq!(
            std::fs::metadata(&data).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
    rt.block_on(daemon.shutdown());
}

/// A blank reason is no reason, whoever cancels (the owner service checks it, not the app):
/// the asker reads the default, never a reason of spaces.
#[test]
fn a_blank_cancel_reason_is_no_reason_for_every_caller() {
    let d = TestDaemon::start();
    d.with_desk("web");
    for reason in [" ", "\n\t", ""] {
        let (_, task) = d.call(
            "POST",
            "/api/tasks",
            Some(&json!({"desk": "web", "text": "x"})),
        );
        let id = task["id"].as_str().unwrap();
        let (status, body) = d.call(
            "POST",
            &format!("/api/tasks/{id}/cancel"),
            Some(&json!({"reason": reason})),
        );
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["state"], "canceled");
        assert_eq!(body["statusText"], "Canceled by the owner.", "{reason:?}");
    }
    let (_, task) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "web", "text": "x"})),
    );
    let id = task["id"].as_str().unwrap();
    let (_, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/cancel"),
        Some(&json!({"reason": "Not needed any more."})),
    );
    assert_eq!(body["statusText"], "Not needed any more.");
}
