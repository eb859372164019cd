//! A private desktop for the real app: an Xvfb display and a D-Bus session bus of its own,
//! and the built `taskkeeper-app` (or anything else) started on them with its own data
//! directory, port and token. Every process is in a process group of its own, so everything
//! it spawned (WebKit's helpers) can be found, and nothing outlives the test.
//!
//! The bus activates nothing (its only service directory is empty): otherwise GTK and WebKit
//! start the desktop portals and the accessibility bus, which are slow, noisy, and spawn helpers
//! (a FUSE mount for the document portal) outside the process group; and no real notification
//! daemon can answer in place of the test's recording one.
//!
//! Needs the `xvfb` and `dbus` packages (and the app's run-time libraries).

use std::fs;
use std::io::{BufRead as _, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

use crate::support::wait_for;

pub const APP: &str = env!("CARGO_BIN_EXE_taskkeeper-app");
pub const SCREEN: (usize, usize) = (1024, 768);

/// A child process in its own process group, killed with its group when dropped.
pub struct Group {
    pub child: Child,
    pub pgid: i32,
    pub name: &'static str,
}

impl Group {
    pub fn spawn(name: &'static str, command: &mut Command) -> Group {
        let child = command
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let pgid = i32::try_from(child.id()).unwrap();
        Group { child, pgid, name }
    }

    pub fn pid(&self) -> i32 {
        self.pgid
    }

    /// Pids still in the group (zombies excluded).
    pub fn members(&self) -> Vec<i32> {
        processes_in_group(self.pgid)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.members().is_empty() {
            signal(&["-KILL", "--", &format!("-{}", self.pgid)]);
        }
        let _ = self.child.wait();
    }
}

/// An X display and a session bus, private to one test.
pub struct Desktop {
    pub display: String,
    pub bus: String,
    /// Xvfb keeps the screen here as the XWD file `Xvfb_screen0`.
    pub fb_dir: PathBuf,
    // Dropped in reverse order of start: the bus, then the display.
    _bus_daemon: Group,
    _xvfb: Group,
}

impl Desktop {
    pub fn start(scratch: &Path) -> Desktop {
        let fb_dir = scratch.join("fb");
        fs::create_dir_all(&fb_dir).unwrap();
        // -displayfd: Xvfb picks a free display and writes its number once it accepts clients.
        let mut xvfb = Group::spawn(
            "Xvfb (package xvfb)",
            Command::new("Xvfb")
                .args(["-displayfd", "1", "-nolisten", "tcp", "-screen", "0"])
                .arg(format!("{}x{}x24", SCREEN.0, SCREEN.1))
                .arg("-fbdir")
                .arg(&fb_dir)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        );
        let display = first_line(&mut xvfb, "Xvfb's display number");
        let mut bus_daemon = Group::spawn(
            "dbus-daemon (package dbus)",
            Command::new("dbus-daemon")
                .arg(format!(
                    "--config-file={}",
                    private_bus_config(scratch).display()
                ))
                .args(["--nofork", "--print-address=1"])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
        );
        let bus = first_line(&mut bus_daemon, "the bus address");
        Desktop {
            display: format!(":{display}"),
            bus,
            fb_dir,
            _bus_daemon: bus_daemon,
            _xvfb: xvfb,
        }
    }

    /// Points a command at this display and bus, and nowhere else.
    pub fn env(&self, command: &mut Command) {
        command
            .env("DISPLAY", &self.display)
            .env("DBUS_SESSION_BUS_ADDRESS", &self.bus)
            .env("GDK_BACKEND", "x11")
            .env("NO_AT_BRIDGE", "1")
            .env_remove("WAYLAND_DISPLAY");
    }
}

fn first_line(group: &mut Group, what: &str) -> String {
    let stdout = group.child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let line = line.trim().to_owned();
    assert!(!line.is_empty(), "{} printed no {what}", group.name);
    line
}

/// A session bus that activates nothing and lets everyone own any name.
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

/// Where one app instance keeps its things.
pub struct AppEnv {
    pub data_dir: PathBuf,
    /// `HOME`: autostart (auto-launch 0.6) writes `~/.config/autostart` whatever
    /// `XDG_CONFIG_HOME` says, and WebKit keeps its caches under it.
    pub home: PathBuf,
    pub config_home: PathBuf,
    pub port: u16,
    pub token: String,
    /// More environment for the app.
    pub extra: Vec<(&'static str, String)>,
}

impl AppEnv {
    pub fn new(scratch: &Path) -> AppEnv {
        AppEnv {
            data_dir: scratch.join("data"),
            home: scratch.join("home"),
            config_home: scratch.join("home/.config"),
            port: crate::support::free_port(),
            token: crate::support::random_token(),
            extra: Vec::new(),
        }
    }

    pub fn log(&self) -> PathBuf {
        self.data_dir.join("taskkeeper.log")
    }

    /// The app's environment: its daemon's settings, and a home of its own (where autostart
    /// writes its entry), so a test never touches the real user's login items.
    pub fn apply(&self, command: &mut Command) {
        fs::create_dir_all(&self.config_home).unwrap();
        command
            .env("HOME", &self.home)
            .env("TASKKEEPER_DATA_DIR", &self.data_dir)
            .env("TASKKEEPER_PORT", self.port.to_string())
            .env("TASKKEEPER_TOKEN", &self.token)
            .env("XDG_CONFIG_HOME", &self.config_home)
            .envs(self.extra.iter().map(|(k, v)| (k, v)));
    }
}

/// The real app on a private desktop.
pub struct RunningApp {
    group: Group,
    stderr_path: PathBuf,
    pub log_path: PathBuf,
}

impl RunningApp {
    pub fn start(desktop: &Desktop, env: &AppEnv, scratch: &Path, args: &[&str]) -> RunningApp {
        RunningApp::start_binary(Path::new(APP), desktop, env, scratch, args)
    }

    /// The same, with another build of the app (a benchmark's, `BENCH_APP`).
    pub fn start_binary(
        binary: &Path,
        desktop: &Desktop,
        env: &AppEnv,
        scratch: &Path,
        args: &[&str],
    ) -> RunningApp {
        let stderr_path = scratch.join("app.stderr");
        let mut command = Command::new(binary);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr_path).unwrap());
        desktop.env(&mut command);
        env.apply(&mut command);
        RunningApp {
            group: Group::spawn("taskkeeper-app", &mut command),
            stderr_path,
            log_path: env.log(),
        }
    }

    /// The app's process group: it and everything it started (WebKit's processes).
    pub fn pgid(&self) -> i32 {
        self.group.pgid
    }

    /// What to print when something goes wrong: the app's stderr and its log.
    pub fn diagnostics(&self) -> String {
        let stderr = fs::read_to_string(&self.stderr_path).unwrap_or_default();
        let log = fs::read_to_string(&self.log_path).unwrap_or_default();
        format!("{stderr}\n--- {} ---\n{log}", self.log_path.display())
    }

    pub fn log_contains(&self, needle: &str) -> bool {
        crate::support::file_contains(&self.log_path, needle)
    }

    /// Waits for `check`, failing early (with the app's stderr and log) if the app died.
    pub fn wait(&mut self, what: &str, timeout: Duration, mut check: impl FnMut() -> bool) {
        let child = &mut self.group.child;
        let result = wait_for(what, timeout, || {
            if check() {
                return Some(Ok(()));
            }
            child.try_wait().unwrap().map(|status| {
                Err(format!(
                    "the app exited ({status}) while waiting for {what}"
                ))
            })
        });
        match result {
            Ok(Ok(())) => {}
            Ok(Err(why)) | Err(why) => panic!("{why}:\n{}", self.diagnostics()),
        }
    }

    /// Waits until the log has `needle`.
    pub fn wait_for_log(&mut self, needle: &str, timeout: Duration) {
        let path = self.log_path.clone();
        self.wait(&format!("{needle:?} in the log"), timeout, || {
            crate::support::file_contains(&path, needle)
        });
    }

    /// Quits the app with SIGTERM, as a service manager would, and waits for it and every
    /// process it started.
    pub fn stop(&mut self) -> ExitStatus {
        signal(&["-TERM", &self.group.pid().to_string()]);
        let child = &mut self.group.child;
        let status = wait_for("the app to quit", Duration::from_secs(30), || {
            child.try_wait().unwrap()
        })
        .unwrap_or_else(|why| panic!("{why}:\n{}", self.diagnostics()));
        let left = wait_for(
            "the process group to empty",
            Duration::from_secs(10),
            || self.group.members().is_empty().then_some(()),
        );
        assert!(
            left.is_ok(),
            "processes left behind: {:?}",
            describe(&self.group.members())
        );
        status
    }
}

pub fn signal(args: &[&str]) {
    let _ = Command::new("kill")
        .args(args)
        .stderr(Stdio::null())
        .status();
}

/// Pids whose process group is `group`, from /proc.
pub fn processes_in_group(group: i32) -> Vec<i32> {
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
