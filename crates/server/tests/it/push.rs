//! Push notifications against a real webhook: a small HTTP server on 127.0.0.1 in the test
//! that records every request and can fail the first N. Config CRUD in both versions and
//! per-asker isolation; every change reaching the webhook in order with the configured
//! authentication; a failing webhook getting the push again with backoff on the injected
//! clock, in order; a restart in the middle; targets in refused ranges refused with nothing
//! stored, and allowed once the owner says so. The webhook is on this machine, which the owner
//! allows explicitly in each test (`push.allow_loopback_targets`); `push_targets.rs` holds the
//! refusals of this machine in its every form.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_core::{Clock as _, ManualClock, SystemClock};

use crate::support::{TOKEN, TestDaemon, until};

const V1: Option<&str> = Some("1.0");

/// One request the webhook received.
#[derive(Debug, Clone)]
pub(crate) struct Hit {
    path: String,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: Value,
    /// What the webhook answered.
    status: u16,
}

/// A connection the webhook reads a request from and answers on: plain TCP or TLS over it.
trait Conn: std::io::Read + std::io::Write + Send {}
impl<T: std::io::Read + std::io::Write + Send> Conn for T {}

/// The webhook: answers 503 to the first `fail_first` requests, then 200.
pub(crate) struct Webhook {
    pub(crate) port: u16,
    hits: Arc<Mutex<Vec<Hit>>>,
    fail_first: Arc<AtomicUsize>,
}

impl Webhook {
    pub(crate) fn start(fail_first: usize) -> Self {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap(), fail_first, None)
    }

    /// The webhook over TLS with `tls` (`https://`), answering every request with 200.
    pub(crate) fn start_tls(tls: Arc<rustls::ServerConfig>) -> Self {
        Self::on(TcpListener::bind("127.0.0.1:0").unwrap(), 0, Some(tls))
    }

    fn on(
        listener: TcpListener,
        fail_first: usize,
        tls: Option<Arc<rustls::ServerConfig>>,
    ) -> Self {
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let fail = Arc::new(AtomicUsize::new(fail_first));
        let (h, f) = (Arc::clone(&hits), Arc::clone(&fail));
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(tcp) = conn else { return };
                let conn: Box<dyn Conn> = match &tls {
                    None => Box::new(tcp),
                    Some(config) => Box::new(rustls::StreamOwned::new(
                        rustls::ServerConnection::new(Arc::clone(config)).unwrap(),
                        tcp,
                    )),
                };
                // A client that gives up on the handshake reads as a failed first line.
                let mut reader = BufReader::new(conn);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut headers = HashMap::new();
                loop {
                    let mut l = String::new();
                    if reader.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
                        break;
                    }
                    if let Some((k, v)) = l.trim_end().split_once(':') {
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
                    }
                }
                let len: usize = headers
                    .get("content-length")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; len];
                let _ = reader.read_exact(&mut body);
                let failing = f
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                    .is_ok();
                let status = if failing { 503 } else { 200 };
                h.lock().unwrap().push(Hit {
                    path,
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    status,
                });
                let conn = reader.get_mut();
                let _ = write!(
                    conn,
                    "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = conn.flush();
            }
        });
        Self {
            port,
            hits,
            fail_first: fail,
        }
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub(crate) fn hits(&self, path: &str) -> Vec<Hit> {
        let all = self.hits.lock().unwrap();
        all.iter().filter(|h| h.path == path).cloned().collect()
    }

    /// The requests to `path` it answered 200, once there are `n`.
    pub(crate) fn delivered(&self, path: &str, n: usize) -> Vec<Hit> {
        until(&format!("{n} pushes to {path}"), || {
            let ok: Vec<Hit> = self
                .hits(path)
                .into_iter()
                .filter(|h| h.status == 200)
                .collect();
            (ok.len() >= n).then_some(ok)
        })
    }
}

