//! The A2A server over real HTTP: every method in both versions, the errors, pagination,
//! blocking, streaming and subscribe (also after a restart), idempotent resend, and asker
//! isolation.

use std::sync::mpsc::Receiver;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{TOKEN, TestDaemon, until};

const EXT: &str = "https://taskkeeper.dev/a2a/extensions/open-until-done/v1";
const V1: Option<&str> = Some("1.0");

fn send_v1(message_id: &str, text: &str, immediately: bool) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]},
        "configuration": {"returnImmediately": immediately}}})
}

fn call(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params})
}

fn new_desk() -> TestDaemon {
    let d = TestDaemon::start();
    d.with_desk("web");
    d
}

/// The worker ends a task through the owner API (what `task update` does).
fn worker(d: &TestDaemon, id: &str, status: &str, text: &str) {
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": status, "text": text})),
    );
    assert_eq!(code, 200, "{body}");
}

fn next(rx: &Receiver<Value>) -> Value {
    rx.recv_timeout(Duration::from_secs(10))
        .expect("a stream event")
}

#[test]
fn v1_send_get_list_cancel_ack() {
    let d = new_desk();
    let sent = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send_v1("m-1", "Add a --json flag", true),
    );
    let task = &sent["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{sent}");
    assert_eq!(task["metadata"][EXT]["desk"], "web");
    let id = task["id"].as_str().unwrap();
    let context = task["contextId"].as_str().unwrap();

    let queued = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send_v1("m-2", "Then the docs", true),
    );
    assert_eq!(
        queued["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
    assert_eq!(
        queued["result"]["task"]["metadata"][EXT]["queuePosition"],
        1
    );

    // GetTask answers a bare Task; historyLength 0 omits history.
    let got = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("GetTask", json!({"id": id, "historyLength": 0})),
    );
    assert_eq!(got["result"]["id"], id);
    assert_eq!(got["result"]["contextId"], context);
    assert!(got["result"].get("history").is_none(), "{got}");
    assert!(got["result"].get("task").is_none(), "bare task: {got}");

    worker(&d, id, "done", "Added --json");
    let got = d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", json!({"id": id})));
    let r = &got["result"];
    assert_eq!(r["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(r["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(r["artifacts"][0]["artifactId"], "result");
    assert_eq!(r["artifacts"][0]["parts"][0]["text"], "Added --json");
    assert!(r["status"]["timestamp"].as_str().unwrap().ends_with('Z'));

    // AckTask: bookkeeping only, idempotent.
    let acked = d.rpc("/a2a/web", TOKEN, V1, &call("AckTask", json!({"id": id})));
    assert_eq!(acked["result"]["status"]["state"], "TASK_STATE_COMPLETED");
    let at = acked["result"]["metadata"][EXT]["acknowledgedAt"].clone();
    assert!(at.is_string(), "{acked}");
    let again = d.rpc("/a2a/web", TOKEN, V1, &call("AckTask", json!({"id": id})));
    assert_eq!(again["result"]["metadata"][EXT]["acknowledgedAt"], at);
    let (_, owner_view) = d.call("GET", &format!("/api/tasks/{id}"), None);
    assert_eq!(
        owner_view["acknowledgedAt"], at,
        "the owner sees acknowledgements"
    );

    // Ack of an open task is refused; so is a message to an ended one.
    let second = queued["result"]["task"]["id"].as_str().unwrap();
    let err = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("AckTask", json!({"id": second})),
    );
    assert_eq!(err["error"]["code"], -32004, "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("still open")
    );
    let mut follow = send_v1("m-3", "more", true);
    follow["params"]["message"]["taskId"] = json!(id);
    let err = d.rpc("/a2a/web", TOKEN, V1, &follow);
    assert_eq!(err["error"]["code"], -32004, "{err}");
    assert_eq!(err["error"]["data"][0]["reason"], "UNSUPPORTED_OPERATION");

    // Cancel: idempotent on CANCELED, refused on other ended states.
    let canceled = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("CancelTask", json!({"id": second})),
    );
    assert_eq!(
        canceled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{canceled}"
    );
    let again = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("CancelTask", json!({"id": second})),
    );
    assert_eq!(again["result"]["status"]["state"], "TASK_STATE_CANCELED");
    let err = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("CancelTask", json!({"id": id})),
    );
    assert_eq!(err["error"]["code"], -32002, "{err}");
    assert_eq!(err["error"]["data"][0]["reason"], "TASK_NOT_CANCELABLE");

    let listed = d.rpc("/a2a/web", TOKEN, V1, &call("ListTasks", json!({})));
    assert_eq!(listed["result"]["totalSize"], 2);
    assert_eq!(listed["result"]["nextPageToken"], "");
    assert!(
        listed["result"]["tasks"][0].get("artifacts").is_none(),
        "artifacts only when asked"
    );
}

