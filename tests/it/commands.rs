//! The window's commands through Tauri's IPC layer on the mock runtime, against a real daemon
//! on a temporary data directory: what the page gets is what the owner service says.

use serde_json::{Value, json};
use taskkeeper_app_lib::tray::Counts;
use taskkeeper_server::{Daemon, DaemonConfig};
use tauri::async_runtime::block_on;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets,
};
use tauri::webview::InvokeRequest;
use tauri::{WebviewUrl, WebviewWindow, WebviewWindowBuilder};

fn invoke(webview: &WebviewWindow<MockRuntime>, cmd: &str, args: Value) -> Result<Value, Value> {
    let request = InvokeRequest {
        cmd: cmd.into(),
        callback: CallbackFn(0),
        error: CallbackFn(1),
        url: "tauri://localhost".parse().unwrap(),
        body: InvokeBody::Json(args),
        headers: Default::default(),
        invoke_key: INVOKE_KEY.to_owned(),
    };
    get_ipc_response(webview, request).map(|body| body.deserialize::<Value>().unwrap())
}

#[test]
fn list_open_tasks_returns_the_owner_services_open_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = DaemonConfig::new(0, dir.path().to_owned());
    config.token = Some("test-token".to_owned());
    let daemon = block_on(Daemon::start(config)).unwrap();
    let owner = daemon.owner();

    let app = taskkeeper_app_lib::with_commands(mock_builder(), owner.clone())
        .build(mock_context(noop_assets()))
        .unwrap();
    let webview = WebviewWindowBuilder::new(&app, "main", WebviewUrl::default())
        .build()
        .unwrap();

    assert_eq!(
        invoke(&webview, "list_open_tasks", json!({})),
        Ok(json!([]))
    );

    block_on(owner.add_desk("web", Some("claude-code"), "/tmp")).unwrap();
    let created =
        block_on(owner.create_task("web", "Add a --json flag\nand a test for it", None)).unwrap();

    let listed = invoke(&webview, "list_open_tasks", json!({})).unwrap();
    let tasks = listed.as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{listed:#}");
    let task = &tasks[0];
    // The page reads camelCase keys; a rename on the Rust side would break it silently.
    assert_eq!(task["id"], json!(created.id));
    assert_eq!(task["desk"], json!("web"));
    assert_eq!(
        task["request"],
        json!("Add a --json flag\nand a test for it")
    );
    assert_eq!(task["remindersSent"], json!(0));
    for key in [
        "contextId",
        "asker",
        "state",
        "createdAt",
        "updatedAt",
        "queuePosition",
        "lastWords",
        "stalledAt",
        "version",
    ] {
        assert!(task.get(key).is_some(), "missing {key} in {task:#}");
    }

    // Once the task is cancelled it is no longer open.
    block_on(owner.cancel_task(&created.id, None)).unwrap();
    assert_eq!(
        invoke(&webview, "list_open_tasks", json!({})),
        Ok(json!([]))
    );

    block_on(daemon.shutdown());
}

#[test]
fn ui_rendered_takes_a_count_and_refuses_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let daemon = block_on(Daemon::start(DaemonConfig::new(0, dir.path().to_owned()))).unwrap();
    let app = taskkeeper_app_lib::with_commands(mock_builder(), daemon.owner())
        .build(mock_context(noop_assets()))
        .unwrap();
    let webview = WebviewWindowBuilder::new(&app, "main", WebviewUrl::default())
        .build()
        .unwrap();

    assert_eq!(
        invoke(&webview, "ui_rendered", json!({ "count": 2 })),
        Ok(Value::Null)
    );
    assert!(invoke(&webview, "ui_rendered", json!({ "count": "two" })).is_err());
    assert!(invoke(&webview, "no_such_command", json!({})).is_err());

    block_on(daemon.shutdown());
}

#[test]
fn the_tray_menu_names_open_and_stalled_counts() {
    assert_eq!(
        Counts {
            open: 0,
            stalled: 0
        }
        .menu_text(),
        "Open — nothing open"
    );
    assert_eq!(
        Counts {
            open: 3,
            stalled: 0
        }
        .menu_text(),
        "Open — 3 open"
    );
    assert_eq!(
        Counts {
            open: 3,
            stalled: 1
        }
        .menu_text(),
        "Open — 3 open · 1 stalled"
    );
}
