//! The window's commands through Tauri's IPC layer on the mock runtime (no display), against a
//! real daemon on a temporary data directory: what the page gets is what the owner service says,
//! in the owner API's camelCase shapes, and errors arrive as `{kind, message}`. One test per
//! command group, plus the events the app sends to the page.

use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};
use taskkeeper_app_lib::commands::{Autostart, AutostartState};
use taskkeeper_app_lib::events::{self, Navigate};
use taskkeeper_app_lib::tray::{Counts, TrayState, reminders_text};
use taskkeeper_app_lib::{Flags, Start, with_commands};
use taskkeeper_app_lib::{feeds, window};
use taskkeeper_server::notify::Notice;
use taskkeeper_server::{Daemon, DaemonConfig, OwnerService};
use tauri::async_runtime::block_on;
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{
    INVOKE_KEY, MockRuntime, get_ipc_response, mock_builder, mock_context, noop_assets,
};
use tauri::webview::InvokeRequest;
use tauri::{App, Listener as _, Manager as _, WebviewUrl, WebviewWindow, WebviewWindowBuilder};

use crate::support::Owner;

const TOKEN: &str = "test-token";

/// A daemon, the app's commands on the mock runtime, and the window that calls them.
struct Fixture {
    daemon: Option<Daemon>,
    owner: OwnerService,
    app: App<MockRuntime>,
    webview: WebviewWindow<MockRuntime>,
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_autostart(FakeAutostart::default())
    }

    fn with_autostart(autostart: impl Autostart + 'static) -> Fixture {
        // No test here starts the real Claude Code: `claude` is a program that cannot start,
        // unless a test gives its own (see `with_claude`).
        Fixture::with(autostart, |_| {
            std::path::PathBuf::from("/nonexistent/claude")
        })
    }

    /// A daemon whose headless sessions run `claude(data dir)` instead of Claude Code.
    fn with_claude(claude: impl FnOnce(&std::path::Path) -> std::path::PathBuf) -> Fixture {
        Fixture::with(FakeAutostart::default(), claude)
    }

    fn with(
        autostart: impl Autostart + 'static,
        claude: impl FnOnce(&std::path::Path) -> std::path::PathBuf,
    ) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let mut config = DaemonConfig::new(0, dir.path().to_owned());
        config.token = Some(TOKEN.to_owned());
        config.claude = claude(dir.path());
        // Connect writes agents' settings into a home of the test's own, naming a stand-in
        // `taskkeeper` that answers `--version` as the CLI does.
        config.home = Some(dir.path().join("home"));
        config.taskkeeper_bin = Some(stand_in_cli(dir.path()));
        let daemon = block_on(Daemon::start(config)).unwrap();
        let owner = daemon.owner();
        let app = with_commands(mock_builder(), owner.clone())
            .manage(AutostartState(Box::new(autostart)))
            .build(mock_context(noop_assets()))
            .unwrap();
        let webview = WebviewWindowBuilder::new(&app, "main", WebviewUrl::default())
            .build()
            .unwrap();
        Fixture {
            daemon: Some(daemon),
            owner,
            app,
            webview,
            dir,
        }
    }

    fn invoke(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        let request = InvokeRequest {
            cmd: cmd.into(),
            callback: CallbackFn(0),
            error: CallbackFn(1),
            url: "tauri://localhost".parse().unwrap(),
            body: InvokeBody::Json(args),
            headers: Default::default(),
            invoke_key: INVOKE_KEY.to_owned(),
        };
        get_ipc_response(&self.webview, request).map(|body| body.deserialize::<Value>().unwrap())
    }

    fn ok(&self, cmd: &str, args: Value) -> Value {
        self.invoke(cmd, args)
            .unwrap_or_else(|e| panic!("{cmd} failed: {e}"))
    }

    /// The error's `kind`, checking it has a message too.
    fn err_kind(&self, cmd: &str, args: Value) -> String {
        let error = self
            .invoke(cmd, args)
            .err()
            .unwrap_or_else(|| panic!("{cmd} succeeded"));
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{cmd}: no message in {error}"
        );
        error["kind"].as_str().unwrap().to_owned()
    }

    fn http(&self) -> Owner {
        Owner::new(self.daemon.as_ref().unwrap().addr().port(), TOKEN)
    }

    fn desk(&self, name: &str) -> std::path::PathBuf {
        self.desk_of(name, "claude-code")
    }

    fn desk_of(&self, name: &str, agent: &str) -> std::path::PathBuf {
        let dir = self.dir.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        block_on(
            self.owner
                .add_desk(name, Some(agent), dir.to_str().unwrap(), None),
        )
        .unwrap();
        dir
    }

    /// The session `id` as `list_sessions` shows it, once `check` holds (within 15 s).
    fn session_when(&self, id: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        loop {
            let sessions = self.ok("list_sessions", json!({}));
            let found = sessions
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id)
                .cloned();
            if let Some(session) = found.filter(|s| check(s)) {
                return session;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "session {id} never got there: {sessions:#}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(daemon) = self.daemon.take() {
            block_on(daemon.shutdown());
        }
    }
}