pub(crate) fn call(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

pub(crate) fn send(message_id: &str, push: Option<Value>) -> Value {
    let mut configuration = json!({"returnImmediately": true});
    if let Some(p) = push {
        configuration["taskPushNotificationConfig"] = p;
    }
    call(
        "SendMessage",
        json!({"message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "Add a --json flag"}]},
               "configuration": configuration}),
    )
}

pub(crate) fn worker(d: &TestDaemon, id: &str, status: &str, text: &str) {
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": status, "text": text})),
    );
    assert_eq!(code, 200, "{body}");
}

/// (member, state) of a v1.0 push: `task`, `statusUpdate` or `artifactUpdate`.
fn shape(body: &Value) -> (String, String) {
    let (member, value) = body.as_object().unwrap().iter().next().unwrap();
    let state = value["status"]["state"].as_str().unwrap_or("").to_owned();
    (member.clone(), state)
}

pub(crate) fn task_id(sent: &Value) -> String {
    sent["result"]["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{sent}"))
        .to_owned()
}

#[test]
fn configs_are_set_read_listed_and_deleted_only_by_the_tasks_asker() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let hook = Webhook::start(0);
    d.set_setting("push.allow_loopback_targets", "true");
    let alice = d.add_asker("alice");
    let bob = d.add_asker("bob");
    let id = task_id(&d.rpc("/a2a/web", &alice, V1, &send("m-1", None)));

    let created = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1", "url": hook.url("/a"), "token": "tok-1",
                   "authentication": {"scheme": "Bearer", "credentials": "s3cret"}}),
        ),
    );
    let c1 = &created["result"];
    assert_eq!(c1["id"], "c1", "{created}");
    assert_eq!(c1["taskId"], id.as_str());
    assert_eq!(c1["url"], hook.url("/a"));
    assert_eq!(c1["authentication"]["scheme"], "Bearer");
    // Proto field names are taken too, and an id is made up when none is given.
    let other = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call(
            "CreateTaskPushNotificationConfig",
            json!({"task_id": id, "url": hook.url("/b")}),
        ),
    );
    let other_id = other["result"]["id"].as_str().unwrap().to_owned();
    assert!(!other_id.is_empty() && other_id != "c1", "{other}");

    let got = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call(
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1"}),
        ),
    );
    assert_eq!(got["result"], *c1);
    let listed = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call("ListTaskPushNotificationConfigs", json!({"taskId": id})),
    );
    assert_eq!(listed["result"]["configs"].as_array().unwrap().len(), 2);
    assert_eq!(listed["result"]["nextPageToken"], "");

    // Another asker's task is not found, whatever the method.
    for (method, params) in [
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1"}),
        ),
        ("ListTaskPushNotificationConfigs", json!({"taskId": id})),
        (
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1"}),
        ),
        (
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": hook.url("/bob")}),
        ),
    ] {
        let v = d.rpc("/a2a/web", &bob, V1, &call(method, params));
        assert_eq!(v["error"]["code"], -32001, "{method}: {v}");
    }

    // v0.3's names and shapes on the same endpoint.
    let v03 = d.rpc(
        "/a2a/web",
        &alice,
        None,
        &call(
            "tasks/pushNotificationConfig/set",
            json!({"taskId": id, "pushNotificationConfig": {"id": "old", "url": hook.url("/v03"),
                   "authentication": {"schemes": ["Bearer"], "credentials": "x"}}}),
        ),
    );
    assert_eq!(
        v03["result"]["pushNotificationConfig"]["id"], "old",
        "{v03}"
    );
    assert_eq!(
        v03["result"]["pushNotificationConfig"]["authentication"]["schemes"][0],
        "Bearer"
    );
    let v03_list = d.rpc(
        "/a2a/web",
        &alice,
        None,
        &call("tasks/pushNotificationConfig/list", json!({"id": id})),
    );
    assert_eq!(
        v03_list["result"].as_array().unwrap().len(),
        3,
        "{v03_list}"
    );
    // The first push of a v0.3 config is the task, in v0.3's shape.
    let first = hook.delivered("/v03", 1);
    assert_eq!(first[0].body["kind"], "task", "{:?}", first[0].body);
    let deleted = d.rpc(
        "/a2a/web",
        &alice,
        None,
        &call(
            "tasks/pushNotificationConfig/delete",
            json!({"id": id, "pushNotificationConfigId": "old"}),
        ),
    );
    assert_eq!(deleted["result"], Value::Null, "{deleted}");

    let deleted = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1"}),
        ),
    );
    assert_eq!(deleted["result"], json!({}), "{deleted}");
    let get_c1 = || {
        d.rpc(
            "/a2a/web",
            &alice,
            V1,
            &call(
                "GetTaskPushNotificationConfig",
                json!({"taskId": id, "id": "c1"}),
            ),
        )
    };
    let v = get_c1();
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no push notification config c1"),
        "{v}"
    );
    // Deleting it again is not an error (A2A §3.1.10: delete is idempotent), in both
    // versions, and changes nothing.
    let again = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": id, "id": "c1"}),
        ),
    );
    assert_eq!(again["result"], json!({}), "{again}");
    let again = d.rpc(
        "/a2a/web",
        &alice,
        None,
        &call(
            "tasks/pushNotificationConfig/delete",
            json!({"id": id, "pushNotificationConfigId": "old"}),
        ),
    );
    assert_eq!(again["result"], Value::Null, "{again}");
    assert_eq!(get_c1()["error"]["code"], -32602);
    let v = d.rpc(
        "/a2a/web",
        &alice,
        V1,
        &call("CreateTaskPushNotificationConfig", json!({"taskId": id})),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("url"),
        "{v}"
    );
}

