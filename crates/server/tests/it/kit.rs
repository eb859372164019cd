//! What the official conformance kit found wanting (issue 27), each as the kit does it,
//! against `serve --conformance` with no credentials: HTTP+JSON answers are
//! `application/json` (HTTP_JSON-SVC-001); a task's follow-ups that reuse one messageId all
//! reach its history (CORE-HIST-005/006); the cards carry `Last-Modified` and honour
//! `If-Modified-Since` (CARD-CACHE-003); a JSON-RPC request without an `id` gets the error
//! its method or params earn (v0.3 `test_rejects_invalid_json_rpc_requests`); v0.3's
//! `tasks/resubscribe` of an unknown task answers on an SSE stream; ListTasks takes the
//! JavaScript SDK's unset filter; the machine card also answers under `/a2a/`.

use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::TestDaemon;

fn kit_daemon() -> TestDaemon {
    TestDaemon::start_configured(|c| c.conformance = true)
}

fn headers(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// A JSON-RPC body posted as the kit posts it: no token, `version` as A2A-Version.
fn post(d: &TestDaemon, path: &str, version: Option<&str>, body: &Value) -> (u16, Value) {
    let mut h = vec![("Content-Type", "application/json")];
    if let Some(v) = version {
        h.push(("A2A-Version", v));
    }
    let (status, _, text) = d.http_exchange(
        "POST",
        path,
        Some(&d.host()),
        &headers(&h),
        &body.to_string(),
    );
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

fn send(d: &TestDaemon, message: Value) -> Value {
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}});
    let (status, v) = post(d, "/a2a/tck/", Some("1.0"), &body);
    assert_eq!(status, 200, "{v}");
    assert!(v["result"]["task"].is_object(), "{v}");
    v["result"]["task"].clone()
}

#[test]
fn http_json_answers_are_application_json_whichever_json_type_was_sent() {
    let d = kit_daemon();
    for sent in ["application/json", "application/a2a+json"] {
        let body = json!({"message": {"messageId": "tck-complete-task-svc1", "role": "ROLE_USER",
                                      "parts": [{"text": "hello"}]}});
        let h = headers(&[("Content-Type", sent), ("A2A-Version", "1.0")]);
        let (status, got, text) = d.http_exchange(
            "POST",
            "/a2a/tck/message:send",
            Some(&d.host()),
            &h,
            &body.to_string(),
        );
        assert_eq!(status, 200, "{sent}: {text}");
        assert_eq!(
            header(&got, "content-type"),
            Some("application/json"),
            "{sent}"
        );
    }
}

