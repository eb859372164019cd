//! `serve --conformance` driven the way the conformance kit drives it: no credentials at all,
//! the card from the well-known path, JSON-RPC posted to the card's interface URL with the
//! trailing slash the kit's HTTP client adds, one `messageId` per scenario for the whole run,
//! and request fields under their proto names where the kit writes them so. Each scenario is
//! named by the kit's requirement it stands for.

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{TOKEN, TestDaemon};

/// The kit's per-run suffix: every scenario's messageId ends with it, all run long.
const RUN: &str = "0a1b2c3d";

/// The top-level members of a v1.0 AgentCard: the v1.0 kit rejects any other
/// (CARD-STRUCT-001).
const V1_CARD_FIELDS: [&str; 14] = [
    "name",
    "description",
    "supportedInterfaces",
    "provider",
    "version",
    "documentationUrl",
    "capabilities",
    "securitySchemes",
    "securityRequirements",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
    "signatures",
    "iconUrl",
];

fn kit_daemon() -> TestDaemon {
    let d = TestDaemon::start_configured(|c| c.conformance = true);
    d.with_desk("web");
    d
}

fn get(d: &TestDaemon, path: &str) -> Value {
    let (status, text) = d.raw("GET", path, &d.host(), &[], "");
    assert_eq!(status, 200, "GET {path} without a token: {text}");
    serde_json::from_str(&text).unwrap()
}

/// A JSON-RPC call without credentials, as the kit makes it; the HTTP status and the body.
fn post(d: &TestDaemon, path: &str, body: &Value) -> (u16, Value) {
    let headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("A2A-Version".to_owned(), "1.0".to_owned()),
    ];
    let (status, text) = d.raw("POST", path, &d.host(), &headers, &body.to_string());
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// [`post`] that must be answered over JSON-RPC.
fn rpc(d: &TestDaemon, path: &str, method: &str, params: Value) -> Value {
    let (status, v) = post(
        d,
        path,
        &json!({"jsonrpc": "2.0", "id": "tck-1", "method": method, "params": params}),
    );
    assert_eq!(status, 200, "{method}: {v}");
    v
}

fn send(d: &TestDaemon, path: &str, message: Value) -> Value {
    rpc(d, path, "SendMessage", json!({ "message": message }))
}

fn user(prefix: &str) -> Value {
    json!({"messageId": format!("tck-{prefix}-{RUN}"), "role": "ROLE_USER",
           "parts": [{"text": "TCK prerequisite task creation"}]})
}

fn task_of(v: &Value) -> &Value {
    let task = &v["result"]["task"];
    assert!(task.is_object(), "no task in {v}");
    task
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("?")
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

fn event_state(e: &Value) -> &str {
    let r = &e["result"];
    r["task"]["status"]["state"]
        .as_str()
        .or_else(|| r["statusUpdate"]["status"]["state"].as_str())
        .unwrap_or("-")
}

#[test]
fn the_kit_finds_its_card_shapes_without_credentials() {
    let d = kit_daemon();
    let port = d.addr.port();
    // The v1.0 kit: `--sut-host http://127.0.0.1:PORT/a2a/tck`, card at {sut-host}/.well-known.
    let card = get(&d, "/a2a/tck/.well-known/agent-card.json");
    let extra: Vec<&String> = card
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| !V1_CARD_FIELDS.contains(&k.as_str()))
        .collect();
    assert!(
        extra.is_empty(),
        "CARD-STRUCT-001: extra top-level fields {extra:?}"
    );
    assert!(
        card.get("securitySchemes").is_none() && card.get("securityRequirements").is_none(),
        "the desk needs no token, and its card says so: {card}"
    );
    assert_eq!(card["capabilities"]["extendedAgentCard"], false);
    assert_eq!(
        card["supportedInterfaces"][0]["url"],
        format!("http://127.0.0.1:{port}/a2a/tck")
    );

    // The v0.3 kit: the host root's card, with v0.3's fields pointing at the desk.
    let root = get(&d, "/.well-known/agent-card.json");
    assert_eq!(root["name"], "tck", "{root}");
    assert_eq!(root["url"], format!("http://127.0.0.1:{port}/a2a/tck"));
    assert_eq!(root["preferredTransport"], "JSONRPC");
    assert_eq!(root["protocolVersion"], "0.3.0");
    for field in ["securitySchemes", "security", "securityRequirements"] {
        assert!(root.get(field).is_none(), "{field} in {root}");
    }
    // Another desk's card keeps the scheme and the v0.3 fields.
    let web = get(&d, "/a2a/web/.well-known/agent-card.json");
    assert!(web["securitySchemes"]["bearer"].is_object(), "{web}");
    assert!(web["url"].is_string(), "{web}");
}