#[derive(Default)]
struct FakeAutostart {
    enabled: Mutex<bool>,
    broken: bool,
}

impl Autostart for FakeAutostart {
    fn is_enabled(&self) -> Result<bool, String> {
        if self.broken {
            return Err("no autostart directory".to_owned());
        }
        Ok(*self.enabled.lock().unwrap())
    }

    fn set_enabled(&self, enabled: bool) -> Result<(), String> {
        if self.broken {
            return Err("no autostart directory".to_owned());
        }
        *self.enabled.lock().unwrap() = enabled;
        Ok(())
    }
}

#[test]
fn task_commands_list_read_cancel_remind_and_resume() {
    let f = Fixture::new();
    assert_eq!(f.ok("list_open_tasks", json!({})), json!([]));
    assert_eq!(f.ok("list_tasks", json!({ "state": "open" })), json!([]));

    f.desk("web");
    let first = block_on(
        f.owner
            .create_task("web", "Add a --json flag\nand a test for it", None),
    )
    .unwrap();
    let second = block_on(f.owner.create_task("web", "Then the docs", None)).unwrap();

    let open = f.ok("list_tasks", json!({ "state": "open" }));
    assert_eq!(open.as_array().unwrap().len(), 2, "{open:#}");
    let task = &open[0];
    // The page reads camelCase keys; a rename on the Rust side would break it silently.
    assert_eq!(task["id"], json!(first.id));
    assert_eq!(
        task["request"],
        json!("Add a --json flag\nand a test for it")
    );
    for key in [
        "contextId",
        "desk",
        "asker",
        "state",
        "createdAt",
        "updatedAt",
        "queuePosition",
        "remindersSent",
        "lastReminderAt",
        "stalledAt",
        "lastWords",
        "waitingOnOwner",
        "version",
    ] {
        assert!(task.get(key).is_some(), "missing {key} in {task:#}");
    }
    assert_eq!(f.ok("list_open_tasks", json!({})), open);
    assert_eq!(
        f.ok("list_tasks", json!({ "desk": "web" })),
        open,
        "all states of one desk"
    );
    assert_eq!(
        f.err_kind("list_tasks", json!({ "state": "asleep" })),
        "invalid"
    );

    let detail = f.ok("get_task", json!({ "id": first.id }));
    assert_eq!(detail["id"], json!(first.id));
    assert_eq!(detail["history"][0]["from"], "asker", "{detail:#}");
    assert!(detail["artifacts"].is_array());
    assert_eq!(
        f.err_kind("get_task", json!({ "id": "no-such-task" })),
        "not_found"
    );
    assert!(f.invoke("get_task", json!({})).is_err(), "id is required");

    // Reminding needs a live session at the desk; resuming needs a stall.
    assert_eq!(
        f.err_kind("remind_task", json!({ "id": first.id })),
        "invalid"
    );
    assert_eq!(
        f.err_kind("resume_task", json!({ "id": first.id })),
        "conflict"
    );

    let canceled = f.ok(
        "cancel_task",
        json!({ "id": second.id, "reason": "Not needed" }),
    );
    assert_eq!(canceled["state"], "canceled");
    assert_eq!(canceled["statusText"], "Not needed");
    // Without a reason the owner's default one is given.
    let canceled = f.ok("cancel_task", json!({ "id": first.id }));
    assert_eq!(canceled["state"], "canceled");
    assert_eq!(f.ok("list_tasks", json!({ "state": "open" })), json!([]));
    let ended = f.ok("list_tasks", json!({ "state": "ended" }));
    assert_eq!(ended.as_array().unwrap().len(), 2);
}

