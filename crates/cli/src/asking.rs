//! What an asker does from the command line (`send`, `get`, `list`, `cancel`, `ack`,
//! `watch`): A2A calls with the asker's own token, printed as the owner's verbs print.

use serde_json::json;

use crate::A2aArgs;
use crate::a2a_client::{A2aClient, describe, state_name};
use crate::out::{self, say};

fn a2a(args: &A2aArgs, desk: Option<&str>) -> anyhow::Result<A2aClient> {
    A2aClient::new(
        args.url.clone(),
        desk.or(args.desk.as_deref()),
        args.token.clone(),
    )
}

fn print_task(task: &serde_json::Value, json: bool) -> anyhow::Result<()> {
    if json {
        return out::json(task);
    }
    say_task(task);
    Ok(())
}

/// One task's line: id, state and the status text, whose later lines hang under its first.
fn say_task(task: &serde_json::Value) {
    let (id, state, text) = describe(task);
    if text.is_empty() {
        say!("{}  {}", id, state);
    } else {
        say!("{}  {}  {}", id, state, text);
    }
}

pub fn send(
    desk: &str,
    text: &str,
    wait: bool,
    context: Option<String>,
    task: Option<String>,
    args: A2aArgs,
) -> anyhow::Result<()> {
    let client = a2a(&args, Some(desk))?;
    let message_id = taskkeeper_core::TaskId::generate().to_string();
    let mut message =
        json!({"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if let Some(c) = context {
        message["contextId"] = json!(c);
    }
    if let Some(t) = task {
        message["taskId"] = json!(t);
    }
    let result = client.call(
        "SendMessage",
        json!({"message": message, "configuration": {"returnImmediately": !wait}}),
    )?;
    let task = result.get("task").cloned().unwrap_or(result);
    print_task(&task, args.json)
}

pub fn a2a_get(id: &str, args: A2aArgs) -> anyhow::Result<()> {
    let task = a2a(&args, None)?.call("GetTask", json!({"id": id}))?;
    print_task(&task, args.json)
}

pub fn a2a_list(args: A2aArgs) -> anyhow::Result<()> {
    let client = a2a(&args, None)?;
    let mut token = String::new();
    let mut all = Vec::new();
    loop {
        let page = client.call(
            "ListTasks",
            json!({"pageSize": 100, "pageToken": token, "historyLength": 0}),
        )?;
        all.extend(page["tasks"].as_array().cloned().unwrap_or_default());
        token = page["nextPageToken"].as_str().unwrap_or("").to_owned();
        if token.is_empty() {
            break;
        }
    }
    if args.json {
        return out::json(&json!({"tasks": all}));
    }
    if all.is_empty() {
        say!("no tasks");
    }
    for t in &all {
        say_task(t);
    }
    Ok(())
}

pub fn a2a_cancel(id: &str, args: A2aArgs) -> anyhow::Result<()> {
    let task = a2a(&args, None)?.call("CancelTask", json!({"id": id}))?;
    print_task(&task, args.json)
}

pub fn a2a_ack(id: &str, args: A2aArgs) -> anyhow::Result<()> {
    let task = a2a(&args, None)?.call("AckTask", json!({"id": id}))?;
    print_task(&task, args.json)
}

pub fn a2a_watch(id: &str, args: A2aArgs) -> anyhow::Result<()> {
    let client = a2a(&args, None)?;
    client.stream("SubscribeToTask", json!({"id": id}), |event| {
        if args.json {
            // A value serde_json made cannot fail to serialize.
            let _ = out::json_line(event);
        } else if let Some(task) = event.get("task") {
            say_task(task);
        } else if let Some(update) = event.get("statusUpdate") {
            let state = state_name(update["status"]["state"].as_str().unwrap_or("?"));
            let text: Vec<&str> = update["status"]["message"]["parts"]
                .as_array()
                .map(|p| p.iter().filter_map(|p| p["text"].as_str()).collect())
                .unwrap_or_default();
            say!("{}  {}", state, text.join(" "));
        } else if let Some(update) = event.get("artifactUpdate") {
            let name = update["artifact"]["name"].as_str().unwrap_or("artifact");
            say!("artifact {}", name);
        }
        true
    })
}