#[test]
fn v03_on_the_same_endpoint_and_one_task_in_both_versions() {
    let d = new_desk();
    let send = json!({"jsonrpc": "2.0", "id": 7, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "m3", "role": "user", "parts": [{"kind": "text", "text": "hi"}]},
        "configuration": {"blocking": false}}});
    let sent = d.rpc("/a2a/web", TOKEN, None, &send);
    let r = &sent["result"];
    assert_eq!(
        (r["kind"].as_str(), r["status"]["state"].as_str()),
        (Some("task"), Some("working")),
        "{sent}"
    );
    assert_eq!(r["history"][0]["kind"], "message");
    assert_eq!(r["history"][0]["parts"][0]["kind"], "text");
    let id = r["id"].as_str().unwrap();

    worker(&d, id, "blocked", "Which format?");
    let got = d.rpc(
        "/a2a/web",
        TOKEN,
        None,
        &call("tasks/get", json!({"id": id})),
    );
    assert_eq!(got["result"]["status"]["state"], "input-required");
    assert_eq!(got["result"]["status"]["message"]["role"], "agent");
    let v1 = d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", json!({"id": id})));
    assert_eq!(v1["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED");

    // The answer continues the same task.
    let answer = json!({"jsonrpc": "2.0", "id": 8, "method": "message/send", "params": {
        "message": {"kind": "message", "messageId": "m4", "taskId": id, "role": "user", "parts": [{"kind": "text", "text": "NDJSON"}]},
        "configuration": {"blocking": false}}});
    let r = d.rpc("/a2a/web", TOKEN, None, &answer);
    assert_eq!(r["result"]["status"]["state"], "working", "{r}");

    let canceled = d.rpc(
        "/a2a/web",
        TOKEN,
        None,
        &call("tasks/cancel", json!({"id": id})),
    );
    assert_eq!(canceled["result"]["status"]["state"], "canceled");
    let err = d.rpc(
        "/a2a/web",
        TOKEN,
        None,
        &call("tasks/get", json!({"id": "nope"})),
    );
    assert_eq!(err["error"]["code"], -32001);
    assert!(
        err["error"]["data"].is_object(),
        "v0.3 data is a plain object: {err}"
    );

    // Each version's names belong to it.
    let err = d.rpc("/a2a/web", TOKEN, None, &call("GetTask", json!({"id": id})));
    assert_eq!(err["error"]["code"], -32009, "{err}");
    let err = d.rpc("/a2a/web", TOKEN, V1, &call("tasks/get", json!({"id": id})));
    assert_eq!(err["error"]["code"], -32601, "{err}");
}

