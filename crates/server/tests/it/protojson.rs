//! ProtoJSON input: every request field under its proto name (`return_immediately`,
//! `task_id`, `history_length`, …) means what its JSON name means, free-form JSON keeps its
//! keys, and `historyLength` follows the spec (absent: the server's default; 0: no history;
//! n: at most the n most recent) wherever the spec defines it: GetTask, SendMessage's
//! configuration and ListTasks.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{TOKEN, TestDaemon};

const V1: Option<&str> = Some("1.0");

fn call(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
}

fn history_len(task: &Value) -> Option<usize> {
    task.get("history").map(|h| h.as_array().unwrap().len())
}

fn worker(d: &TestDaemon, id: &str, status: &str) {
    let (code, body) = d.call(
        "POST",
        &format!("/api/tasks/{id}/update"),
        Some(&json!({"status": status, "text": "question"})),
    );
    assert_eq!(code, 200, "{body}");
}

#[test]
fn proto_names_are_read_as_json_names() {
    let d = TestDaemon::start();
    d.with_desk("web");
    // `return_immediately` read: the call comes back while the task is WORKING. Were it
    // ignored, the send would block until the worker acts, which it never does here.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let v = d.rpc(
                "/a2a/web",
                TOKEN,
                V1,
                &call(
                    "SendMessage",
                    json!({
                        "message": {"message_id": "p-1", "role": "ROLE_USER",
                                    "parts": [{"text": "x", "media_type": "text/plain"}],
                                    "reference_task_ids": ["earlier"],
                                    "metadata": {"asker_key": {"inner_key": 1}}},
                        "configuration": {"return_immediately": true, "history_length": 0,
                                          "accepted_output_modes": ["text/plain"]},
                        "metadata": {"request_key": true},
                    }),
                ),
            );
            let _ = tx.send(v);
        });
        let v = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("return_immediately is honoured: the send did not block");
        let task = &v["result"]["task"];
        assert_eq!(task["status"]["state"], "TASK_STATE_WORKING", "{v}");
        assert_eq!(history_len(task), None, "history_length 0: no history: {v}");
        let id = task["id"].as_str().unwrap().to_owned();

        let got = d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", json!({"id": id})));
        let request = &got["result"]["history"][0];
        assert_eq!(request["messageId"], "p-1", "{got}");
        assert_eq!(request["referenceTaskIds"], json!(["earlier"]));
        assert_eq!(request["parts"][0]["mediaType"], "text/plain");
        // Free-form JSON keeps its keys exactly.
        assert_eq!(request["metadata"], json!({"asker_key": {"inner_key": 1}}));
        assert_eq!(got["result"]["metadata"]["request_key"], true, "{got}");

        // `task_id` continues the task; `context_id` is checked against it.
        worker(&d, &id, "blocked");
        let context = got["result"]["contextId"].as_str().unwrap().to_owned();
        let wrong = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call(
                "SendMessage",
                json!({"message": {"message_id": "p-2", "task_id": id, "context_id": "other",
                                   "role": "ROLE_USER", "parts": [{"text": "y"}]},
                       "configuration": {"return_immediately": true}}),
            ),
        );
        assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
        let answer = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call(
                "SendMessage",
                json!({"message": {"message_id": "p-2", "task_id": id, "context_id": context,
                                   "role": "ROLE_USER", "parts": [{"text": "y"}]},
                       "configuration": {"return_immediately": true}}),
            ),
        );
        assert_eq!(answer["result"]["task"]["id"], id.as_str(), "{answer}");
        assert_eq!(history_len(&answer["result"]["task"]), Some(3), "{answer}");

        // ListTasks: `context_id`, `page_size`, `include_artifacts`, `history_length`.
        let list = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call(
                "ListTasks",
                json!({"context_id": context, "page_size": 1, "history_length": 1,
                       "include_artifacts": true}),
            ),
        );
        assert_eq!(list["result"]["pageSize"], 1, "{list}");
        assert_eq!(list["result"]["tasks"][0]["id"], id.as_str());
        assert_eq!(history_len(&list["result"]["tasks"][0]), Some(1), "{list}");
        let none = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call("ListTasks", json!({"context_id": "no-such-context"})),
        );
        assert_eq!(none["result"]["tasks"], json!([]), "{none}");

        // v0.3 too: tasks/get with the proto name.
        let v03 = d.rpc(
            "/a2a/web",
            TOKEN,
            None,
            &call("tasks/get", json!({"id": id, "history_length": 1})),
        );
        assert_eq!(history_len(&v03["result"]), Some(1), "{v03}");
    });
}