#[test]
fn every_change_reaches_the_webhook_in_order_with_its_authentication() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let hook = Webhook::start(0);
    d.set_setting("push.allow_loopback_targets", "true");
    let push = json!({"url": hook.url("/hook"), "token": "tok-7",
                      "authentication": {"scheme": "Bearer", "credentials": "s3cret"}});
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", Some(push))));
    worker(&d, &id, "blocked", "One object or one line per task?");
    let answer = call(
        "SendMessage",
        json!({"message": {"messageId": "m-2", "taskId": id, "role": "ROLE_USER", "parts": [{"text": "One line"}]},
               "configuration": {"returnImmediately": true}}),
    );
    assert!(d.rpc("/a2a/web", TOKEN, V1, &answer)["result"].is_object());
    worker(&d, &id, "done", "Added --json");
    let acked = d.rpc("/a2a/web", TOKEN, V1, &call("AckTask", json!({"id": id})));
    assert!(acked["result"].is_object(), "{acked}");

    let hits = hook.delivered("/hook", 6);
    let shapes: Vec<(String, String)> = hits.iter().map(|h| shape(&h.body)).collect();
    let s = |m: &str, st: &str| (m.to_owned(), st.to_owned());
    assert_eq!(
        shapes,
        [
            s("task", "TASK_STATE_WORKING"),
            s("statusUpdate", "TASK_STATE_INPUT_REQUIRED"),
            s("statusUpdate", "TASK_STATE_WORKING"),
            s("artifactUpdate", ""),
            s("statusUpdate", "TASK_STATE_COMPLETED"),
            s("statusUpdate", "TASK_STATE_COMPLETED"),
        ]
    );
    assert_eq!(
        hits[3].body["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "Added --json"
    );
    assert!(
        hits[5].body["statusUpdate"]["metadata"]
            .as_object()
            .unwrap()
            .values()
            .any(|m| m.get("acknowledgedAt").is_some()),
        "the ack is a change too: {:?}",
        hits[5].body
    );
    for h in &hits {
        assert_eq!(h.headers["authorization"], "Bearer s3cret");
        assert_eq!(h.headers["x-a2a-notification-token"], "tok-7");
        assert_eq!(h.headers["content-type"], "application/json");
        let body_task = h.body.as_object().unwrap().values().next().unwrap();
        let tid = body_task.get("taskId").or(body_task.get("id")).unwrap();
        assert_eq!(tid, id.as_str());
    }
}

