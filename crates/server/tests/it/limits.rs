//! The limits over real HTTP, each refused in its protocol's own words and changing nothing:
//! open tasks per asker and the message and task sizes (A2A, the owner API), the history a
//! reply carries, session ids and directories at the hook intake, the desks sessions create,
//! the sessions kept, and ended sessions pruned by the housekeeping on the injected clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use taskkeeper_core::{Clock as _, ManualClock, SystemClock};

use crate::support::{TOKEN, TestDaemon};

const V1: Option<&str> = Some("1.0");

fn send(message_id: &str, text: &str, task_id: Option<&str>) -> Value {
    let mut message =
        json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": message, "configuration": {"returnImmediately": true}}})
}

fn call(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": "r-1", "method": method, "params": params})
}

/// The ErrorInfo of a v1.0 error, after checking it is a limit's: code -32000, Taskkeeper's
/// domain, the setting named in the message and the metadata.
fn limit_error(reply: &Value, reason: &str, setting: &str) -> Value {
    let e = &reply["error"];
    assert_eq!(e["code"], -32000, "{reply}");
    assert!(e["message"].as_str().unwrap().contains(setting), "{reply}");
    let info = &e["data"][0];
    assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
    assert_eq!(info["reason"], reason, "{reply}");
    assert_eq!(info["domain"], "taskkeeper.dev");
    assert_eq!(info["metadata"]["setting"], setting);
    info.clone()
}

fn all_tasks(d: &TestDaemon) -> Value {
    let (status, body) = d.call("GET", "/api/tasks", None);
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn an_asker_past_its_open_tasks_is_refused_with_the_limit_named() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("limits.open_tasks_per_asker", "3");
    let flood = d.add_asker("flood");
    for i in 0..3 {
        let r = d.rpc(
            "/a2a/web",
            &flood,
            V1,
            &send(&format!("m{i}"), "do it", None),
        );
        assert!(r["result"]["task"]["id"].is_string(), "{r}");
    }
    let before = all_tasks(&d);
    let r = d.rpc("/a2a/web", &flood, V1, &send("m3", "one more", None));
    let info = limit_error(
        &r,
        "OPEN_TASKS_PER_ASKER_LIMIT",
        "limits.open_tasks_per_asker",
    );
    assert_eq!(info["metadata"]["limit"], "3");
    assert_eq!(all_tasks(&d), before, "the refusal changed nothing");

    // v0.3 says it too; another asker is not held back.
    let v03 = json!({"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": {"message":
        {"kind": "message", "messageId": "m4", "role": "user", "parts": [{"kind": "text", "text": "x"}]}}});
    let r = d.rpc("/a2a/web", &flood, None, &v03);
    assert_eq!(r["error"]["code"], -32000, "{r}");
    assert_eq!(r["error"]["data"]["reason"], "OPEN_TASKS_PER_ASKER_LIMIT");
    let other = d.add_asker("other");
    let r = d.rpc("/a2a/web", &other, V1, &send("m0", "mine", None));
    assert!(r["result"]["task"]["id"].is_string(), "{r}");

    // The owner's own tasks are not counted (the owner sets the limits).
    d.set_setting("limits.open_tasks_per_asker", "1");
    for text in ["a", "b"] {
        let body = json!({"desk": "web", "text": text});
        let (status, ok) = d.call("POST", "/api/tasks", Some(&body));
        assert_eq!(status, 201, "{ok}");
    }
}

#[test]
fn messages_and_follow_ups_past_the_size_limits_are_refused_and_change_nothing() {
    let d = TestDaemon::start();
    d.with_desk("web");
    d.set_setting("limits.message_bytes", "1KiB");
    d.set_setting("limits.task_bytes", "4KiB");

    let r = d.rpc("/a2a/web", TOKEN, V1, &send("big", &"x".repeat(2000), None));
    limit_error(&r, "MESSAGE_BYTES_LIMIT", "limits.message_bytes");
    assert_eq!(d.task_count(), 0);
    let (status, body) = d.call(
        "POST",
        "/api/tasks",
        Some(&json!({"desk": "web", "text": "x".repeat(2000)})),
    );
    assert_eq!(status, 413, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limits.message_bytes")
    );
    assert_eq!(d.task_count(), 0);

    let r = d.rpc("/a2a/web", TOKEN, V1, &send("m0", "start", None));
    let id = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    let get = call("GetTask", json!({"id": id}));
    let mut accepted = 0;
    let refusal = loop {
        let before = d.rpc("/a2a", TOKEN, V1, &get);
        let r = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &send(&format!("f{accepted}"), &"y".repeat(850), Some(&id)),
        );
        if r.get("error").is_some() {
            assert_eq!(
                d.rpc("/a2a", TOKEN, V1, &get),
                before,
                "the refusal changed nothing"
            );
            break r;
        }
        accepted += 1;
        assert!(accepted < 10, "the task limit never held: {r}");
    };
    let info = limit_error(&refusal, "TASK_BYTES_LIMIT", "limits.task_bytes");
    assert_eq!(info["metadata"]["limit"], "4KiB");
    assert!(accepted >= 2, "{accepted} follow-ups fit");
}