#[test]
fn bad_requests_get_json_rpc_errors_and_change_nothing() {
    let d = new_desk();
    let raw = |body: &str, content_type: &str| {
        let headers = vec![
            ("Authorization".to_owned(), format!("Bearer {TOKEN}")),
            ("Content-Type".to_owned(), content_type.to_owned()),
            ("A2A-Version".to_owned(), "1.0".to_owned()),
        ];
        let (status, text) = d.raw("POST", "/a2a/web", &d.host(), &headers, body);
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::Null),
        )
    };
    let (status, v) = raw("{not json", "application/json");
    assert_eq!(
        (status, v["error"]["code"].as_i64()),
        (200, Some(-32700)),
        "{v}"
    );
    let (_, v) = raw(
        r#"{"id":1,"method":"GetTask","params":{}}"#,
        "application/json",
    );
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let (_, v) = raw(
        r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#,
        "application/json",
    );
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let (_, v) = raw(
        r#"{"jsonrpc":"2.0","id":1,"method":"Explode","params":{}}"#,
        "application/json",
    );
    assert_eq!(v["error"]["code"], -32601, "{v}");
    let (status, v) = raw(
        r#"{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}"#,
        "text/plain",
    );
    assert_eq!(
        (status, v["error"]["code"].as_i64()),
        (415, Some(-32005)),
        "{v}"
    );
    let huge = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "big", "role": "ROLE_USER", "parts": [{"text": "x".repeat(1024 * 1024)}]}}});
    let (status, _) = raw(&huge.to_string(), "application/json");
    assert_eq!(status, 413);

    let message = |m: Value| json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": m}});
    for (body, code, says) in [
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {}}),
            -32602,
            "missing field `message`",
        ),
        (
            message(json!({"messageId": "a", "role": "ROLE_USER", "parts": []})),
            -32602,
            "at least one part",
        ),
        (
            message(json!({"messageId": "a", "role": "ROLE_BOSS", "parts": [{"text": "x"}]})),
            -32602,
            "message.role",
        ),
        (
            message(json!({"messageId": 5, "role": "ROLE_USER", "parts": [{"text": "x"}]})),
            -32602,
            "message.messageId",
        ),
        (
            message(json!({"messageId": "a", "role": "ROLE_USER", "parts": [{"raw": "%%%"}]})),
            -32602,
            "is not base64",
        ),
        (
            message(
                json!({"messageId": "a", "role": "ROLE_USER", "parts": [{"text": "x", "mediaType": "application/x-unsupported-tck-type"}]}),
            ),
            -32005,
            "mediaType \"application/x-unsupported-tck-type\" is not a media type this desk takes",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": {
                "messageId": "a", "message_id": "b", "role": "ROLE_USER", "parts": [{"text": "x"}]}}}),
            -32602,
            "`messageId` and `message_id` are the same field",
        ),
        (
            message(
                json!({"messageId": "a", "role": "ROLE_USER", "parts": [{"text": "x"}], "taskId": "nope"}),
            ),
            -32001,
            "nope",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {"pageSize": 0}}),
            -32602,
            "pageSize",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {"status": "TASK_STATE_DONE"}}),
            -32602,
            "status",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": 42}}),
            -32602,
            "id",
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": "CreateTaskPushNotificationConfig", "params": {}}),
            -32602,
            "taskId",
        ),
    ] {
        let v = d.rpc("/a2a/web", TOKEN, V1, &body);
        assert_eq!(v["error"]["code"], code, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(says),
            "{body} → {v}"
        );
        assert_eq!(v["id"], 2);
    }
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        Some("99.0"),
        &call("GetTask", json!({"id": "x"})),
    );
    assert_eq!(v["error"]["code"], -32009);
    assert_eq!(v["error"]["data"][0]["reason"], "VERSION_NOT_SUPPORTED");
    let v = d.rpc(
        "/a2a/nowhere",
        TOKEN,
        V1,
        &call("GetTask", json!({"id": "x"})),
    );
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no desk named nowhere"),
        "{v}"
    );
    assert_eq!(d.task_count(), 0);
}