#[test]
fn the_kit_runs_its_scenarios_without_credentials() {
    let d = kit_daemon();
    let card = get(&d, "/a2a/tck/.well-known/agent-card.json");
    let url = card["supportedInterfaces"][0]["url"].as_str().unwrap();
    // httpx joins "/" onto the interface URL.
    let path = format!("{}/", url.split_once(&d.host()).unwrap().1);
    assert_eq!(path, "/a2a/tck/");
    let path = path.as_str();

    // CORE-SEND-001, CORE-EXECUTION-MODE-001.
    let v = send(&d, path, user("complete-task"));
    let done = task_of(&v);
    assert_eq!(state(done), "TASK_STATE_COMPLETED", "{v}");
    assert_eq!(
        done["status"]["message"]["parts"][0]["text"],
        "Hello from TCK"
    );

    // CORE-CANCEL-001: a task waiting for input, canceled.
    let v = send(&d, path, user("input-required"));
    let first = task_of(&v)["id"].as_str().unwrap().to_owned();
    assert_eq!(state(task_of(&v)), "TASK_STATE_INPUT_REQUIRED", "{v}");
    let v = rpc(&d, path, "CancelTask", json!({ "id": first }));
    assert_eq!(state(&v["result"]), "TASK_STATE_CANCELED", "{v}");

    // The same messageId again (the kit's next test): a new task waiting for input, not the
    // canceled one (CORE-MULTI-005, STREAM-SUB-001/002 found it ended before).
    let v = send(&d, path, user("input-required"));
    let second = task_of(&v)["id"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    assert_eq!(state(task_of(&v)), "TASK_STATE_INPUT_REQUIRED", "{v}");
    // It stays there until a follow-up arrives; the follow-up (proto field names, as the
    // kit's request builder writes them) continues it.
    let v = rpc(&d, path, "GetTask", json!({ "id": second }));
    assert_eq!(state(&v["result"]), "TASK_STATE_INPUT_REQUIRED", "{v}");
    let v = send(
        &d,
        path,
        json!({"message_id": format!("tck-complete-task-{RUN}"), "task_id": second,
               "role": "ROLE_USER", "parts": [{"text": "TCK follow-up for history"}]}),
    );
    assert_eq!(task_of(&v)["id"], second.as_str(), "{v}");
    assert_eq!(state(task_of(&v)), "TASK_STATE_COMPLETED", "{v}");
    // CORE-HIST-002: GetTask with the proto name of historyLength.
    let v = rpc(
        &d,
        path,
        "GetTask",
        json!({"id": second, "history_length": 1}),
    );
    assert_eq!(
        v["result"]["history"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );

    // And once more after the completion: INPUT_REQUIRED, whatever ran before.
    let v = send(&d, path, user("input-required"));
    let third = task_of(&v)["id"].as_str().unwrap().to_owned();
    assert_eq!(state(task_of(&v)), "TASK_STATE_INPUT_REQUIRED", "{v}");
    // CORE-MULTI-005: only taskId given; the context comes from the task.
    let context = task_of(&v)["contextId"].as_str().unwrap().to_owned();
    let v = rpc(
        &d,
        path,
        "SendMessage",
        json!({"message": {"messageId": format!("tck-infer-ctx-{RUN}"), "taskId": third,
                           "role": "ROLE_USER", "parts": [{"text": "Follow-up message"}]},
               "configuration": {"return_immediately": true}}),
    );
    assert_eq!(task_of(&v)["contextId"], context.as_str(), "{v}");

    // The reject scenario: the task ends REJECTED with the worker's reason, and stays so.
    let v = send(&d, path, user("reject-task"));
    let rejected = task_of(&v);
    assert_eq!(state(rejected), "TASK_STATE_REJECTED", "{v}");
    assert!(
        rejected["status"]["message"]["parts"][0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("rejected")),
        "{v}"
    );
    let id = rejected["id"].as_str().unwrap().to_owned();
    let v = rpc(&d, path, "CancelTask", json!({ "id": id }));
    assert_eq!(
        v["error"]["code"], -32002,
        "a rejected task cannot be canceled: {v}"
    );
    let v = rpc(&d, path, "GetTask", json!({ "id": id }));
    assert_eq!(state(&v["result"]), "TASK_STATE_REJECTED", "{v}");
    // The v0.3 line reads it as "rejected".
    let headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": id}});
    let (status, text) = d.raw("POST", path, &d.host(), &headers, &body.to_string());
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["status"]["state"], "rejected", "{v}");

    // CORE-SEND-003: a media type the desk does not take, written as the kit writes it.
    let before = d.task_count();
    let v = send(
        &d,
        path,
        json!({"message_id": format!("tck-send-003-{RUN}"), "role": "ROLE_USER",
               "parts": [{"raw": "dGNr", "media_type": "application/x-unsupported-tck-type"}]}),
    );
    assert_eq!(v["error"]["code"], -32005, "{v}");
    let info = &v["error"]["data"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], "CONTENT_TYPE_NOT_SUPPORTED");
    assert_eq!(info["domain"], "a2a-protocol.org");
    assert_eq!(
        info["metadata"]["mediaType"],
        "application/x-unsupported-tck-type"
    );
    assert_eq!(d.task_count(), before, "a refused send creates no task");
}