#[test]
fn a_failing_webhook_gets_the_push_again_with_backoff_in_order() {
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(Arc::new(clock.clone()));
    d.with_desk("web");
    d.with_desk("api");
    d.set_setting("push.retry_first", "10s");
    let hook = Webhook::start(2);
    d.set_setting("push.allow_loopback_targets", "true");
    let id = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-1", Some(json!({"url": hook.url("/a")}))),
    ));
    until("the first attempt", || {
        (hook.hits("/a").len() == 1).then_some(())
    });
    // The task ends while its first push is still failing: the ending waits behind it.
    worker(&d, &id, "done", "Added --json");

    // Half the backoff later nothing is tried again. Seen through a second task's push:
    // once it arrives, the sender has looked at its queue after the clock moved.
    clock.advance(Duration::from_secs(5));
    d.daemon().wake_push();
    let api = call(
        "SendMessage",
        json!({"message": {"messageId": "m-2", "role": "ROLE_USER", "parts": [{"text": "x"}]},
               "configuration": {"returnImmediately": true, "taskPushNotificationConfig": {"url": hook.url("/b")}}}),
    );
    task_id(&d.rpc("/a2a/api", TOKEN, V1, &api));
    // The second task's first push takes the webhook's second failure; its retry is its own.
    until("the other task's push", || {
        (hook.hits("/b").len() == 1).then_some(())
    });
    assert_eq!(hook.hits("/a").len(), 1, "tried again before its backoff");

    clock.advance(Duration::from_secs(5));
    d.daemon().wake_push();
    let hits = hook.delivered("/a", 3);
    let shapes: Vec<(String, String)> = hits.iter().map(|h| shape(&h.body)).collect();
    assert_eq!(
        shapes,
        [
            ("task".to_owned(), "TASK_STATE_WORKING".to_owned()),
            ("artifactUpdate".to_owned(), String::new()),
            ("statusUpdate".to_owned(), "TASK_STATE_COMPLETED".to_owned()),
        ]
    );
    assert_eq!(hook.hits("/a").len(), 4, "one failure, then three in order");
    // The other webhook failed 5 s later; its retry is due 10 s after that.
    clock.advance(Duration::from_secs(10));
    d.daemon().wake_push();
    hook.delivered("/b", 1);
    assert_eq!(d.daemon().store().push_queued().unwrap(), 0);
    assert_eq!(hook.fail_first.load(Ordering::SeqCst), 0);
}

#[test]
fn a_restart_in_the_middle_still_delivers_what_was_queued() {
    let mut d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("push.retry_first", "1s");
    d.set_setting("push.retry_max", "1s");
    // Every push fails until after the restart.
    let hook = Webhook::start(usize::MAX);
    d.set_setting("push.allow_loopback_targets", "true");
    let id = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-1", Some(json!({"url": hook.url("/r")}))),
    ));
    worker(&d, &id, "blocked", "Which flag name?");
    until("a failed attempt", || {
        (!hook.hits("/r").is_empty()).then_some(())
    });
    d.restart();
    hook.fail_first.store(0, Ordering::SeqCst);
    let hits = hook.delivered("/r", 2);
    let shapes: Vec<(String, String)> = hits.iter().map(|h| shape(&h.body)).collect();
    assert_eq!(
        shapes,
        [
            ("task".to_owned(), "TASK_STATE_WORKING".to_owned()),
            (
                "statusUpdate".to_owned(),
                "TASK_STATE_INPUT_REQUIRED".to_owned()
            ),
        ]
    );
    until("an empty queue", || {
        (d.daemon().store().push_queued().unwrap() == 0).then_some(())
    });
}

