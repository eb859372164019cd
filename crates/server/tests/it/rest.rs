//! The HTTP+JSON binding over real HTTP: every method by path and HTTP method, the same
//! tasks JSON-RPC sees (one dispatch, two envelopes), the spec's HTTP statuses with the same
//! ErrorInfo as JSON-RPC's, the refusals (wrong content type, malformed or oversize bodies,
//! unknown and foreign tasks, missing version) changing nothing, streams as bare
//! StreamResponses that end where the task settles, and the conformance desk driven the way
//! the kit drives this binding: no credentials, the interface from the public card.

use std::io::{BufRead as _, Write as _};
use std::net::TcpStream;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::TestDaemon;

const A2A_JSON: &str = "application/a2a+json";

/// One answer: status, headers (names lower-cased), body as JSON (or a string).
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The error's ErrorInfo, after checking the error's shape and HTTP status.
    fn error(&self, status: u16, reason: &str) -> &Value {
        assert_eq!(self.status, status, "{}", self.body);
        let e = &self.body["error"];
        assert_eq!(e["code"], status, "{}", self.body);
        assert!(e["status"].is_string(), "{}", self.body);
        assert!(e["message"].is_string(), "{}", self.body);
        let info = &e["details"][0];
        assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(info["reason"], reason, "{}", self.body);
        info
    }
}

/// A request with exactly `headers` (plus Host, Content-Length and Connection: close).
fn raw(d: &TestDaemon, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let (status, headers, body) = d.http_exchange(method, path, Some(&d.host()), &headers, body);
    Answer {
        status,
        headers,
        body: serde_json::from_str(&body).unwrap_or(Value::String(body)),
    }
}

/// A call as an HTTP+JSON client makes it: `token` (none: the kit's way), `A2A-Version: 1.0`,
/// a JSON body as `application/a2a+json` when given.
fn call(
    d: &TestDaemon,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Answer {
    let auth = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("A2A-Version", "1.0")];
    if let Some(a) = &auth {
        headers.push(("Authorization", a.as_str()));
    }
    let body = body.map(Value::to_string);
    if body.is_some() {
        headers.push(("Content-Type", A2A_JSON));
    }
    raw(d, method, path, &headers, body.as_deref().unwrap_or(""))
}

fn ok(a: Answer) -> Value {
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.header("content-type"), Some("application/json"));
    a.body
}

/// An SSE stream over HTTP/1.0 (no chunking); each `data:` line arrives parsed, and the
/// channel closes when the server ends the stream.
fn sse(
    d: &TestDaemon,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> Receiver<Value> {
    let mut s = TcpStream::connect(d.addr).unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let body = body.map(Value::to_string).unwrap_or_default();
    let kind = if body.is_empty() {
        String::new()
    } else {
        format!("Content-Type: {A2A_JSON}\r\n")
    };
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: {}\r\n{auth}{kind}A2A-Version: 1.0\r\n\
         Accept: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        d.host(),
        body.len()
    )
    .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(s).lines() {
            let Ok(line) = line else { return };
            if let Some(data) = line.strip_prefix("data:")
                && let Ok(v) = serde_json::from_str(data.trim())
                && tx.send(v).is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The events of a stream until the server closes it.
fn drain(rx: &Receiver<Value>) -> Vec<Value> {
    let mut events = Vec::new();
    loop {
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok(e) => events.push(e),
            Err(RecvTimeoutError::Disconnected) => return events,
            Err(RecvTimeoutError::Timeout) => panic!("the stream did not close: {events:#?}"),
        }
    }
}

fn message(id: &str, text: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]})
}

fn send_body(id: &str, immediately: bool) -> Value {
    json!({"message": message(id, "Add a --json flag"),
           "configuration": {"returnImmediately": immediately}})
}