/// The kit's `create_multiturn_task_with_history`: one messageId for the first message and
/// both follow-ups (`tck-input-required-…`), a new one for the completion.
#[test]
fn follow_ups_that_reuse_a_message_id_all_reach_the_history() {
    let d = kit_daemon();
    let reused = "tck-input-required-hist";
    let first = send(
        &d,
        json!({"messageId": reused, "role": "ROLE_USER", "parts": [{"text": "TCK prerequisite task creation"}]}),
    );
    assert_eq!(
        first["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    let id = first["id"].as_str().unwrap();
    for text in ["TCK history message 1", "TCK history message 2"] {
        let t = send(
            &d,
            json!({"messageId": reused, "taskId": id, "role": "ROLE_USER", "parts": [{"text": text}]}),
        );
        assert_eq!(
            t["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{text}: {t}"
        );
    }
    // A resend of the same message (same id, same words) is still a repeat.
    send(
        &d,
        json!({"messageId": reused, "taskId": id, "role": "ROLE_USER", "parts": [{"text": "TCK history message 2"}]}),
    );
    let done = send(
        &d,
        json!({"messageId": "tck-complete-task-hist", "taskId": id, "role": "ROLE_USER",
               "parts": [{"text": "TCK complete after history"}]}),
    );
    assert_eq!(done["status"]["state"], "TASK_STATE_COMPLETED", "{done}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": id, "historyLength": 10}});
    let (_, got) = post(&d, "/a2a/tck/", Some("1.0"), &body);
    let texts: Vec<&str> = got["result"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "ROLE_USER")
        .filter_map(|m| m["parts"][0]["text"].as_str())
        .collect();
    assert_eq!(
        texts,
        [
            "TCK prerequisite task creation",
            "TCK history message 1",
            "TCK history message 2",
            "TCK complete after history"
        ],
        "{got}"
    );
}

#[test]
fn the_cards_carry_last_modified_and_honour_if_modified_since() {
    let d = kit_daemon();
    for path in [
        "/a2a/tck/.well-known/agent-card.json",
        "/.well-known/agent-card.json",
        "/a2a/.well-known/agent-card.json",
    ] {
        let (status, got, _) = d.http_exchange("GET", path, Some(&d.host()), &[], "");
        assert_eq!(status, 200, "{path}");
        let since = header(&got, "last-modified")
            .unwrap_or_else(|| panic!("{path}: no Last-Modified in {got:?}"))
            .to_owned();
        assert!(since.ends_with(" GMT"), "{path}: {since}");
        let (status, _, _) = d.http_exchange(
            "GET",
            path,
            Some(&d.host()),
            &headers(&[("If-Modified-Since", &since)]),
            "",
        );
        assert_eq!(status, 304, "{path}: a copy from {since} is current");
        let (status, _, _) = d.http_exchange(
            "GET",
            path,
            Some(&d.host()),
            &headers(&[("If-Modified-Since", "Sat, 01 Jan 2000 00:00:00 GMT")]),
            "",
        );
        assert_eq!(status, 200, "{path}: a copy from 2000 is stale");
    }
}

/// The v0.3 kit's `test_rejects_invalid_json_rpc_requests`: none of its requests has an id.
#[test]
fn a_request_without_an_id_gets_the_error_its_method_or_params_earn() {
    let d = kit_daemon();
    let cases = [
        (
            json!({"jsonrpc": "aaa", "method": "message/send", "params": {}}),
            -32600,
        ),
        (json!({"jsonrpc": "2.0", "params": {}}), -32600),
        (
            json!({"jsonrpc": "2.0", "method": "message/ssend", "params": {}}),
            -32601,
        ),
        (
            json!({"jsonrpc": "2.0", "method": "message/send", "params": {}, "id": {"bad": "type"}}),
            -32600,
        ),
        (
            json!({"jsonrpc": "2.0", "method": "message/send", "params": {"": "not_a_dict"}}),
            -32602,
        ),
        // Sound but without an id: not run, and told so.
        (
            json!({"jsonrpc": "2.0", "method": "tasks/get", "params": {"id": "t-1"}}),
            -32600,
        ),
    ];
    let before = d.task_count();
    for (request, code) in cases {
        let (status, v) = post(&d, "/a2a/tck", None, &request);
        assert_eq!(status, 200, "{request}: {v}");
        assert_eq!(v["error"]["code"], code, "{request}: {v}");
    }
    assert_eq!(
        d.task_count(),
        before,
        "a request without an id runs nothing"
    );
}

#[test]
fn v0_3_resubscribe_to_an_unknown_task_answers_its_error_on_a_stream() {
    let d = kit_daemon();
    let body = json!({"jsonrpc": "2.0", "id": "r-1", "method": "tasks/resubscribe",
                      "params": {"id": "non-existent-task-1"}});
    let h = headers(&[
        ("Content-Type", "application/json"),
        ("Accept", "text/event-stream"),
    ]);
    let (status, got, text) =
        d.http_exchange("POST", "/a2a/tck", Some(&d.host()), &h, &body.to_string());
    assert_eq!(status, 200, "{text}");
    assert!(
        header(&got, "content-type").is_some_and(|t| t.starts_with("text/event-stream")),
        "{got:?}"
    );
    let rx = d.sse_as("/a2a/tck", None, None, &body);
    let event = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(event["id"], "r-1", "{event}");
    assert_eq!(event["error"]["code"], -32001, "{event}");
    assert!(
        event["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not found"),
        "{event}"
    );
    assert!(
        matches!(
            rx.recv_timeout(Duration::from_secs(10)),
            Err(RecvTimeoutError::Disconnected)
        ),
        "the stream ends after the error"
    );
    // v1.0 keeps answering it as JSON (the v1.0 kit reads it so).
    let body = json!({"jsonrpc": "2.0", "id": "r-2", "method": "SubscribeToTask",
                      "params": {"id": "non-existent-task-1"}});
    let (status, v) = post(&d, "/a2a/tck", Some("1.0"), &body);
    assert_eq!((status, &v["error"]["code"]), (200, &json!(-32001)), "{v}");
}

/// @a2a-js/sdk's ListTasks over JSON-RPC sends `"status": "UNRECOGNIZED"` for no filter.
#[test]
fn list_tasks_takes_an_unset_status_filter_in_each_spelling() {
    let d = kit_daemon();
    send(
        &d,
        json!({"messageId": "tck-input-required-list", "role": "ROLE_USER", "parts": [{"text": "x"}]}),
    );
    for status in [
        json!("UNRECOGNIZED"),
        json!("TASK_STATE_UNSPECIFIED"),
        Value::Null,
    ] {
        let body =
            json!({"jsonrpc": "2.0", "id": 3, "method": "ListTasks", "params": {"status": status}});
        let (_, v) = post(&d, "/a2a/tck/", Some("1.0"), &body);
        assert_eq!(
            v["result"]["tasks"].as_array().map(Vec::len),
            Some(1),
            "{status}: {v}"
        );
    }
    let h = headers(&[("A2A-Version", "1.0")]);
    let (status, _, text) = d.http_exchange(
        "GET",
        "/a2a/tck/tasks?status=TASK_STATE_UNSPECIFIED",
        Some(&d.host()),
        &h,
        "",
    );
    assert_eq!(status, 200, "{text}");
    // A real filter still filters, and a wrong one is still refused.
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "ListTasks", "params": {"status": "TASK_STATE_COMPLETED"}});
    let (_, v) = post(&d, "/a2a/tck/", Some("1.0"), &body);
    assert_eq!(
        v["result"]["tasks"].as_array().map(Vec::len),
        Some(0),
        "{v}"
    );
    let body =
        json!({"jsonrpc": "2.0", "id": 5, "method": "ListTasks", "params": {"status": "DONE"}});
    let (_, v) = post(&d, "/a2a/tck/", Some("1.0"), &body);
    assert_eq!(v["error"]["code"], -32602, "{v}");
}

/// An SDK given `http://HOST/a2a/web` (no trailing slash) looks for its card at
/// `/a2a/.well-known/agent-card.json`: the machine card, as at the host root.
#[test]
fn the_machine_card_also_answers_under_a2a() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let (status, _, root) = d.http_exchange(
        "GET",
        "/.well-known/agent-card.json",
        Some(&d.host()),
        &[],
        "",
    );
    assert_eq!(status, 200);
    let (status, _, under) = d.http_exchange(
        "GET",
        "/a2a/.well-known/agent-card.json",
        Some(&d.host()),
        &[],
        "",
    );
    assert_eq!(status, 200, "{under}");
    assert_eq!(
        serde_json::from_str::<Value>(&under).unwrap(),
        serde_json::from_str::<Value>(&root).unwrap()
    );
}