#[test]
fn targets_in_refused_ranges_are_refused_and_nothing_is_stored_until_the_owner_allows_them() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    let create = |url: &str| {
        d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call(
                "CreateTaskPushNotificationConfig",
                json!({"taskId": id, "url": url}),
            ),
        )
    };
    for (url, says) in [
        ("http://10.1.2.3/hook", "private (10.0.0.0/8)"),
        ("http://192.168.1.20:8080/hook", "private (192.168.0.0/16)"),
        ("http://169.254.169.254/latest", "link-local"),
        ("http://100.64.0.1/", "shared address space"),
        ("http://[fd00::1]/", "unique-local"),
        ("http://[::ffff:172.16.0.1]/", "private (172.16.0.0/12)"),
        ("https://10.9.8.7:8443/hook", "private (10.0.0.0/8)"),
        ("ftp://127.0.0.1/", "must be http or https"),
        ("not a url", "not an absolute URL"),
    ] {
        let v = create(url);
        assert_eq!(v["error"]["code"], -32602, "{url}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{url}: {message}");
        if says.contains('(') {
            assert!(message.contains("push.allow_private_targets"), "{message}");
        }
    }
    let listed = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call("ListTaskPushNotificationConfigs", json!({"taskId": id})),
    );
    assert_eq!(listed["result"]["configs"], json!([]), "{listed}");

    // Inline in SendMessage: refused before a task is made.
    let before = d.task_count();
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-2", Some(json!({"url": "http://10.0.0.7/hook"}))),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
    assert_eq!(d.task_count(), before);

    d.set_setting("push.allow_private_targets", "true");
    let v = create("http://10.1.2.3/hook");
    assert_eq!(v["result"]["url"], "http://10.1.2.3/hook", "{v}");
    assert_eq!(
        d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &send("m-3", Some(json!({"url": "http://10.0.0.7/hook"})))
        )["result"]["task"]["status"]["state"],
        "TASK_STATE_SUBMITTED"
    );
}

/// A follow-up to an ended task is refused by the task's own rule (`transition::apply`), asked
/// before anything is set: the webhook that came with it is not stored.
#[test]
fn a_follow_up_to_an_ended_task_is_refused_and_leaves_no_webhook() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let hook = Webhook::start(0);
    d.set_setting("push.allow_loopback_targets", "true");
    let id = task_id(&d.rpc("/a2a/web", TOKEN, V1, &send("m-1", None)));
    worker(&d, &id, "done", "Added --json");
    let mut follow = send("m-2", Some(json!({"url": hook.url("/f")})));
    follow["params"]["message"]["taskId"] = json!(id);
    let err = d.rpc("/a2a/web", TOKEN, V1, &follow);
    assert_eq!(err["error"]["code"], -32004, "{err}");
    assert_eq!(err["error"]["data"][0]["metadata"]["taskId"], id.as_str());
    let message = err["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("task {id} has already ended (completed)"))
            && message.contains("referenceTaskIds"),
        "the transition's own words: {err}"
    );
    let configs = d
        .daemon()
        .store()
        .push_configs(&taskkeeper_core::TaskId::from(id.as_str()))
        .unwrap();
    assert!(configs.is_empty(), "{configs:?}");
    assert_eq!(d.task(&id)["state"], "completed");
}

/// A worker's artifacts reach the webhook as artifact updates, before the status update of
/// the same change, and the file's update carries the URL its asker fetches it from.
#[test]
fn a_workers_artifacts_are_pushed_as_artifact_updates() {
    let d = TestDaemon::start();
    let dir = tempfile::tempdir().unwrap();
    let (code, body) = d.call(
        "POST",
        "/api/desks",
        Some(&json!({"name": "web", "dir": dir.path(), "agent": "generic"})),
    );
    assert_eq!(code, 201, "{body}");
    std::fs::write(dir.path().join("report.txt"), "all green").unwrap();
    let hook = Webhook::start(0);
    d.set_setting("push.allow_loopback_targets", "true");
    let id = task_id(&d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &send("m-1", Some(json!({"url": hook.url("/hook")}))),
    ));
    hook.delivered("/hook", 1);
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": "working", "files": ["report.txt"], "data": [{"ok": true}]})),
    );
    assert_eq!(code, 200, "{body}");
    let hits = hook.delivered("/hook", 4);
    let members: Vec<String> = hits.iter().map(|h| shape(&h.body).0).collect();
    assert_eq!(
        members,
        ["task", "artifactUpdate", "artifactUpdate", "statusUpdate"]
    );
    let file = &hits[1].body["artifactUpdate"]["artifact"]["parts"][0];
    assert_eq!(file["filename"], "report.txt");
    let url = file["url"].as_str().unwrap();
    assert!(
        url.contains(&format!("/a2a/web/tasks/{id}/files/file-")),
        "{url}"
    );
    assert_eq!(
        hits[2].body["artifactUpdate"]["artifact"]["parts"][0]["data"],
        json!({"ok": true})
    );
}