fn add_asker(d: &TestDaemon, name: &str) -> String {
    let (code, body) = d.call("POST", "/api/askers", Some(&json!({"name": name})));
    assert_eq!(code, 201, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// The worker ends a task through the owner API (what `task update` does).
fn worker(d: &TestDaemon, id: &str, status: &str) {
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": status, "text": "Done: added --json."})),
    );
    assert_eq!(code, 200, "{body}");
}

fn new_desk() -> TestDaemon {
    let d = TestDaemon::start();
    d.with_desk("web");
    d
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("?")
}

#[test]
fn every_method_answers_over_http_json_on_the_tasks_json_rpc_sees() {
    let d = new_desk();
    let alice = add_asker(&d, "alice");
    let a = Some(alice.as_str());

    let sent = ok(call(
        &d,
        a,
        "POST",
        "/a2a/web/message:send",
        Some(&send_body("m-1", true)),
    ));
    let task = &sent["task"];
    assert_eq!(state(task), "TASK_STATE_WORKING", "{sent}");
    let id = task["id"].as_str().unwrap().to_owned();
    // A follow-up adds to the history.
    let follow = json!({"message": {"messageId": "m-2", "taskId": id, "role": "ROLE_USER",
                                    "parts": [{"text": "Also the docs"}]},
                        "configuration": {"returnImmediately": true}});
    ok(call(&d, a, "POST", "/a2a/web/message:send/", Some(&follow)));

    // GetTask: a bare Task; historyLength from the query, under either name.
    let got = ok(call(&d, a, "GET", &format!("/a2a/web/tasks/{id}"), None));
    assert_eq!(got["id"], id.as_str());
    assert_eq!(got["history"].as_array().map(Vec::len), Some(2), "{got}");
    for query in ["historyLength=1", "history_length=1"] {
        let got = ok(call(
            &d,
            a,
            "GET",
            &format!("/a2a/web/tasks/{id}?{query}"),
            None,
        ));
        assert_eq!(
            got["history"].as_array().map(Vec::len),
            Some(1),
            "{query}: {got}"
        );
    }
    // The same task over JSON-RPC.
    let rpc = d.rpc(
        "/a2a/web",
        &alice,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": id}}),
    );
    let rest = ok(call(&d, a, "GET", &format!("/a2a/web/tasks/{id}"), None));
    assert_eq!(rpc["result"], rest, "{rpc}");

    // ListTasks: the request's fields as query parameters.
    ok(call(
        &d,
        a,
        "POST",
        "/a2a/web/message:send",
        Some(&send_body("m-3", true)),
    ));
    let page = ok(call(
        &d,
        a,
        "GET",
        "/a2a/web/tasks?pageSize=1&includeArtifacts=false",
        None,
    ));
    assert_eq!(page["tasks"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["pageSize"], 1);
    assert_eq!(page["totalSize"], 2);
    let token = page["nextPageToken"].as_str().unwrap();
    assert!(!token.is_empty(), "{page}");
    let last = ok(call(
        &d,
        a,
        "GET",
        &format!("/a2a/web/tasks/?pageSize=1&pageToken={token}"),
        None,
    ));
    assert_eq!(last["nextPageToken"], "", "{last}");
    let working = ok(call(
        &d,
        a,
        "GET",
        "/a2a/web/tasks?status=TASK_STATE_WORKING",
        None,
    ));
    assert_eq!(working["tasks"][0]["id"], id.as_str(), "{working}");

    // Push notification configs: create, get, list, delete (a webhook on this machine, which
    // the owner allows).
    d.set_setting("push.allow_loopback_targets", "true");
    let base = format!("/a2a/web/tasks/{id}/pushNotificationConfigs");
    let config = json!({"id": "hook-1", "url": "http://127.0.0.1:9/hook", "token": "t-1"});
    let created = ok(call(&d, a, "POST", &base, Some(&config)));
    assert_eq!(created["taskId"], id.as_str(), "{created}");
    assert_eq!(created["id"], "hook-1");
    let one = ok(call(&d, a, "GET", &format!("{base}/hook-1"), None));
    assert_eq!(one["url"], "http://127.0.0.1:9/hook", "{one}");
    let all = ok(call(&d, a, "GET", &format!("{base}/"), None));
    assert_eq!(all["configs"].as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(
        ok(call(&d, a, "DELETE", &format!("{base}/hook-1/"), None)),
        json!({})
    );
    let gone = call(&d, a, "GET", &format!("{base}/hook-1"), None);
    gone.error(400, "INVALID_PARAMS");

    // The extended card: this desk's, with the details the public card leaves out.
    let card = ok(call(&d, a, "GET", "/a2a/web/extendedAgentCard", None));
    assert_eq!(card["name"], "web", "{card}");
    assert!(card.to_string().contains("working in"), "{card}");

    // CancelTask (the body may be empty, or name the same task).
    let canceled = ok(call(
        &d,
        a,
        "POST",
        &format!("/a2a/web/tasks/{id}:cancel"),
        Some(&json!({"id": id})),
    ));
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");
    let other = page["tasks"][0]["id"].as_str().unwrap();
    let other = if other == id {
        last["tasks"][0]["id"].as_str().unwrap()
    } else {
        other
    };
    let canceled = ok(call(
        &d,
        a,
        "POST",
        &format!("/a2a/web/tasks/{other}:cancel/"),
        None,
    ));
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled}");

    // A client that accepts only plain JSON gets it; the body is the same.
    let plain = raw(
        &d,
        "GET",
        &format!("/a2a/web/tasks/{id}"),
        &[
            ("Authorization", &format!("Bearer {alice}")),
            ("A2A-Version", "1.0"),
            ("Accept", "application/json"),
        ],
        "",
    );
    assert_eq!(plain.status, 200);
    assert_eq!(plain.header("content-type"), Some("application/json"));
    assert_eq!(plain.body["id"], id.as_str());
    // And one that sends plain JSON is answered too.
    let sent = raw(
        &d,
        "POST",
        "/a2a/web/message:send",
        &[
            ("Authorization", &format!("Bearer {alice}")),
            ("A2A-Version", "1.0"),
            ("Content-Type", "application/json; charset=utf-8"),
        ],
        &send_body("m-4", true).to_string(),
    );
    assert_eq!(sent.status, 200, "{}", sent.body);
}

#[test]
fn errors_have_the_spec_status_and_the_error_info_json_rpc_gives() {
    let d = new_desk();
    let alice = add_asker(&d, "alice");
    let bob = add_asker(&d, "bob");
    let (a, b) = (Some(alice.as_str()), Some(bob.as_str()));
    let sent = ok(call(
        &d,
        a,
        "POST",
        "/a2a/web/message:send",
        Some(&send_body("m-1", true)),
    ));
    let id = sent["task"]["id"].as_str().unwrap().to_owned();
    let before = d.task_count();

    // Unknown task: 404 with the same ErrorInfo as JSON-RPC's -32001.
    let missing = call(&d, a, "GET", "/a2a/web/tasks/t-nope", None);
    let info = missing.error(404, "TASK_NOT_FOUND").clone();
    assert_eq!(missing.body["error"]["status"], "NOT_FOUND");
    let rpc = d.rpc(
        "/a2a/web",
        &alice,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t-nope"}}),
    );
    assert_eq!(rpc["error"]["data"][0], info, "{rpc}");
    // Another asker's task is not found either, whatever the method.
    call(&d, b, "GET", &format!("/a2a/web/tasks/{id}"), None).error(404, "TASK_NOT_FOUND");
    call(&d, b, "POST", &format!("/a2a/web/tasks/{id}:cancel"), None).error(404, "TASK_NOT_FOUND");
    call(
        &d,
        b,
        "GET",
        &format!("/a2a/web/tasks/{id}:subscribe"),
        None,
    )
    .error(404, "TASK_NOT_FOUND");
    call(
        &d,
        b,
        "GET",
        &format!("/a2a/web/tasks/{id}/pushNotificationConfigs"),
        None,
    )
    .error(404, "TASK_NOT_FOUND");

    // Ended task: cancel again is -32002 (400), a message to it -32004 (400), subscribe too.
    worker(&d, &id, "done");
    let again = call(&d, a, "POST", &format!("/a2a/web/tasks/{id}:cancel"), None);
    again.error(400, "TASK_NOT_CANCELABLE");
    assert_eq!(again.body["error"]["status"], "FAILED_PRECONDITION");
    let late = json!({"message": {"messageId": "m-late", "taskId": id, "role": "ROLE_USER",
                                  "parts": [{"text": "more"}]}});
    call(&d, a, "POST", "/a2a/web/message:send", Some(&late)).error(400, "UNSUPPORTED_OPERATION");
    call(
        &d,
        a,
        "POST",
        &format!("/a2a/web/tasks/{id}:subscribe"),
        None,
    )
    .error(400, "UNSUPPORTED_OPERATION");

    // A media type the desk does not take: -32005, 400.
    let odd = json!({"message": {"messageId": "m-odd", "role": "ROLE_USER",
                                 "parts": [{"text": "x", "mediaType": "application/x-odd"}]}});
    call(&d, a, "POST", "/a2a/web/message:send", Some(&odd))
        .error(400, "CONTENT_TYPE_NOT_SUPPORTED");

    // The version: v1.0's paths need `A2A-Version: 1.0`; absent is v0.3, 99.0 is no version.
    let auth = format!("Bearer {alice}");
    let body = send_body("m-v", true).to_string();
    for version in [None, Some("0.3"), Some("99.0")] {
        let mut headers = vec![("Authorization", auth.as_str()), ("Content-Type", A2A_JSON)];
        if let Some(v) = version {
            headers.push(("A2A-Version", v));
        }
        let refused = raw(&d, "POST", "/a2a/web/message:send", &headers, &body);
        refused.error(400, "VERSION_NOT_SUPPORTED");
    }
    // …also as the query parameter.
    let q = raw(
        &d,
        "GET",
        &format!("/a2a/web/tasks/{id}?A2A-Version=1.0"),
        &[("Authorization", &auth)],
        "",
    );
    assert_eq!(q.status, 200, "{}", q.body);

    // Wrong content type: 415, named, with the A2A error inside.
    let headers = [
        ("Authorization", auth.as_str()),
        ("A2A-Version", "1.0"),
        ("Content-Type", "text/plain"),
    ];
    let refused = raw(&d, "POST", "/a2a/web/message:send", &headers, "hello");
    let info = refused.error(415, "CONTENT_TYPE_NOT_SUPPORTED");
    assert_eq!(info["metadata"]["contentType"], "text/plain");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(A2A_JSON)
    );
    // A form post (what a web page could send) too.
    let headers = [
        ("Authorization", auth.as_str()),
        ("A2A-Version", "1.0"),
        ("Content-Type", "application/x-www-form-urlencoded"),
    ];
    raw(&d, "POST", "/a2a/web/message:send", &headers, "a=b")
        .error(415, "CONTENT_TYPE_NOT_SUPPORTED");
    // A body without a Content-Type.
    raw(
        &d,
        "POST",
        "/a2a/web/message:send",
        &[("Authorization", &auth), ("A2A-Version", "1.0")],
        &body,
    )
    .error(415, "CONTENT_TYPE_NOT_SUPPORTED");

    // Malformed JSON, a body that is no object, a message missing: 400, nothing created.
    let headers = [
        ("Authorization", auth.as_str()),
        ("A2A-Version", "1.0"),
        ("Content-Type", A2A_JSON),
    ];
    raw(
        &d,
        "POST",
        "/a2a/web/message:send",
        &headers,
        "{\"message\": ",
    )
    .error(400, "INVALID_REQUEST");
    raw(&d, "POST", "/a2a/web/message:send", &headers, "[1, 2]").error(400, "INVALID_PARAMS");
    raw(&d, "POST", "/a2a/web/message:send", &headers, "{}").error(400, "INVALID_PARAMS");
    // A path and a body that name different tasks.
    call(
        &d,
        a,
        "POST",
        &format!("/a2a/web/tasks/{id}:cancel"),
        Some(&json!({"id": "t-other"})),
    )
    .error(400, "INVALID_PARAMS");
    // A query value of the wrong type, named.
    let bad = call(&d, a, "GET", "/a2a/web/tasks?pageSize=many", None);
    bad.error(400, "INVALID_PARAMS");
    assert!(
        bad.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("pageSize"),
        "{}",
        bad.body
    );
    call(&d, a, "GET", "/a2a/web/tasks?pageSize=0", None).error(400, "INVALID_PARAMS");

    // Too large: 413 before anything is read into a task.
    let huge = format!("{{\"message\": \"{}\"}}", "x".repeat(1024 * 1024 + 16));
    let big = raw(&d, "POST", "/a2a/web/message:send", &headers, &huge);
    big.error(413, "INVALID_REQUEST");

    // An unknown verb, an unknown desk.
    call(&d, a, "POST", &format!("/a2a/web/tasks/{id}:explode"), None)
        .error(404, "METHOD_NOT_FOUND");
    call(&d, a, "POST", &format!("/a2a/web/tasks/{id}"), None).error(404, "METHOD_NOT_FOUND");
    let desk = call(
        &d,
        a,
        "POST",
        "/a2a/nope/message:send",
        Some(&send_body("m-n", true)),
    );
    desk.error(404, "UNSUPPORTED_OPERATION");
    assert!(
        desk.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no desk named nope")
    );

    assert_eq!(d.task_count(), before, "no refusal created a task");
}

fn event_state(e: &Value) -> &str {
    e["task"]["status"]["state"]
        .as_str()
        .or_else(|| e["statusUpdate"]["status"]["state"].as_str())
        .unwrap_or("-")
}

#[test]
fn streams_carry_bare_stream_responses_and_end_where_the_task_settles() {
    let d = new_desk();
    let alice = add_asker(&d, "alice");
    let a = Some(alice.as_str());

    // SendStreamingMessage: the Task first, then each change, closed at the ending.
    let rx = sse(
        &d,
        a,
        "POST",
        "/a2a/web/message:stream",
        Some(&send_body("m-s", false)),
    );
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        first.get("jsonrpc").is_none(),
        "no JSON-RPC wrapper: {first}"
    );
    let id = first["task"]["id"].as_str().unwrap().to_owned();
    // A subscriber by GET and one by POST (the reference SDK's client posts an empty body).
    let by_get = sse(
        &d,
        a,
        "GET",
        &format!("/a2a/web/tasks/{id}:subscribe"),
        None,
    );
    let by_post = sse(
        &d,
        a,
        "POST",
        &format!("/a2a/web/tasks/{id}:subscribe/"),
        None,
    );
    for rx in [&by_get, &by_post] {
        let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(first["task"]["id"], id.as_str(), "{first}");
    }
    worker(&d, &id, "done");
    for rx in [&rx, &by_get, &by_post] {
        let events = drain(rx);
        assert_eq!(
            event_state(events.last().unwrap()),
            "TASK_STATE_COMPLETED",
            "{events:#?}"
        );
        assert!(
            events
                .iter()
                .any(|e| e["artifactUpdate"]["artifact"]["artifactId"] == "result"),
            "{events:#?}"
        );
    }

    // A stream that settles on a question closes there too.
    let rx = sse(
        &d,
        a,
        "POST",
        "/a2a/web/message:stream",
        Some(&send_body("m-q", false)),
    );
    let first = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let id = first["task"]["id"].as_str().unwrap().to_owned();
    worker(&d, &id, "blocked");
    let events = drain(&rx);
    assert_eq!(
        event_state(events.last().unwrap()),
        "TASK_STATE_INPUT_REQUIRED",
        "{events:#?}"
    );

    // A refused stream is an error answer, not a stream.
    let refused = call(&d, a, "POST", "/a2a/web/message:stream", Some(&json!({})));
    refused.error(400, "INVALID_PARAMS");

    // Beyond the caller's share of open streams: 429 with the limit's ErrorInfo, no task.
    d.set_setting("a2a.streams_per_caller", "1");
    let held = sse(
        &d,
        a,
        "GET",
        &format!("/a2a/web/tasks/{id}:subscribe"),
        None,
    );
    let first = held.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first["task"]["id"], id.as_str(), "{first}");
    let before = d.task_count();
    let refused = call(
        &d,
        a,
        "POST",
        "/a2a/web/message:stream",
        Some(&send_body("m-r", false)),
    );
    let info = refused.error(429, "STREAMS_PER_CALLER_LIMIT");
    assert_eq!(info["domain"], "taskkeeper.dev");
    assert_eq!(refused.body["error"]["status"], "RESOURCE_EXHAUSTED");
    assert_eq!(d.task_count(), before, "a refused stream creates no task");
}