#[test]
fn desk_and_session_commands_list_and_pause() {
    let f = Fixture::new();
    assert_eq!(f.ok("list_desks", json!({})), json!([]));
    assert_eq!(f.ok("list_sessions", json!({})), json!([]));

    let work = f.desk("web");
    let desks = f.ok("list_desks", json!({}));
    assert_eq!(desks[0]["name"], "web");
    assert_eq!(desks[0]["agent"], "claude-code");

    // A Claude Code session starts at the desk, through the hook intake.
    f.http()
        .hook("s-1", &work, "SessionStart", json!({"source": "startup"}));
    let sessions = f.ok("list_sessions", json!({}));
    assert_eq!(sessions[0]["id"], "s-1", "{sessions:#}");
    assert_eq!(sessions[0]["desk"], "web");

    let paused = f.ok("pause_session", json!({ "id": "s-1" }));
    assert_eq!(paused["id"], "s-1");
    let resumed = f.ok("resume_session", json!({ "id": "s-1" }));
    assert_eq!(resumed["id"], "s-1");
    assert_eq!(
        f.err_kind("pause_session", json!({ "id": "s-404" })),
        "not_found"
    );
    assert_eq!(
        f.err_kind("resume_session", json!({ "id": "s-404" })),
        "not_found"
    );
}

#[test]
fn set_deliver_command_sets_shows_and_clears_it() {
    let f = Fixture::new();
    f.desk("web");
    assert_eq!(
        f.ok("list_desks", json!({}))[0]["deliverCommand"],
        Value::Null
    );

    let command = "tmux send-keys -t work:1 -l \"$(cat)\" Enter";
    let desk = f.ok(
        "set_deliver_command",
        json!({ "name": "web", "command": command }),
    );
    assert_eq!(desk["name"], "web");
    assert_eq!(desk["deliverCommand"], command);
    assert_eq!(f.ok("list_desks", json!({}))[0]["deliverCommand"], command);
    // The owner API sees the same desk: one owner service behind both.
    let seen = block_on(f.owner.list_desks()).unwrap();
    assert_eq!(seen[0].deliver_command.as_deref(), Some(command));

    // Refused as the API refuses: more than one line, or too long; nothing changes.
    for bad in [
        "cat\nrm -rf ~".to_owned(),
        "cat\r".to_owned(),
        "x".repeat(4097),
    ] {
        assert_eq!(
            f.err_kind(
                "set_deliver_command",
                json!({ "name": "web", "command": bad })
            ),
            "invalid"
        );
    }
    let longest = "x".repeat(4096);
    assert_eq!(
        f.ok(
            "set_deliver_command",
            json!({ "name": "web", "command": longest })
        )["deliverCommand"],
        longest
    );
    assert_eq!(
        f.err_kind(
            "set_deliver_command",
            json!({ "name": "nowhere", "command": "cat" })
        ),
        "not_found"
    );

    // Null, absent or blank removes it.
    let cleared = f.ok(
        "set_deliver_command",
        json!({ "name": "web", "command": null }),
    );
    assert_eq!(cleared["deliverCommand"], Value::Null);
    f.ok(
        "set_deliver_command",
        json!({ "name": "web", "command": "cat" }),
    );
    assert_eq!(
        f.ok(
            "set_deliver_command",
            json!({ "name": "web", "command": "  " })
        )["deliverCommand"],
        Value::Null
    );
    f.ok(
        "set_deliver_command",
        json!({ "name": "web", "command": "cat" }),
    );
    assert_eq!(
        f.ok("set_deliver_command", json!({ "name": "web" }))["deliverCommand"],
        Value::Null
    );
    assert!(
        f.invoke("set_deliver_command", json!({ "command": "cat" }))
            .is_err(),
        "name is required"
    );
}