#[test]
fn the_kit_streams_end_where_the_task_settles() {
    let d = kit_daemon();
    let stream = |prefix: &str| {
        let body = json!({"jsonrpc": "2.0", "id": "tck-s", "method": "SendStreamingMessage",
                          "params": {"message": user(prefix)}});
        d.sse_as("/a2a/tck/", None, Some("1.0"), &body)
    };
    // JSONRPC-SSE-001 waited 15 s on a stream left open at INPUT_REQUIRED.
    let events = drain(&stream("input-required"));
    assert!(events[0]["result"]["task"].is_object(), "{events:#?}");
    assert_eq!(
        event_state(events.last().unwrap()),
        "TASK_STATE_INPUT_REQUIRED",
        "{events:#?}"
    );
    for e in &events {
        assert_eq!(
            (e["jsonrpc"].as_str(), e["id"].as_str()),
            (Some("2.0"), Some("tck-s"))
        );
    }
    let waiting = events[0]["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // CORE-STREAM-003: WORKING → COMPLETED, then closed.
    let events = drain(&stream("stream-001"));
    assert_eq!(
        event_state(events.last().unwrap()),
        "TASK_STATE_COMPLETED",
        "{events:#?}"
    );

    // STREAM-SUB-001/002: a subscription to the waiting task starts with the Task and ends
    // at the terminal state the kit's follow-up brings.
    let sub = d.sse_as(
        "/a2a/tck/",
        None,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": "tck-sub", "method": "SubscribeToTask",
                "params": {"id": waiting}}),
    );
    let first = sub.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(first["result"]["task"]["id"], waiting.as_str(), "{first}");
    let v = rpc(
        &d,
        "/a2a/tck/",
        "SendMessage",
        json!({"message": {"messageId": format!("tck-complete-task-{RUN}"), "taskId": waiting,
                           "role": "ROLE_USER", "parts": [{"text": "Complete"}]}}),
    );
    assert_eq!(state(task_of(&v)), "TASK_STATE_COMPLETED", "{v}");
    let rest = drain(&sub);
    assert_eq!(
        event_state(rest.last().unwrap()),
        "TASK_STATE_COMPLETED",
        "{rest:#?}"
    );
}