#[test]
fn the_kit_drives_the_conformance_desk_over_http_json_without_credentials() {
    let d = TestDaemon::start_configured(|c| c.conformance = true);
    d.with_desk("web");
    // The card from the well-known path, without a token; the HTTP+JSON interface from it.
    let card = raw(&d, "GET", "/a2a/tck/.well-known/agent-card.json", &[], "");
    assert_eq!(card.status, 200);
    let interface = card.body["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "HTTP+JSON")
        .unwrap_or_else(|| panic!("no HTTP+JSON interface: {}", card.body));
    assert_eq!(interface["protocolVersion"], "1.0");
    let url = interface["url"].as_str().unwrap();
    let base = url.split_once(&d.host()).unwrap().1.to_owned();
    assert_eq!(base, "/a2a/tck");

    let user = |prefix: &str| {
        json!({"message": {"messageId": format!("tck-{prefix}-0a1b2c3d"), "role": "ROLE_USER",
                           "parts": [{"text": "TCK prerequisite task creation"}]}})
    };
    // CORE-SEND-001: a scenario completes.
    let done = ok(call(
        &d,
        None,
        "POST",
        &format!("{base}/message:send"),
        Some(&user("complete-task")),
    ));
    assert_eq!(state(&done["task"]), "TASK_STATE_COMPLETED", "{done}");
    let id = done["task"]["id"].as_str().unwrap();
    let got = ok(call(
        &d,
        None,
        "GET",
        &format!("{base}/tasks/{id}?historyLength=1"),
        None,
    ));
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1), "{got}");
    // CORE-CANCEL-001 over this binding.
    let open = ok(call(
        &d,
        None,
        "POST",
        &format!("{base}/message:send"),
        Some(&user("input-required")),
    ));
    assert_eq!(state(&open["task"]), "TASK_STATE_INPUT_REQUIRED", "{open}");
    let id = open["task"]["id"].as_str().unwrap();
    let canceled = ok(call(
        &d,
        None,
        "POST",
        &format!("{base}/tasks/{id}:cancel"),
        None,
    ));
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    // ListTasks sees the anonymous asker's tasks.
    let listed = ok(call(&d, None, "GET", &format!("{base}/tasks"), None));
    assert_eq!(
        listed["tasks"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    // A stream ends where its task settles.
    let events = drain(&sse(
        &d,
        None,
        "POST",
        &format!("{base}/message:stream"),
        Some(&user("stream-001")),
    ));
    assert_eq!(
        event_state(events.last().unwrap()),
        "TASK_STATE_COMPLETED",
        "{events:#?}"
    );
    // The extended card is for callers with a token: the card says there is none.
    call(&d, None, "GET", &format!("{base}/extendedAgentCard"), None)
        .error(400, "UNSUPPORTED_OPERATION");
    // The kit's content-type check: text/plain is 415 with the A2A error.
    let refused = raw(
        &d,
        "POST",
        &format!("{base}/message:send"),
        &[("A2A-Version", "1.0"), ("Content-Type", "text/plain")],
        "not json",
    );
    refused.error(415, "CONTENT_TYPE_NOT_SUPPORTED");
    // Every other desk still needs its token.
    let closed = call(
        &d,
        None,
        "POST",
        "/a2a/web/message:send",
        Some(&send_body("m-1", true)),
    );
    assert_eq!(closed.status, 401);
}