#[test]
fn launch_session_is_refused_where_it_cannot_launch() {
    let f = Fixture::new();
    f.desk_of("notes", "generic");
    let error = f
        .invoke("launch_session", json!({ "desk": "notes" }))
        .unwrap_err();
    assert_eq!(error["kind"], "invalid", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("claude-code, codex and gemini desks"),
        "{error}"
    );
    assert_eq!(
        f.err_kind("launch_session", json!({ "desk": "nowhere" })),
        "not_found"
    );

    // A claude-code desk whose directory went away.
    let gone = f.desk("gone");
    std::fs::remove_dir(&gone).unwrap();
    assert_eq!(
        f.err_kind("launch_session", json!({ "desk": "gone" })),
        "invalid"
    );

    // `claude` cannot start: the message says how to point Taskkeeper at it.
    f.desk("web");
    let error = f
        .invoke("launch_session", json!({ "desk": "web" }))
        .unwrap_err();
    assert_eq!(error["kind"], "internal", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("TASKKEEPER_CLAUDE"),
        "{error}"
    );
    assert_eq!(
        f.ok("list_sessions", json!({})),
        json!([]),
        "nothing launched"
    );
    assert!(
        f.invoke("launch_session", json!({})).is_err(),
        "desk is required"
    );

    assert_eq!(
        f.err_kind("stop_session", json!({ "id": "s-404" })),
        "not_found"
    );
}

#[test]
fn answer_permission_is_refused_without_a_request_to_answer() {
    let f = Fixture::new();
    // No such session.
    assert_eq!(
        f.err_kind("answer_permission", json!({ "id": "s-404", "allow": true })),
        "not_found"
    );
    // A session in a terminal is not this daemon's to answer for: its prompt is in the terminal.
    let work = f.desk("web");
    f.http()
        .hook("s-1", &work, "SessionStart", json!({"source": "startup"}));
    assert_eq!(
        f.err_kind(
            "answer_permission",
            json!({ "id": "s-1", "allow": false, "message": "not now" })
        ),
        "not_found"
    );
    let listed = f.ok("list_sessions", json!({}));
    assert_eq!(listed[0]["permission"], Value::Null, "{listed:#}");
    // `id` and `allow` are required.
    assert!(
        f.invoke("answer_permission", json!({ "id": "s-1" }))
            .is_err(),
        "allow is required"
    );
    assert!(
        f.invoke("answer_permission", json!({ "allow": true }))
            .is_err(),
        "id is required"
    );
}