#[test]
fn context_mismatch_is_refused() {
    let d = new_desk();
    let sent = d.rpc("/a2a/web", TOKEN, V1, &send_v1("m-1", "x", true));
    let id = sent["result"]["task"]["id"].as_str().unwrap();
    worker(&d, id, "blocked", "need");
    let mut answer = send_v1("m-2", "y", true);
    answer["params"]["message"]["taskId"] = json!(id);
    answer["params"]["message"]["contextId"] = json!("another-context");
    let v = d.rpc("/a2a/web", TOKEN, V1, &answer);
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let got = d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", json!({"id": id})));
    assert_eq!(
        got["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
}

#[test]
fn a_resend_returns_the_same_task() {
    let d = new_desk();
    let a = d.rpc("/a2a/web", TOKEN, V1, &send_v1("m-1", "x", true));
    let b = d.rpc("/a2a/web", TOKEN, V1, &send_v1("m-1", "x", true));
    assert_eq!(a["result"]["task"]["id"], b["result"]["task"]["id"]);
    assert_eq!(d.task_count(), 1);
    // A resent follow-up is not added twice.
    let id = a["result"]["task"]["id"].as_str().unwrap();
    worker(&d, id, "blocked", "need");
    let mut answer = send_v1("m-2", "y", true);
    answer["params"]["message"]["taskId"] = json!(id);
    d.rpc("/a2a/web", TOKEN, V1, &answer);
    let v = d.rpc("/a2a/web", TOKEN, V1, &answer);
    assert_eq!(
        v["result"]["task"]["history"].as_array().unwrap().len(),
        3,
        "{v}"
    );
}

#[test]
fn list_tasks_pages_newest_first_with_filters() {
    let d = new_desk();
    let mut ids = Vec::new();
    for i in 0..5 {
        let sent = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &send_v1(&format!("m-{i}"), "x", true),
        );
        ids.push(sent["result"]["task"]["id"].as_str().unwrap().to_owned());
        std::thread::sleep(Duration::from_millis(3));
    }
    worker(&d, &ids[0], "done", "ok"); // now the newest status
    let mut seen = Vec::new();
    let mut token = String::new();
    loop {
        let v = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call("ListTasks", json!({"pageSize": 2, "pageToken": token})),
        );
        let r = &v["result"];
        assert_eq!(
            (r["pageSize"].as_i64(), r["totalSize"].as_i64()),
            (Some(2), Some(5)),
            "{v}"
        );
        seen.extend(
            r["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned()),
        );
        token = r["nextPageToken"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
    }
    // Newest status first, the id breaking ties (finishing task 0 started task 1 at the
    // same instant).
    let mut expected: Vec<(String, String)> = ids
        .iter()
        .map(|id| {
            let t = d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", json!({"id": id})));
            (
                t["result"]["status"]["timestamp"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                id.clone(),
            )
        })
        .collect();
    expected.sort_by(|a, b| b.cmp(a));
    assert_eq!(
        seen,
        expected.into_iter().map(|(_, id)| id).collect::<Vec<_>>()
    );
    assert_eq!(
        seen[..2]
            .iter()
            .filter(|id| **id == ids[0] || **id == ids[1])
            .count(),
        2,
        "the two changed last come first"
    );

    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "ListTasks",
            json!({"status": "TASK_STATE_COMPLETED", "includeArtifacts": true}),
        ),
    );
    assert_eq!(v["result"]["totalSize"], 1);
    assert_eq!(
        v["result"]["tasks"][0]["artifacts"][0]["artifactId"],
        "result"
    );
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "ListTasks",
            json!({"statusTimestampAfter": "2999-01-01T00:00:00.000Z"}),
        ),
    );
    assert_eq!(v["result"]["totalSize"], 0);
    let context = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("GetTask", json!({"id": ids[2]})),
    )["result"]["contextId"]
        .clone();
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("ListTasks", json!({"contextId": context})),
    );
    assert_eq!(v["result"]["tasks"][0]["id"], ids[2].as_str());
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("ListTasks", json!({"pageToken": "garbage"})),
    );
    assert_eq!(v["error"]["code"], -32602);
}

#[test]
fn blocking_send_waits_for_the_ending_or_the_question() {
    let d = new_desk();
    // Finished while the asker waits.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| {
            tx.send(d.rpc("/a2a/web", TOKEN, V1, &send_v1("m-1", "x", false)))
                .unwrap()
        });
        let id = wait_for_open_task(&d);
        assert!(
            rx.try_recv().is_err(),
            "still waiting while the task is open"
        );
        worker(&d, &id, "done", "All done");
        let v = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
            "{v}"
        );
        assert_eq!(
            v["result"]["task"]["artifacts"][0]["parts"][0]["text"],
            "All done"
        );
    });
    // Interrupted: returns on INPUT_REQUIRED (v0.3 blocking by default).
    let (tx, rx) = std::sync::mpsc::channel();
    let send = json!({"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {
            "message": {"kind": "message", "messageId": "m-2", "role": "user", "parts": [{"kind": "text", "text": "y"}]}}});
    std::thread::scope(|s| {
        s.spawn(|| tx.send(d.rpc("/a2a/web", TOKEN, None, &send)).unwrap());
        let id = wait_for_open_task(&d);
        worker(&d, &id, "blocked", "Which one?");
        let v = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(v["result"]["status"]["state"], "input-required", "{v}");
    });
}

