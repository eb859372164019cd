//! The real app, headless: the built `taskkeeper-app` under Xvfb inside a private D-Bus
//! session, with its own data directory, port and token. A task added over the owner API must
//! show up in the window; the page reports what it drew through the `ui_rendered` command,
//! which the app writes to its log, and a screenshot of the window is kept in
//! `tests/artifacts/` for people to look at.
//!
//! Needs the `xvfb` and `dbus` packages (and the app's run-time libraries).

use std::fs;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::support::{Owner, file_contains, free_port, random_token, wait_for};
use crate::xwd::Screen;

const APP: &str = env!("CARGO_BIN_EXE_taskkeeper-app");

#[test]
fn the_window_lists_a_task_added_over_the_owner_api() {
    let tmp = tempfile::tempdir().unwrap();
    let (data_dir, fb_dir) = (tmp.path().join("data"), tmp.path().join("fb"));
    fs::create_dir_all(&fb_dir).unwrap();
    let (port, token) = (free_port(), random_token());
    let log = data_dir.join("taskkeeper.log");

    let mut app = RunningApp::start(&data_dir, &fb_dir, port, &token, tmp.path());
    let owner = Owner::new(port, &token);
    app.wait("the daemon's /healthz", Duration::from_secs(60), || {
        owner.healthy()
    });
    // The page's first report proves it loaded and asked the daemon; then the count must change.
    app.wait(
        "the page to render the empty list",
        Duration::from_secs(60),
        || file_contains(&log, "ui rendered 0 open tasks"),
    );

    let (status, body) = owner.post(
        "/api/desks",
        json!({ "name": "web", "dir": "/tmp", "agent": "claude-code" }),
    );
    assert_eq!(status, 201, "creating the desk: {body}");
    let (status, body) = owner.post(
        "/api/tasks",
        json!({ "desk": "web", "text": "Add a --json flag" }),
    );
    assert_eq!(status, 201, "creating the task: {body}");

    app.wait(
        "the page to render the new task",
        Duration::from_secs(30),
        || file_contains(&log, "ui rendered 1 open tasks"),
    );

    // Give the compositor a moment to paint what the DOM holds, then keep the picture.
    std::thread::sleep(Duration::from_millis(500));
    let screen = Screen::read_xwd(&fb_dir.join("Xvfb_screen0")).unwrap();
    let window = screen.crop(420, 600);
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/artifacts");
    fs::create_dir_all(&artifacts).unwrap();
    fs::write(artifacts.join("app-window.png"), window.to_png()).unwrap();
    // A blank or unpainted window is one or two colours; text and badges give many.
    assert!(
        window.distinct_colours() > 20,
        "the window looks empty ({} colours)",
        window.distinct_colours()
    );

    let status = app.stop();
    assert!(
        status.success(),
        "the app exited with {status}:\n{}",
        app.diagnostics()
    );
    assert!(
        file_contains(&log, "daemon stopped"),
        "no graceful shutdown in the log"
    );
}

/// The app and everything it started (dbus-daemon, Xvfb, WebKit's processes), in one process
/// group so that all of it can be found and nothing outlives the test.
struct RunningApp {
    child: Child,
    group: i32,
    stderr_path: PathBuf,
    log_path: PathBuf,
}