#[cfg(unix)]
#[test]
fn launch_and_stop_session_run_a_headless_session() {
    // A stand-in for `claude -p`: it reads its stdin until Taskkeeper closes it.
    let f = Fixture::with_claude(|dir| {
        use std::os::unix::fs::PermissionsExt as _;
        let script = dir.join("fake-claude");
        std::fs::write(&script, "#!/bin/sh\nexec cat >/dev/null\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    });
    f.desk("web");
    let session = f.ok("launch_session", json!({ "desk": "web" }));
    let id = session["id"].as_str().unwrap().to_owned();
    assert_eq!(session["desk"], "web", "{session:#}");
    assert_eq!(session["headless"], true, "{session:#}");
    assert!(session["pid"].is_u64(), "{session:#}");
    let listed = f.session_when(&id, |_| true);
    assert_eq!(listed["headless"], true);
    assert_ne!(listed["activity"], "ended");

    // The pause switch works on it like on any session.
    assert_eq!(f.ok("pause_session", json!({ "id": id }))["id"], json!(id));

    assert_eq!(f.ok("stop_session", json!({ "id": id })), Value::Null);
    f.session_when(&id, |s| s["activity"] == "ended");
    // Once stopped it is no longer this daemon's to stop.
    assert_eq!(f.err_kind("stop_session", json!({ "id": id })), "not_found");
}

#[test]
fn settings_commands_read_validate_save_and_pause_reminders() {
    let f = Fixture::new();
    let settings = f.ok("get_settings", json!({}));
    for key in [
        "reminders.first_after.claude-code",
        "reminders.ladder",
        "reminders.stall_after",
        "notifications.enabled",
        "reminders.paused",
    ] {
        assert!(settings[key].is_string(), "missing {key} in {settings:#}");
    }

    let saved = f.ok(
        "save_settings",
        json!({ "changes": { "reminders.ladder": "1m, 2m", "notifications.enabled": false, "reminders.hourly_cap": 4 } }),
    );
    assert_eq!(
        saved,
        f.ok("get_settings", json!({})),
        "answers every setting"
    );
    assert_eq!(saved["notifications.enabled"], "false");
    assert_eq!(saved["reminders.hourly_cap"], "4");
    let ladder = saved["reminders.ladder"].clone();

    // One invalid value changes nothing.
    assert_eq!(
        f.err_kind(
            "save_settings",
            json!({ "changes": { "reminders.ladder": "5m", "reminders.stall_after": "soon" } })
        ),
        "invalid"
    );
    assert_eq!(f.ok("get_settings", json!({}))["reminders.ladder"], ladder);
    assert_eq!(
        f.err_kind(
            "save_settings",
            json!({ "changes": { "no.such.key": "1" } })
        ),
        "invalid"
    );
    assert_eq!(
        f.err_kind(
            "save_settings",
            json!({ "changes": { "reminders.ladder": ["1m"] } })
        ),
        "invalid"
    );

    // What the settings panel draws its fields from: the owner API's catalogue.
    let catalogue = f.ok("get_settings_catalogue", json!({}));
    let keys: Vec<&str> = catalogue["settings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys.len(), settings.as_object().unwrap().len());
    assert!(keys.contains(&"reminders.ladder"), "{catalogue:#}");

    let paused = f.ok("pause_reminders", json!({}));
    assert_eq!(paused["reminders.paused"], "true");
    assert_eq!(f.ok("get_settings", json!({}))["reminders.paused"], "true");
    let resumed = f.ok("resume_reminders", json!({}));
    assert_eq!(resumed["reminders.paused"], "false");
}

#[test]
fn get_network_says_the_network_listener_is_off_until_a_setting_turns_it_on() {
    let f = Fixture::new();
    let network = f.ok("get_network", json!({}));
    assert_eq!(network["state"], "off", "{network}");
    assert!(network["url"].is_null());
    // A setting that cannot make a listener: it says why.
    f.ok(
        "save_settings",
        json!({ "changes": { "network.listen": "127.0.0.1:0", "network.tls": "files" } }),
    );
    let network = until_network(&f, "failed");
    assert!(
        network["error"]
            .as_str()
            .unwrap()
            .contains("network.cert_file"),
        "{network}"
    );
}

/// The network listener once it is in `state` (it starts again shortly after a change).
fn until_network(f: &Fixture, state: &str) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let network = f.ok("get_network", json!({}));
        if network["state"] == state {
            return network;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the network listener never became {state}: {network}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn autostart_commands_read_and_set_it() {
    let f = Fixture::new();
    assert_eq!(f.ok("get_autostart", json!({})), json!(false));
    assert_eq!(
        f.ok("set_autostart", json!({ "enabled": true })),
        json!(true)
    );
    assert_eq!(f.ok("get_autostart", json!({})), json!(true));
    assert_eq!(
        f.ok("set_autostart", json!({ "enabled": false })),
        json!(false)
    );
    assert!(
        f.invoke("set_autostart", json!({})).is_err(),
        "enabled is required"
    );

    let broken = Fixture::with_autostart(FakeAutostart {
        broken: true,
        ..Default::default()
    });
    let error = broken.invoke("get_autostart", json!({})).unwrap_err();
    assert_eq!(
        error,
        json!({ "kind": "internal", "message": "autostart: no autostart directory" })
    );
}

fn stand_in_cli(dir: &std::path::Path) -> std::path::PathBuf {
    let exe = dir.join("bin").join("taskkeeper");
    std::fs::create_dir_all(exe.parent().unwrap()).unwrap();
    std::fs::write(&exe, "#!/bin/sh\necho 'taskkeeper 0.1.0'\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    exe
}

#[cfg(unix)]
#[test]
fn agent_commands_list_connect_and_disconnect_claude_code() {
    let f = Fixture::new();
    let home = f.dir.path().join("home");
    let agents = f.ok("list_agents", json!({}));
    assert_eq!(
        (&agents[0]["agent"], &agents[0]["connected"]),
        (&json!("claude-code"), &json!(false)),
        "{agents}"
    );
    let change = f.ok("connect_agent", json!({ "agent": "claude-code" }));
    assert_eq!(
        change["changes"].as_array().map(Vec::len),
        Some(2),
        "{change}"
    );
    assert_eq!(change["agent"]["working"], true, "{change}");
    let settings: Value =
        serde_json::from_str(&std::fs::read_to_string(home.join(".claude/settings.json")).unwrap())
            .unwrap();
    assert_eq!(
        settings["hooks"]["Stop"][0]["hooks"][0]["command"],
        f.dir.path().join("bin/taskkeeper").to_str().unwrap()
    );
    let change = f.ok("disconnect_agent", json!({ "agent": "claude-code" }));
    assert_eq!(change["agent"]["connected"], false, "{change}");
    assert!(!home.join(".claude/settings.json").exists());
    assert_eq!(
        f.err_kind("connect_agent", json!({ "agent": "codex" })),
        "not_found"
    );
}

#[test]
fn ui_rendered_takes_a_count_and_unknown_commands_are_refused() {
    let f = Fixture::new();
    assert_eq!(
        f.invoke("ui_rendered", json!({ "count": 2 })),
        Ok(Value::Null)
    );
    assert!(f.invoke("ui_rendered", json!({ "count": "two" })).is_err());
    assert!(f.invoke("no_such_command", json!({})).is_err());
}

/// Listens for one event on the mock app; payloads arrive as JSON.
fn listen(app: &App<MockRuntime>, event: &'static str) -> mpsc::Receiver<Value> {
    let (tx, rx) = mpsc::channel();
    app.listen(event, move |e| {
        let _ = tx.send(serde_json::from_str(e.payload()).unwrap());
    });
    rx
}

/// Waits (up to 5 s) until the app's sessions forwarder has done what `done` says; what it
/// has done then.
fn until(
    forwarding: &mut tokio::sync::watch::Receiver<feeds::Forwarding>,
    what: &str,
    done: impl Fn(&feeds::Forwarding) -> bool,
) -> feeds::Forwarding {
    // The timer is made inside the runtime that polls it.
    let reached = block_on(async {
        tokio::time::timeout(Duration::from_secs(5), forwarding.wait_for(|f| done(f)))
            .await
            .map(|f| f.map(|f| *f))
    });
    match reached {
        Ok(Ok(f)) => f,
        _ => panic!("the sessions forwarder never got to: {what}"),
    }
}

#[test]
fn task_and_session_changes_notices_and_navigation_reach_the_page_as_events() {
    let f = Fixture::new();
    let handle = f.app.handle().clone();
    let tasks = listen(&f.app, events::TASK);
    let settings = listen(&f.app, events::SETTINGS);
    let notices = listen(&f.app, events::NOTICE);
    let navigation = listen(&f.app, events::NAVIGATE);
    let sessions = listen(&f.app, events::SESSIONS);

    let forwarded = feeds::Forwarded::default();
    let mut forwarding = forwarded.follow();
    tauri::async_runtime::spawn(feeds::forward_task_changes(
        handle.clone(),
        f.owner.clone(),
        forwarded.clone(),
    ));
    let (notice_tx, notice_rx) = tokio::sync::broadcast::channel(4);
    tauri::async_runtime::spawn(feeds::forward_notices(handle.clone(), notice_rx));
    // The task forwarder subscribes when it first runs (the notices' receiver is subscribed).
    until(&mut forwarding, "following the feeds", |f| f.following);

    let work = f.desk("web");
    let task = block_on(f.owner.create_task("web", "Add a --json flag", None)).unwrap();
    let event = tasks.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(event["id"], json!(task.id));
    assert_eq!(event["desk"], "web");
    assert_eq!(event["request"], "Add a --json flag");
    block_on(f.owner.cancel_task(&task.id, None)).unwrap();
    let event = tasks.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        (&event["id"], &event["state"]),
        (&json!(task.id), &json!("canceled"))
    );
    // A settings change made anywhere (here: the pause command) arrives with every setting.
    f.ok("pause_reminders", json!({}));
    let event = settings.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(event["reminders.paused"], "true");
    assert!(event["reminders.ladder"].is_string());

    notice_tx
        .send(Notice::SessionEnded {
            session: "s-1".into(),
            desk: "web".into(),
            open_tasks: 2,
        })
        .unwrap();
    let event = notices.recv_timeout(Duration::from_secs(5)).unwrap();
    assert_eq!(
        event,
        json!({ "kind": "session-ended", "session": "s-1", "desk": "web", "openTasks": 2 })
    );

    // A session starting and getting busy is a hint to re-read the sessions; a burst of session
    // changes is folded into one event per gap, and none follow once nothing changes.
    let before = forwarding.borrow().sent;
    f.http()
        .hook("s-1", &work, "SessionStart", json!({"source": "startup"}));
    f.http()
        .hook("s-1", &work, "UserPromptSubmit", json!({"prompt": "hi"}));
    assert_eq!(
        sessions.recv_timeout(Duration::from_secs(5)).unwrap(),
        json!({})
    );
    // Once the forwarder has put every session change so far into an event sent and has none
    // pending, no event is left to come: what the page got is all it gets.
    let changed = *f.owner.session_changes().borrow();
    let idle = until(&mut forwarding, "every session change sent", |f| {
        !f.pending && f.seen >= changed
    });
    let mut got = 1;
    while sessions.try_recv().is_ok() {
        got += 1;
    }
    assert_eq!(
        got,
        idle.sent - before,
        "the page got other sessions events than the forwarder sent"
    );

    window::navigate(&handle, Navigate::SETTINGS);
    assert_eq!(
        navigation.recv_timeout(Duration::from_secs(5)).unwrap(),
        json!("settings")
    );
    window::navigate(&handle, Navigate::task("t-1"));
    assert_eq!(
        navigation.recv_timeout(Duration::from_secs(5)).unwrap(),
        json!({ "task": "t-1" })
    );
    // The state the commands use is in place.
    assert!(f.app.try_state::<OwnerService>().is_some());
}

#[test]
fn the_tray_shows_three_states_with_the_counts() {
    let counts = |open, stalled| Counts { open, stalled };
    assert_eq!(counts(0, 0).state(), TrayState::Idle);
    assert_eq!(counts(3, 0).state(), TrayState::Open);
    assert_eq!(counts(3, 1).state(), TrayState::Stalled);
    assert_eq!(counts(0, 0).menu_text(), "Open — nothing open");
    assert_eq!(counts(3, 0).menu_text(), "Open — 3 open");
    assert_eq!(counts(3, 1).menu_text(), "Open — 3 open · 1 stalled");
    assert_eq!(counts(3, 1).tooltip(), "Taskkeeper — 3 open · 1 stalled");
    assert_eq!(
        [TrayState::Idle, TrayState::Open, TrayState::Stalled].map(TrayState::as_str),
        ["idle", "open", "stalled"]
    );
    assert_eq!(reminders_text(false), "Pause reminders");
    assert_eq!(reminders_text(true), "Resume reminders");
}

#[test]
fn flags_show_the_window_and_ignore_the_unknown() {
    let parse = |args: &[&str]| Flags::parse(args.iter().map(|a| (*a).to_owned()));
    let run = |args: &[&str]| match parse(args) {
        Start::Run { flags, ignored } => (flags.show, ignored),
        other => panic!("{args:?} should run: {other:?}"),
    };
    assert_eq!(run(&[]), (false, vec![]));
    assert_eq!(run(&["--show"]), (true, vec![]));
    assert_eq!(
        run(&["--from-a-newer-version", "--show"]),
        (true, vec!["--from-a-newer-version".to_owned()])
    );
    let Start::Exit { text, error, code } = parse(&["--version"]) else {
        panic!("--version exits")
    };
    assert_eq!(
        (text.as_str(), error, code),
        ("taskkeeper-app 0.1.0\n", false, 0)
    );
    let Start::Exit { text, error, code } = parse(&["--help"]) else {
        panic!("--help exits")
    };
    assert!(
        !error && code == 0 && text.contains("--show") && text.contains("`taskkeeper --help`"),
        "{text}"
    );
    let Start::Exit { text, error, code } = parse(&["connect", "claude-code"]) else {
        panic!("a verb is refused")
    };
    assert!(error && code == 2, "{text}");
    assert!(text.contains("`taskkeeper connect claude-code`"), "{text}");
}