fn wait_for_open_task(d: &TestDaemon) -> String {
    for _ in 0..500 {
        let (_, v) = d.call("GET", "/api/tasks?state=open", None);
        if let Some(id) = v["tasks"][0]["id"].as_str() {
            return id.to_owned();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no open task appeared");
}

#[test]
fn blocking_is_capped_and_a_client_that_leaves_changes_nothing() {
    let d = new_desk();
    d.set_setting("a2a.blocking_wait_max", "1s");
    let v = d.rpc("/a2a/web", TOKEN, V1, &send_v1("m-1", "x", false));
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "the task as it is at the cap: {v}"
    );

    // A client that hangs up mid-wait: the task stays as it was.
    {
        use std::io::Write as _;
        let mut s = std::net::TcpStream::connect(d.addr).unwrap();
        let body = send_v1("m-2", "y", false).to_string();
        write!(
            s,
            "POST /a2a/web HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
            d.host(),
            body.len()
        )
        .unwrap();
        // Its task exists and its wait has begun before it hangs up.
        let left = until("the second task", || {
            let (_, tasks) = d.call("GET", "/api/tasks?state=open", None);
            let submitted = tasks["tasks"]
                .as_array()?
                .iter()
                .find(|t| t["state"] == "submitted")?;
            submitted["id"].as_str().map(taskkeeper_core::TaskId::from)
        });
        until("its wait to follow the task", || {
            (d.daemon().tasks().watchers(&left) > 0).then_some(())
        });
        drop(s);
        until("its wait to end with its client", || {
            (d.daemon().tasks().watchers(&left) == 0).then_some(())
        });
    }
    let (_, tasks) = d.call("GET", "/api/tasks", None);
    let states: Vec<_> = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["state"].clone())
        .collect();
    assert_eq!(states, vec![json!("working"), json!("submitted")]);
}