#[test]
fn replies_carry_the_recent_history_by_history_length_rules() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let r = d.rpc("/a2a/web", TOKEN, V1, &send("m0", "request", None));
    let id = r["result"]["task"]["id"].as_str().unwrap().to_owned();
    let mut last = Value::Null;
    for i in 1..=24 {
        last = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &send(&format!("m{i}"), &format!("follow-up {i}"), Some(&id)),
        );
    }
    let texts = |history: &Value| -> Vec<String> {
        history
            .as_array()
            .map(|h| {
                h.iter()
                    .map(|m| m["parts"][0]["text"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    // 25 messages kept; a reply without historyLength carries the 20 most recent, in order.
    let want: Vec<String> = (5..=24).map(|i| format!("follow-up {i}")).collect();
    assert_eq!(
        texts(&last["result"]["task"]["history"]),
        want,
        "SendMessage"
    );
    let got = d.rpc("/a2a", TOKEN, V1, &call("GetTask", json!({"id": id})));
    assert_eq!(texts(&got["result"]["history"]), want, "GetTask");
    let listed = d.rpc("/a2a", TOKEN, V1, &call("ListTasks", json!({})));
    assert_eq!(
        texts(&listed["result"]["tasks"][0]["history"]),
        want,
        "ListTasks"
    );

    // What the asker asks for, in either spelling (the kit writes the proto name).
    let two = d.rpc(
        "/a2a",
        TOKEN,
        V1,
        &call("GetTask", json!({"id": id, "history_length": 2})),
    );
    assert_eq!(
        texts(&two["result"]["history"]),
        ["follow-up 23", "follow-up 24"]
    );
    let all = d.rpc(
        "/a2a",
        TOKEN,
        V1,
        &call("GetTask", json!({"id": id, "historyLength": 100})),
    );
    assert_eq!(texts(&all["result"]["history"]).len(), 25);
    let none = d.rpc(
        "/a2a",
        TOKEN,
        V1,
        &call("GetTask", json!({"id": id, "historyLength": 0})),
    );
    assert!(none["result"].get("history").is_none(), "{none}");

    // The default is a setting.
    d.set_setting("limits.reply_history", "3");
    let got = d.rpc("/a2a", TOKEN, V1, &call("GetTask", json!({"id": id})));
    assert_eq!(texts(&got["result"]["history"]).len(), 3);
}

/// One hook as the helper sends it, with the worker token.
fn hook(d: &TestDaemon, body: &Value, headers: &[(&str, &str)]) -> (u16, String) {
    let mut hs = vec![
        (
            "Authorization".to_owned(),
            format!("Bearer {}", d.daemon().worker_token().as_str()),
        ),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    hs.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    d.raw(
        "POST",
        "/hooks/claude-code",
        &d.host(),
        &hs,
        &body.to_string(),
    )
}

fn start(session: &str, cwd: &str) -> Value {
    json!({"session_id": session, "hook_event_name": "SessionStart", "cwd": cwd, "source": "startup"})
}

fn report(d: &TestDaemon, body: &Value) -> (u16, String) {
    let hs = vec![
        (
            "Authorization".to_owned(),
            format!("Bearer {}", d.daemon().worker_token().as_str()),
        ),
        ("Content-Type".to_owned(), "application/json".to_owned()),
    ];
    d.raw("POST", "/hooks/generic", &d.host(), &hs, &body.to_string())
}

/// (session ids, desk names), sorted.
fn kept(d: &TestDaemon) -> (Vec<String>, Vec<String>) {
    let names = |v: &Value, list: &str, key: &str| -> Vec<String> {
        let mut n: Vec<String> = v[list]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s[key].as_str().unwrap().to_owned())
            .collect();
        n.sort();
        n
    };
    let (_, sessions) = d.call("GET", "/api/sessions", None);
    let (_, desks) = d.call("GET", "/api/desks", None);
    (
        names(&sessions, "sessions", "id"),
        names(&desks, "desks", "name"),
    )
}

#[test]
fn odd_session_ids_and_directories_are_refused_at_the_edge_and_make_nothing() {
    let d = TestDaemon::start();
    let work = d.data_dir.join("work").to_string_lossy().into_owned();
    // The finding: a 500 KB session id with ESC and a newline, and a cwd with NUL.
    let huge = format!("\u{1b}[2J{}\nx", "a".repeat(500_000));
    for (body, what) in [
        (start(&huge, &work), "session id"),
        (start("s 1", &work), "session id"),
        (start(&"a".repeat(201), &work), "session id"),
        (start("s-1", "/tmp/a\u{0}b"), "cwd"),
        (start("s-1", &format!("/{}", "d".repeat(5000))), "cwd"),
    ] {
        let (status, out) = hook(&d, &body, &[]);
        assert_eq!(status, 400, "{out}");
        assert!(out.contains(what), "{out}");
        assert!(
            out.len() < 1000,
            "the refusal does not echo the id back whole"
        );
    }
    for body in [
        json!({"session": huge, "event": "started", "cwd": work}),
        json!({"session": "s-1", "event": "started", "cwd": "/tmp/a\u{0}b"}),
    ] {
        let (status, out) = report(&d, &body);
        assert_eq!(status, 400, "{out}");
    }
    assert_eq!(kept(&d), (vec![], vec![]), "no session and no desk");

    // An ordinary id still works.
    let (status, out) = hook(
        &d,
        &start("0b6c3f5e-8d52-4c1c-9d43-3c4f8e2a1b7d", &work),
        &[],
    );
    assert_eq!(status, 200, "{out}");
}

#[test]
fn sessions_create_desks_only_below_the_bound() {
    let d = TestDaemon::start();
    d.set_setting("sessions.create_desks_max", "2");
    let dir = |name: &str| d.data_dir.join(name).to_string_lossy().into_owned();
    let (status, out) = hook(&d, &start("s-1", &dir("alpha")), &[]);
    assert_eq!(status, 200, "{out}");
    let (status, out) = hook(
        &d,
        &start("s-2", &dir("elsewhere")),
        &[("X-Taskkeeper-Desk", "beta")],
    );
    assert_eq!(status, 200, "{out}");
    let before = kept(&d);
    assert_eq!(before.1, ["alpha", "beta"]);

    for (session, cwd, headers) in [
        ("s-3", dir("gamma"), vec![]),
        (
            "s-4",
            dir("elsewhere"),
            vec![("X-Taskkeeper-Desk", "delta")],
        ),
    ] {
        let (status, out) = hook(&d, &start(session, &cwd), &headers);
        assert_eq!(status, 429, "{out}");
        assert!(out.contains("sessions.create_desks_max"), "{out}");
    }
    assert_eq!(kept(&d), before, "no desk and no session");

    // A directory a desk covers needs no new desk.
    let (status, out) = hook(&d, &start("s-5", &dir("alpha/sub")), &[]);
    assert_eq!(status, 200, "{out}");
}

#[test]
fn sessions_past_the_cap_are_refused_until_one_ends() {
    let d = TestDaemon::start();
    d.set_setting("sessions.max", "3");
    let work = d.data_dir.join("work").to_string_lossy().into_owned();
    for s in ["s-1", "s-2", "s-3"] {
        let (status, out) = hook(&d, &start(s, &work), &[]);
        assert_eq!(status, 200, "{out}");
    }
    let before = kept(&d);
    let (status, out) = hook(&d, &start("s-4", &work), &[]);
    assert_eq!(status, 429, "{out}");
    assert!(out.contains("sessions.max"), "{out}");
    assert_eq!(kept(&d), before);

    let end = json!({"session_id": "s-2", "hook_event_name": "SessionEnd", "cwd": work, "reason": "exit"});
    assert_eq!(hook(&d, &end, &[]).0, 200);
    let (status, out) = hook(&d, &start("s-4", &work), &[]);
    assert_eq!(status, 200, "{out}");
    assert_eq!(
        kept(&d).0,
        ["s-1", "s-3", "s-4"],
        "s-4 took the ended s-2's place"
    );
}

#[test]
fn ended_sessions_are_pruned_by_the_housekeeping_on_the_injected_clock() {
    let clock = ManualClock::new(SystemClock.now());
    let d = TestDaemon::start_with_clock(Arc::new(clock.clone()));
    let work = d.data_dir.join("work").to_string_lossy().into_owned();
    let said = |session: &str, event: &str| {
        let (status, out) = report(
            &d,
            &json!({"session": session, "event": event, "cwd": work}),
        );
        assert_eq!(status, 200, "{out}");
    };
    said("old", "started");
    said("quiet", "started");
    said("old", "ended");
    clock.advance(Duration::from_secs(23 * 3600));
    said("busy", "started");
    assert_eq!(kept(&d).0, ["busy", "old", "quiet"]);

    // A day after it ended (`sessions.keep_ended`), the next wake prunes it; live sessions
    // stay however quiet they were.
    clock.advance(Duration::from_secs(3600 + 1));
    said("busy", "turn-started");
    let deadline = Instant::now() + Duration::from_secs(10);
    while kept(&d).0 != ["busy", "quiet"] {
        assert!(Instant::now() < deadline, "not pruned: {:?}", kept(&d));
        std::thread::sleep(Duration::from_millis(20));
    }
}
