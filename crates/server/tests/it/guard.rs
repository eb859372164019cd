//! Every refusal of the guard and the body checks, each proven to change nothing.

use serde_json::json;

use crate::support::{TOKEN, TestDaemon};

fn auth() -> (String, String) {
    ("Authorization".into(), format!("Bearer {TOKEN}"))
}

fn json_type() -> (String, String) {
    ("Content-Type".into(), "application/json".into())
}

const NEW_TASK: &str = r#"{"desk":"web","text":"Add a --json flag"}"#;

#[test]
fn healthz_is_open_but_everything_else_needs_the_token() {
    let d = TestDaemon::start();
    assert!(d.addr.ip().is_loopback());
    let (status, body) = d.raw("GET", "/healthz", &d.host(), &[], "");
    assert_eq!((status, body.as_str()), (200, "ok"));

    d.with_desk("web");
    let (status, body) = d.raw("POST", "/api/tasks", &d.host(), &[json_type()], NEW_TASK);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer"), "{body}");
    let wrong = (
        "Authorization".to_owned(),
        "Bearer not-the-token".to_owned(),
    );
    let (status, body) = d.raw(
        "POST",
        "/api/tasks",
        &d.host(),
        &[wrong, json_type()],
        NEW_TASK,
    );
    assert_eq!(status, 401, "{body}");
    let basic = ("Authorization".to_owned(), format!("Basic {TOKEN}"));
    let (status, _) = d.raw("GET", "/api/tasks", &d.host(), &[basic], "");
    assert_eq!(status, 401);
    assert_eq!(d.task_count(), 0);
}

#[test]
fn foreign_hosts_are_refused_against_dns_rebinding() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let port = d.addr.port();
    for host in [
        format!("evil.example:{port}"),
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("0.0.0.0:{port}"),
        "127.0.0.1".to_owned(),
        String::new(),
    ] {
        let (status, body) = d.raw(
            "POST",
            "/api/tasks",
            &host,
            &[auth(), json_type()],
            NEW_TASK,
        );
        assert_eq!(status, 403, "Host {host:?}: {body}");
    }
    for host in [format!("localhost:{port}"), format!("LOCALHOST:{port}")] {
        let (status, _) = d.raw("GET", "/api/tasks", &host, &[auth()], "");
        assert_eq!(status, 200, "Host {host:?}");
    }
    assert_eq!(d.task_count(), 0);
}

#[test]
fn foreign_and_null_origins_are_refused() {
    let d = TestDaemon::start();
    d.with_desk("web");
    for origin in [
        "https://evil.example",
        "null",
        "http://127.0.0.1:1",
        "tauri://localhost",
    ] {
        let o = ("Origin".to_owned(), origin.to_owned());
        let (status, body) = d.raw(
            "POST",
            "/api/tasks",
            &d.host(),
            &[auth(), json_type(), o],
            NEW_TASK,
        );
        assert_eq!(status, 403, "Origin {origin}: {body}");
    }
    let own = ("Origin".to_owned(), format!("http://{}", d.host()));
    let (status, body) = d.raw(
        "POST",
        "/api/tasks",
        &d.host(),
        &[auth(), json_type(), own],
        NEW_TASK,
    );
    assert_eq!(status, 201, "{body}");
    assert_eq!(d.task_count(), 1);
}

#[test]
fn bodies_must_be_json_and_small() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let form = (
        "Content-Type".to_owned(),
        "application/x-www-form-urlencoded".to_owned(),
    );
    let (status, body) = d.raw(
        "POST",
        "/api/tasks",
        &d.host(),
        &[auth(), form],
        "desk=web&text=hi",
    );
    assert_eq!(status, 415, "{body}");

    let huge = json!({"desk": "web", "text": "x".repeat(1024 * 1024 + 1)}).to_string();
    let (status, body) = d.raw(
        "POST",
        "/api/tasks",
        &d.host(),
        &[auth(), json_type()],
        &huge,
    );
    assert_eq!(status, 413, "{body}");

    for (bad, says) in [
        (r#"{"desk":"web","text":"#, "EOF"),
        (r#"{"desk":"web"}"#, "missing field `text`"),
        (
            r#"{"desk":"web","text":"hi","priority":9}"#,
            "unknown field `priority`",
        ),
        (r#"{"desk":"web","text":42}"#, "invalid type"),
        (r#"[1,2]"#, "invalid type"),
    ] {
        let (status, body) = d.raw("POST", "/api/tasks", &d.host(), &[auth(), json_type()], bad);
        assert!(status == 400 || status == 422, "{bad}: {status} {body}");
        assert!(body.contains(says), "{bad}: {body}");
        assert!(body.contains(r#""kind":"invalid""#), "{body}");
    }
    assert_eq!(d.task_count(), 0);
}