#[test]
fn streaming_sends_the_task_then_each_change_and_closes_when_it_ends() {
    let d = new_desk();
    let body = json!({"jsonrpc": "2.0", "id": 6, "method": "SendStreamingMessage", "params": {
        "message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "x"}]}}});
    let rx = d.sse("/a2a/web", TOKEN, V1, &body);
    let first = next(&rx);
    assert_eq!(first["id"], 6);
    let id = first["result"]["task"]["id"].as_str().unwrap().to_owned();
    assert_eq!(
        first["result"]["task"]["status"]["state"],
        "TASK_STATE_WORKING"
    );

    // A second subscriber sees the same events in the same order.
    let sub = d.sse(
        "/a2a/web",
        TOKEN,
        V1,
        &call("SubscribeToTask", json!({"id": id})),
    );
    assert_eq!(next(&sub)["result"]["task"]["id"], id.as_str());

    worker(&d, &id, "blocked", "Which?");
    for rx in [&rx, &sub] {
        let e = next(rx);
        assert_eq!(
            e["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
            "{e}"
        );
        assert!(e["result"]["statusUpdate"].get("final").is_none());
    }
    // The send's stream ends where a blocking send would return: the task waits on its
    // asker. The subscription stays open and sees the answer through to the end.
    assert!(
        matches!(
            rx.recv_timeout(Duration::from_secs(10)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        ),
        "the send's stream closes at INPUT_REQUIRED"
    );
    let answer = json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {
        "message": {"messageId": "m-2", "taskId": id, "role": "ROLE_USER", "parts": [{"text": "That one."}]},
        "configuration": {"returnImmediately": true}}});
    d.rpc("/a2a/web", TOKEN, V1, &answer);
    let e = next(&sub);
    assert_eq!(
        e["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_WORKING",
        "{e}"
    );
    worker(&d, &id, "done", "Done it");
    let a = next(&sub);
    assert_eq!(
        a["result"]["artifactUpdate"]["artifact"]["parts"][0]["text"], "Done it",
        "{a}"
    );
    let e = next(&sub);
    assert_eq!(
        e["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    assert!(
        matches!(
            sub.recv_timeout(Duration::from_secs(10)),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
        ),
        "closed after the terminal state"
    );
    // Subscribing to an ended task is refused.
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("SubscribeToTask", json!({"id": id})),
    );
    assert_eq!(v["error"]["code"], -32004, "{v}");
}

#[test]
fn v03_streams_carry_kind_and_final() {
    let d = new_desk();
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "message/stream", "params": {
        "message": {"kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "x"}]}}});
    let rx = d.sse("/a2a/web", TOKEN, None, &body);
    let first = next(&rx);
    assert_eq!(first["result"]["kind"], "task", "{first}");
    let id = first["result"]["id"].as_str().unwrap().to_owned();
    worker(&d, &id, "failed", "No disk");
    let e = next(&rx);
    assert_eq!(
        (e["result"]["kind"].as_str(), e["result"]["final"].as_bool()),
        (Some("status-update"), Some(true)),
        "{e}"
    );
    assert_eq!(e["result"]["status"]["state"], "failed");

    // A question ends a send's stream too, and its event says so with `final`.
    let body = json!({"jsonrpc": "2.0", "id": 10, "method": "message/stream", "params": {
        "message": {"kind": "message", "messageId": "m-2", "role": "user", "parts": [{"kind": "text", "text": "y"}]}}});
    let rx = d.sse("/a2a/web", TOKEN, None, &body);
    let id = next(&rx)["result"]["id"].as_str().unwrap().to_owned();
    worker(&d, &id, "blocked", "Which?");
    let e = next(&rx);
    assert_eq!(
        (
            e["result"]["status"]["state"].as_str(),
            e["result"]["final"].as_bool()
        ),
        (Some("input-required"), Some(true)),
        "{e}"
    );
    assert!(matches!(
        rx.recv_timeout(Duration::from_secs(10)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
    ));
}

#[test]
fn subscribe_works_from_the_store_after_a_restart() {
    let mut d = new_desk();
    let sent = d.rpc("/a2a/web", TOKEN, V1, &send_v1("m-1", "x", true));
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    d.restart();
    let rx = d.sse(
        "/a2a/web",
        TOKEN,
        V1,
        &call("SubscribeToTask", json!({"id": id})),
    );
    let first = next(&rx);
    assert_eq!(
        first["result"]["task"]["status"]["state"], "TASK_STATE_WORKING",
        "{first}"
    );
    worker(&d, &id, "done", "ok");
    assert_eq!(
        next(&rx)["result"]["artifactUpdate"]["artifact"]["artifactId"],
        "result"
    );
    assert_eq!(
        next(&rx)["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
}

#[test]
fn askers_see_only_their_own_tasks_and_the_owner_reads_every_task() {
    let d = new_desk();
    let alice = d.add_asker("alice");
    let bob = d.add_asker("bob");
    let sent = d.rpc("/a2a/web", &alice, V1, &send_v1("m-1", "alice's", true));
    let id = sent["result"]["task"]["id"].as_str().unwrap();
    assert_eq!(sent["result"]["task"]["metadata"][EXT]["asker"], "alice");
    // The same messageId from bob is bob's own task.
    let bobs = d.rpc("/a2a/web", &bob, V1, &send_v1("m-1", "bob's", true));
    assert_ne!(bobs["result"]["task"]["id"], id);

    for method in ["GetTask", "CancelTask", "AckTask", "SubscribeToTask"] {
        let v = d.rpc("/a2a/web", &bob, V1, &call(method, json!({"id": id})));
        assert_eq!(v["error"]["code"], -32001, "{method}: {v}");
    }
    let v = d.rpc("/a2a/web", &bob, V1, &call("ListTasks", json!({})));
    assert_eq!(v["result"]["totalSize"], 1);
    let v = d.rpc("/a2a", &alice, V1, &call("GetTask", json!({"id": id})));
    assert_eq!(
        v["result"]["id"], id,
        "the machine endpoint reads any desk: {v}"
    );
    // The owner reads every task over A2A too (`asker::may_read`), as its API does; it acts
    // there as the asker "owner", so alice's task is not its to cancel or acknowledge.
    let v = d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", json!({"id": id})));
    assert_eq!(v["result"]["id"], id, "the owner reads alice's task: {v}");
    let v = d.rpc("/a2a/web", TOKEN, V1, &call("ListTasks", json!({})));
    assert_eq!(
        v["result"]["totalSize"], 2,
        "the owner lists every task: {v}"
    );
    for method in ["CancelTask", "AckTask"] {
        let v = d.rpc("/a2a/web", TOKEN, V1, &call(method, json!({"id": id})));
        assert_eq!(v["error"]["code"], -32001, "{method}: {v}");
    }
    assert_eq!(d.task(id)["state"], "working", "nothing changed");

    // Askers may not use the owner API; a removed asker's token stops working.
    let headers = vec![("Authorization".to_owned(), format!("Bearer {alice}"))];
    let (status, _) = d.raw("GET", "/api/tasks", &d.host(), &headers, "");
    assert_eq!(status, 403);
    let (status, _) = d.call("DELETE", "/api/askers/alice", None);
    assert_eq!(status, 204);
    let headers = vec![
        ("Authorization".to_owned(), format!("Bearer {alice}")),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    let (status, _) = d.raw(
        "POST",
        "/a2a/web",
        &d.host(),
        &headers,
        &call("ListTasks", json!({})).to_string(),
    );
    assert_eq!(status, 401);
    let (_, list) = d.call("GET", "/api/askers", None);
    assert_eq!(list["askers"].as_array().unwrap().len(), 1);
    assert!(
        list.to_string().find(&bob).is_none(),
        "tokens are never shown again"
    );
}

#[test]
fn cards_declare_the_extension_and_cache() {
    let d = new_desk();
    let headers = vec![("Authorization".to_owned(), format!("Bearer {TOKEN}"))];
    let (status, text) = d.raw(
        "GET",
        "/a2a/web/.well-known/agent-card.json",
        &d.host(),
        &headers,
        "",
    );
    assert_eq!(status, 200);
    let card: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("http://127.0.0.1:{}/a2a/web", d.addr.port())
    );
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");
    let interfaces: Vec<(&str, &str)> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["protocolBinding"].as_str().unwrap(),
                i["protocolVersion"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        interfaces,
        [
            ("JSONRPC", "1.0"),
            ("HTTP+JSON", "1.0"),
            ("GRPC", "1.0"),
            ("JSONRPC", "0.3")
        ]
    );
    let ext = &card["capabilities"]["extensions"][0];
    assert_eq!(
        (ext["uri"].as_str(), ext["required"].as_bool()),
        (Some(EXT), Some(false))
    );
    assert_eq!(
        ext["params"]["reminderLadderSeconds"],
        json!([60, 120, 300, 600])
    );
    assert_eq!(ext["params"]["methods"], json!(["AckTask"]));
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    assert_eq!(
        card["url"], card["supportedInterfaces"][0]["url"],
        "v0.3 clients need url"
    );

    d.set_setting("reminders.ladder", "10s,20s");
    let (_, text) = d.raw(
        "GET",
        "/a2a/web/.well-known/agent-card.json",
        &d.host(),
        &headers,
        "",
    );
    let card: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        card["capabilities"]["extensions"][0]["params"]["reminderLadderSeconds"],
        json!([10, 20])
    );

    let (_, raw_head) = {
        let mut s = std::net::TcpStream::connect(d.addr).unwrap();
        use std::io::{Read as _, Write as _};
        write!(s, "GET /a2a/web/.well-known/agent-card.json HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n", d.host()).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        ((), out)
    };
    let etag = raw_head
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .expect("an ETag")
        .to_owned();
    assert!(raw_head.contains("cache-control: max-age="), "{raw_head}");
    let with_etag = vec![headers[0].clone(), ("If-None-Match".to_owned(), etag)];
    let (status, _) = d.raw(
        "GET",
        "/a2a/web/.well-known/agent-card.json",
        &d.host(),
        &with_etag,
        "",
    );
    assert_eq!(status, 304);

    let (status, text) = d.raw(
        "GET",
        "/.well-known/agent-card.json",
        &d.host(),
        &headers,
        "",
    );
    assert_eq!(status, 200);
    let machine: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(machine["skills"][0]["id"], "web");
    let (status, text) = d.raw(
        "GET",
        "/a2a/nowhere/.well-known/agent-card.json",
        &d.host(),
        &headers,
        "",
    );
    assert_eq!(status, 404, "{text}");
    assert!(text.contains("no desk named nowhere"));
}

#[test]
fn a2a_routes_are_guarded_too() {
    let d = new_desk();
    let body = send_v1("m-1", "x", true).to_string();
    let json_type = ("Content-Type".to_owned(), "application/json".to_owned());
    let (status, _) = d.raw(
        "POST",
        "/a2a/web",
        &d.host(),
        std::slice::from_ref(&json_type),
        &body,
    );
    assert_eq!(status, 401);
    let auth = ("Authorization".to_owned(), format!("Bearer {TOKEN}"));
    let (status, _) = d.raw(
        "POST",
        "/a2a/web",
        "evil.example",
        &[auth.clone(), json_type.clone()],
        &body,
    );
    assert_eq!(status, 403);
    let origin = ("Origin".to_owned(), "https://evil.example".to_owned());
    let (status, _) = d.raw(
        "POST",
        "/a2a/web",
        &d.host(),
        &[auth, json_type, origin],
        &body,
    );
    assert_eq!(status, 403);
    assert_eq!(d.task_count(), 0);
}

#[test]
fn conformance_mode_scripts_the_tck_desk_and_leaves_with_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let start = |conformance: bool| {
        let mut config = taskkeeper_server::DaemonConfig::new(0, dir.path().to_owned());
        config.token = Some(TOKEN.to_owned());
        config.conformance = conformance;
        rt.block_on(taskkeeper_server::Daemon::start(config))
            .unwrap()
    };
    let daemon = start(true);
    let port = daemon.addr().port();
    let post = |port: u16, body: &Value| -> Value {
        let out = ureq::post(format!("http://127.0.0.1:{port}/a2a/tck"))
            .header("Authorization", format!("Bearer {TOKEN}"))
            .header("A2A-Version", "1.0")
            .header("Content-Type", "application/json")
            .send(body.to_string())
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap();
        serde_json::from_str(&out).unwrap()
    };
    let v = post(port, &send_v1("tck-complete-task-0a1b2c3d", "hi", false));
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{v}"
    );
    assert_eq!(
        v["result"]["task"]["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );
    let v = post(port, &send_v1("tck-input-required-0a1b2c3d", "hi", false));
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{v}"
    );
    let waiting = v["result"]["task"]["id"].as_str().unwrap().to_owned();
    let v = post(port, &send_v1("tck-reject-task-0a1b2c3d", "hi", false));
    assert_eq!(
        v["result"]["task"]["status"]["state"], "TASK_STATE_REJECTED",
        "{v}"
    );
    rt.block_on(daemon.shutdown());

    // A new run starts clean: the last run's open tasks are canceled.
    let daemon = start(true);
    let left = daemon
        .store()
        .task(&taskkeeper_core::TaskId::from(waiting.as_str()))
        .unwrap()
        .unwrap();
    assert_eq!(left.state(), taskkeeper_core::TaskState::Canceled);
    rt.block_on(daemon.shutdown());

    let daemon = start(false);
    assert!(
        daemon.store().desk("tck").unwrap().is_none(),
        "no tck desk without the flag"
    );
    rt.block_on(daemon.shutdown());
}