#[test]
fn a_field_under_both_names_is_refused_and_changes_nothing() {
    let d = TestDaemon::start();
    d.with_desk("web");
    let v = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "SendMessage",
            json!({"message": {"messageId": "b-1", "role": "ROLE_USER", "parts": [{"text": "x"}]},
                   "configuration": {"returnImmediately": true, "return_immediately": false}}),
        ),
    );
    assert_eq!(v["error"]["code"], -32602, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("params.configuration")
            && message.contains("`returnImmediately` and `return_immediately`")
            && message.contains("send it once"),
        "{message}"
    );
    assert_eq!(d.task_count(), 0);
}

#[test]
fn history_length_is_absent_zero_or_n_in_get_send_and_list() {
    let d = TestDaemon::start();
    d.with_desk("web");
    // The server's default when absent: `limits.reply_history`.
    d.set_setting("limits.reply_history", "2");
    let sent = d.rpc(
        "/a2a/web",
        TOKEN,
        V1,
        &call(
            "SendMessage",
            json!({"message": {"messageId": "h-1", "role": "ROLE_USER", "parts": [{"text": "1"}]},
                   "configuration": {"returnImmediately": true}}),
        ),
    );
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    for n in 2..=3 {
        worker(&d, &id, "blocked");
        let v = d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call(
                "SendMessage",
                json!({"message": {"messageId": format!("h-{n}"), "taskId": id,
                                   "role": "ROLE_USER", "parts": [{"text": n.to_string()}]},
                       "configuration": {"returnImmediately": true}}),
            ),
        );
        assert!(v["result"]["task"].is_object(), "{v}");
    }
    // The task's history: 3 requests and 2 questions.
    let texts = |task: &Value| -> Vec<String> {
        task["history"]
            .as_array()
            .map(|h| {
                h.iter()
                    .map(|m| m["parts"][0]["text"].as_str().unwrap().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let get =
        |params: Value| d.rpc("/a2a/web", TOKEN, V1, &call("GetTask", params))["result"].clone();
    assert_eq!(
        history_len(&get(json!({"id": id}))),
        Some(2),
        "absent: the default"
    );
    assert_eq!(
        history_len(&get(json!({"id": id, "historyLength": 0}))),
        None,
        "0: none"
    );
    let one = get(json!({"id": id, "historyLength": 1}));
    assert_eq!(texts(&one), vec!["3"], "1: the most recent");
    let all = get(json!({"id": id, "history_length": 50}));
    assert_eq!(
        history_len(&all),
        Some(5),
        "more than there is: all, in order"
    );
    assert_eq!(texts(&all)[0], "1");

    let list = |params: Value| {
        d.rpc("/a2a/web", TOKEN, V1, &call("ListTasks", params))["result"]["tasks"][0].clone()
    };
    assert_eq!(history_len(&list(json!({}))), Some(2));
    assert_eq!(history_len(&list(json!({"historyLength": 0}))), None);
    assert_eq!(history_len(&list(json!({"history_length": 4}))), Some(4));

    // SendMessage's configuration: the answer shows what was asked for.
    worker(&d, &id, "blocked");
    let send = |n: u32, config: Value| {
        d.rpc(
            "/a2a/web",
            TOKEN,
            V1,
            &call(
                "SendMessage",
                json!({"message": {"messageId": format!("s-{n}"), "taskId": id,
                                   "role": "ROLE_USER", "parts": [{"text": "more"}]},
                       "configuration": config}),
            ),
        )["result"]["task"]
            .clone()
    };
    let mut config = json!({"returnImmediately": true, "historyLength": 0});
    assert_eq!(history_len(&send(1, config.clone())), None);
    config["historyLength"] = json!(3);
    assert_eq!(history_len(&send(2, config)), Some(3));
    assert_eq!(
        history_len(&send(3, json!({"returnImmediately": true}))),
        Some(2),
        "absent: the default"
    );
}