/// The chunked-artifact scenario: a stream sees the artifact in two chunks, in order, the
/// first new and not last, the second appended and last; GetTask shows it whole.
#[test]
fn the_kit_streams_a_chunked_artifact() {
    let d = kit_daemon();
    let body = json!({"jsonrpc": "2.0", "id": "tck-c", "method": "SendStreamingMessage",
                      "params": {"message": user("stream-artifact-chunked")}});
    let events = drain(&d.sse_as("/a2a/tck/", None, Some("1.0"), &body));
    let id = events[0]["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let chunks: Vec<(Value, Value, Value)> = events
        .iter()
        .filter_map(|e| e["result"].get("artifactUpdate"))
        .filter(|u| u["artifact"]["artifactId"] == "output-chunked")
        .map(|u| {
            (
                u["artifact"]["parts"].clone(),
                u["append"].clone(),
                u["lastChunk"].clone(),
            )
        })
        .collect();
    assert_eq!(
        chunks,
        [
            (json!([{"text": "chunk-1 "}]), json!(false), json!(false)),
            (json!([{"text": "chunk-2"}]), json!(true), json!(true)),
        ],
        "{events:#?}"
    );
    assert_eq!(
        event_state(events.last().unwrap()),
        "TASK_STATE_COMPLETED",
        "{events:#?}"
    );

    let v = rpc(&d, "/a2a/tck/", "GetTask", json!({ "id": id }));
    let whole = v["result"]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["artifactId"] == "output-chunked")
        .cloned();
    assert_eq!(
        whole.map(|a| a["parts"].clone()),
        Some(json!([{"text": "chunk-1 "}, {"text": "chunk-2"}])),
        "{v}"
    );
}

#[test]
fn without_a_token_only_the_conformance_desk_answers() {
    let d = kit_daemon();
    let get_task = json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}});
    for path in ["/a2a/web", "/a2a/web/", "/a2a", "/a2a/"] {
        let (status, v) = post(&d, path, &get_task);
        assert_eq!(status, 401, "{path} without a token: {v}");
    }
    for path in ["/api/tasks", "/api/desks", "/api/settings"] {
        let (status, _) = d.raw("GET", path, &d.host(), &[], "");
        assert_eq!(status, 401, "the owner API without a token: {path}");
    }
    let (status, _) = post(&d, "/mcp", &json!({}));
    assert_eq!(status, 401, "MCP without a token");
    // A wrong token is not "no token".
    let headers = vec![
        ("Content-Type".to_owned(), "application/json".to_owned()),
        ("Authorization".to_owned(), "Bearer not-a-token".to_owned()),
    ];
    let (status, _) = d.raw(
        "POST",
        "/a2a/tck/",
        &d.host(),
        &headers,
        &get_task.to_string(),
    );
    assert_eq!(status, 401);

    // The anonymous asker has no extended card, and sees only its own tasks.
    let v = rpc(&d, "/a2a/tck/", "GetExtendedAgentCard", json!({}));
    assert_eq!(v["error"]["code"], -32004, "{v}");
    let owners = d.rpc(
        "/a2a/tck",
        TOKEN,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "owner-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"returnImmediately": true}}}),
    );
    let owners = owners["result"]["task"]["id"].as_str().unwrap().to_owned();
    let v = rpc(&d, "/a2a/tck/", "GetTask", json!({ "id": owners }));
    assert_eq!(v["error"]["code"], -32001, "{v}");
    let v = rpc(&d, "/a2a/tck/", "ListTasks", json!({}));
    assert_eq!(v["result"]["tasks"], json!([]), "{v}");
    // The owner's own resends on the desk keep the rule: the same task.
    let again = d.rpc(
        "/a2a/tck",
        TOKEN,
        Some("1.0"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
            "message": {"messageId": "owner-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
            "configuration": {"returnImmediately": true}}}),
    );
    assert_eq!(again["result"]["task"]["id"], owners.as_str(), "{again}");
}