impl RunningApp {
    fn start(data_dir: &Path, fb_dir: &Path, port: u16, token: &str, scratch: &Path) -> RunningApp {
        let stderr_path = scratch.join("app.stderr");
        let bus_config = private_bus_config(scratch);
        let child = Command::new("dbus-run-session")
            .arg(format!("--config-file={}", bus_config.display()))
            .args(["--", "xvfb-run", "-a", "-s"])
            .arg(format!("-screen 0 1024x768x24 -fbdir {}", fb_dir.display()))
            .arg(APP)
            .env("TASKKEEPER_DATA_DIR", data_dir)
            .env("TASKKEEPER_PORT", port.to_string())
            .env("TASKKEEPER_TOKEN", token)
            .env("NO_AT_BRIDGE", "1")
            .env_remove("DISPLAY")
            .env_remove("WAYLAND_DISPLAY")
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr_path).unwrap())
            .process_group(0)
            .spawn()
            .expect("starting dbus-run-session (packages dbus and xvfb)");
        let group = i32::try_from(child.id()).unwrap();
        RunningApp {
            child,
            group,
            stderr_path,
            log_path: data_dir.join("taskkeeper.log"),
        }
    }

    /// What to print when something goes wrong: the app's stderr and its log.
    fn diagnostics(&self) -> String {
        let stderr = fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let log = fs::read_to_string(&self.log_path).unwrap_or_default();
        format!("{stderr}\n--- {} ---\n{log}", self.log_path.display())
    }

    /// Waits for `check`, failing early (with the app's stderr) if the app died.
    fn wait(&mut self, what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
        let result = wait_for(what, timeout, || {
            if check() {
                return Some(Ok(()));
            }
            self.child.try_wait().unwrap().map(|status| {
                Err(format!(
                    "the app exited ({status}) while waiting for {what}"
                ))
            })
        });
        match result {
            Ok(Ok(())) => {}
            Ok(Err(why)) | Err(why) => {
                panic!("{why}:\n{}", self.diagnostics())
            }
        }
    }

    /// Quits the app with SIGTERM, as a service manager would, and waits for the whole group.
    fn stop(&mut self) -> ExitStatus {
        let app = processes_in_group(self.group)
            .into_iter()
            .find(|&pid| is_app(pid))
            .unwrap_or_else(|| panic!("the app's process is gone:\n{}", self.diagnostics()));
        signal(&["-TERM", &app.to_string()]);
        // xvfb-run and dbus-run-session pass the app's exit status through.
        let status = wait_for("the app to quit", Duration::from_secs(30), || {
            self.child.try_wait().unwrap()
        })
        .unwrap_or_else(|why| panic!("{why}:\n{}", self.diagnostics()));
        let left = wait_for(
            "the process group to empty",
            Duration::from_secs(10),
            || {
                let left = processes_in_group(self.group);
                left.is_empty().then_some(())
            },
        );
        assert!(
            left.is_ok(),
            "processes left behind: {:?}",
            describe(&processes_in_group(self.group))
        );
        status
    }
}

impl Drop for RunningApp {
    fn drop(&mut self) {
        // Whatever happened, leave nothing running.
        if !processes_in_group(self.group).is_empty() {
            signal(&["-KILL", "--", &format!("-{}", self.group)]);
        }
        let _ = self.child.wait();
    }
}

/// A session bus that activates nothing: otherwise GTK and WebKit start the desktop portals
/// and the accessibility bus, which are slow, noisy, and spawn helpers (a FUSE mount for the
/// document portal) outside the process group.
fn private_bus_config(scratch: &Path) -> PathBuf {
    let services = scratch.join("dbus-services");
    fs::create_dir_all(&services).unwrap();
    let config = scratch.join("session-bus.xml");
    let xml = format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir={tmp}</listen>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"#,
        tmp = scratch.display(),
        services = services.display(),
    );
    fs::write(&config, xml).unwrap();
    config
}

fn signal(args: &[&str]) {
    let _ = Command::new("kill")
        .args(args)
        .stderr(Stdio::null())
        .status();
}

/// Pids whose process group is `group`, from /proc.
fn processes_in_group(group: i32) -> Vec<i32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            // Fields after the command name, which is in parentheses and may hold spaces:
            // state, ppid, pgrp, ...
            let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((_, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // A zombie has exited already; it is only waiting for its parent to reap it.
            fields.first() != Some(&"Z")
                && fields.get(2).and_then(|g| g.parse().ok()) == Some(group)
        })
        .collect()
}

fn is_app(pid: i32) -> bool {
    let exe = fs::read_link(format!("/proc/{pid}/exe")).ok();
    exe.is_some() && exe == fs::canonicalize(APP).ok()
}

fn describe(pids: &[i32]) -> Vec<String> {
    pids.iter()
        .map(|pid| {
            format!(
                "{pid} {}",
                fs::read_to_string(format!("/proc/{pid}/cmdline"))
                    .unwrap_or_default()
                    .replace('\0', " ")
            )
        })
        .collect()
}
