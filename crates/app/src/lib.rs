//! Taskkeeper's tray app. It runs the same daemon as `taskkeeper serve`, in-process, and adds
//! what only a desktop app can: a tray icon whose state and menu show the open and stalled
//! counts, a window (the web UI in `ui/`) that reaches the daemon's owner service through
//! Tauri commands and events instead of HTTP, and desktop notifications when a task stalls.
//!
//! * [`commands`] — the window's commands, one per owner action.
//! * [`events`] — every event the window hears (`taskkeeper://task`, `…/notice`, `…/navigate`, `…/settings`).
//! * [`feeds`] — the loops that forward the daemon's feeds to the window as those events.
//! * [`tray`] — the icon's three states, the menu, and the loop that keeps them current.
//! * [`window`] — showing the window near the tray, hiding it on close, its webview made on
//!   show and dropped a little after hide; every call of its page answered (`window::answer`).
//! * [`notifications`] — the daemon's notifier: one thread, never blocking the watchdog; the
//!   notifications' actions.
//! * [`shortcut`] — the global shortcut (`app.shortcut`) that shows and hides the window.
//! * `webkit` (Linux) — ending WebKit's network process once no webview is left.
//! * [`window::process`] (Linux) — the window in a process of its own, which exits with the
//!   webview, so WebKit's OpenGL driver never stays in the app.
//! * `light` (Linux) — the environment GTK and WebKit are started with, so that the app
//!   hidden in the tray does not carry an OpenGL driver.
//!
//! Start-up order matters: the single-instance plugin runs first (inside `Builder::build`), so
//! a second launch hands over before it opens the database or the port; then the daemon starts;
//! then the event loop creates the (hidden) window and the tray.
//!
//! Only this crate knows Tauri; the daemon (`taskkeeper-server`) and the domain
//! (`taskkeeper-core`) don't (docs/tauri.md §2). The binary is `main.rs`, which calls [`main`].

pub mod commands;
pub mod events;
pub mod feeds;
#[cfg(all(unix, not(target_os = "macos")))]
mod light;
pub mod notifications;
pub mod shortcut;
pub mod tray;
#[cfg(all(unix, not(target_os = "macos")))]
pub mod webkit;
pub mod window;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use taskkeeper_server::{Daemon, DaemonConfig, OwnerService};
use tauri::{AppHandle, Manager as _, RunEvent, Runtime, Window, WindowEvent};
use tauri_plugin_autostart::ManagerExt as _;

use crate::commands::{Autostart, AutostartState};
use crate::events::Navigate;
use crate::notifications::{Click, DesktopNotifier};
use crate::tray::Tray;

/// What the command line can ask for.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, clap::Parser)]
#[command(
    name = "taskkeeper-app",
    version,
    about = "Taskkeeper's tray app: the daemon with a tray icon, a window and desktop notifications",
    after_help = "The daemon without a window, the hooks agents run and every other verb are \
                  the `taskkeeper` command, installed beside this one: `taskkeeper --help`.\n\
                  Both use the same data directory (TASKKEEPER_DATA_DIR, else the OS's); only \
                  one of them runs on it at a time."
)]
pub struct Flags {
    /// Show the window at start instead of starting hidden in the tray.
    #[arg(long)]
    pub show: bool,
}

/// What the command line says to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// Run, with these flags; `ignored` are flags this version does not know.
    Run { flags: Flags, ignored: Vec<String> },
    /// Print `text` (to stderr when `error`) and exit with `code`: `--help`, `--version`, or
    /// words the app does not take.
    Exit { text: String, error: bool, code: u8 },
}

impl Flags {
    /// Reads the command line (without the program name). Unknown flags are ignored (and
    /// logged by the caller), so an autostart entry written by a newer version never stops
    /// an older one from starting; a word that is no flag (`taskkeeper-app connect
    /// claude-code`) is refused and points at the `taskkeeper` command.
    pub fn parse(args: impl IntoIterator<Item = String>) -> Start {
        use clap::Parser as _;
        use clap::error::ErrorKind;
        let args: Vec<String> = args.into_iter().collect();
        if let Some(word) = args.iter().find(|a| !a.starts_with('-')) {
            return Start::Exit {
                text: format!(
                    "taskkeeper-app: it takes no commands ({word:?}); the verbs are the \
                     `taskkeeper` command's: `taskkeeper {}` (see `taskkeeper --help`)\n",
                    args.join(" ")
                ),
                error: true,
                code: 2,
            };
        }
        let (known, ignored): (Vec<String>, Vec<String>) = args
            .into_iter()
            .partition(|a| ["--show", "--help", "-h", "--version", "-V"].contains(&a.as_str()));
        match Flags::try_parse_from(std::iter::once("taskkeeper-app".to_owned()).chain(known)) {
            Ok(flags) => Start::Run { flags, ignored },
            Err(e) => Start::Exit {
                text: e.render().to_string(),
                error: !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion),
                code: u8::try_from(e.exit_code()).unwrap_or(2),
            },
        }
    }
}

/// Runs the app until Quit (or SIGTERM/SIGINT). A daemon that can't start (port in use,
/// database locked by another instance) is reported on stderr and in the log, and the process
/// exits non-zero before any window opens. A second launch (where single instance is enforced:
/// a session bus on Linux) shows the first one's window and exits 0.
pub fn main() -> ExitCode {
    let launched = Instant::now();
    #[cfg(all(unix, not(target_os = "macos")))]
    if let Some(error) = light::restart_lighter() {
        eprintln!(
            "taskkeeper-app: could not restart with a lighter GTK and WebKit ({error}); going on as it is"
        );
    }
    // The window process (window/process.rs) opens no data directory, log or port.
    if std::env::var_os(window::process::CHILD).is_some() {
        return window::process::main();
    }
    // Before anything opens the data directory: `--version` changes nothing.
    let (flags, ignored) = match Flags::parse(std::env::args().skip(1)) {
        Start::Run { flags, ignored } => (flags, ignored),
        Start::Exit { text, error, code } => {
            if error {
                eprint!("{text}");
            } else {
                print!("{text}");
            }
            return ExitCode::from(code);
        }
    };
    let config = match DaemonConfig::from_env() {
        Ok(config) => config,
        Err(error) => {
            return fail_before_logging(
                &anyhow::Error::new(error).context("reading the configuration"),
            );
        }
    };
    let _log_guard = match taskkeeper_server::logging::init(&config.data_dir) {
        Ok(guard) => guard,
        Err(error) => {
            let context = format!("opening the log in {}", config.data_dir.display());
            return fail_before_logging(&anyhow::Error::new(error).context(context));
        }
    };
    log_panics();
    for flag in ignored {
        tracing::warn!("ignoring an unknown argument {flag:?}");
    }
    // Logged while the guard still lives, so the line reaches the file; the log's stderr
    // layer shows it to whoever started the app.
    run(config, flags, launched).unwrap_or_else(|error| {
        tracing::error!("taskkeeper-app failed: {error:#}");
        ExitCode::FAILURE
    })
}

/// The configuration and the embedded UI, for the app and its window process alike.
pub(crate) fn context() -> tauri::Context {
    tauri::generate_context!()
}

fn fail_before_logging(error: &anyhow::Error) -> ExitCode {
    eprintln!("taskkeeper-app: {error:#}");
    ExitCode::FAILURE
}

/// A GUI app's stderr is usually unseen, so panics (GTK's, WebKit's, ours) go to the log too.
fn log_panics() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        tracing::error!("panic: {info}");
        default_hook(info);
    }));
}

fn run(mut config: DaemonConfig, flags: Flags, launched: Instant) -> anyhow::Result<ExitCode> {
    tracing::info!(data_dir = %config.data_dir.display(), port = config.port, ?flags, "taskkeeper-app starting");
    check_display()?;

    // The daemon tells the notifier; the notifier's thread shows desktop notifications.
    let notifier = DesktopNotifier::start().context("starting the notifier thread")?;
    config.notifier = Some(notifier.clone());
    let notices = notifier.subscribe();

    let builder = tauri::Builder::default()
        // First (plugins run in the order added): a second launch forwards to the running
        // instance and exits here, before it touches the database or the port.
        .plugin(tauri_plugin_single_instance::init(|app, _argv, _cwd| {
            tracing::info!("another launch: showing this instance's window");
            window::show(app);
        }))
        .plugin(tauri_plugin_autostart::Builder::new().build())
        .plugin(tauri_plugin_positioner::init())
        .plugin(shortcut::plugin())
        .manage(window::Lifecycle::default())
        .invoke_handler(window::handler())
        .on_window_event(hide_on_close)
        .setup(move |app| {
            #[cfg(target_os = "macos")]
            app.set_activation_policy(tauri::ActivationPolicy::Accessory);
            let handle = app.handle().clone();
            let owner = app.state::<OwnerService>().inner().clone();
            let tray = Tray::build(&handle)?;
            tracing::info!(
                startup_ms = u64::try_from(launched.elapsed().as_millis()).unwrap_or(u64::MAX),
                "tray ready"
            );
            tauri::async_runtime::spawn(tray::follow(tray, owner.clone()));
            tauri::async_runtime::spawn(feeds::forward_task_changes(
                handle.clone(),
                owner,
                feeds::Forwarded::default(),
            ));
            tauri::async_runtime::spawn(feeds::forward_notices(handle.clone(), notices));
            #[cfg(unix)]
            tauri::async_runtime::spawn(exit_on_signal(handle.clone()));
            // The window exists only while it is wanted (window.rs).
            if flags.show {
                window::show(&handle);
            }
            Ok(())
        });
    // Building runs the plugins: past this line this is the only instance.
    let app = builder
        .build(context())
        .context("starting the window system")?;

    // The daemon runs on Tauri's own tokio runtime, started before the event loop so that a
    // failure ends the process with a message instead of leaving a blank window behind.
    let daemon = match tauri::async_runtime::block_on(Daemon::start(config)) {
        Ok(daemon) => daemon,
        // `taskkeeper serve` and the service share the data directory; say which to look at.
        Err(
            e @ taskkeeper_server::DaemonError::Store(taskkeeper_core::StoreError::Locked {
                ..
            }),
        ) => {
            anyhow::bail!(
                "starting the daemon: {e} (`taskkeeper serve` in a terminal, or the service: \
                 `taskkeeper service status`, `taskkeeper service uninstall`)"
            )
        }
        Err(e) => return Err(anyhow::Error::new(e).context("starting the daemon")),
    };
    tracing::info!(addr = %daemon.addr(), "daemon listening");
    let owner = daemon.owner();
    app.manage(owner.clone());
    app.manage(AutostartState(Box::new(PluginAutostart(
        app.handle().clone(),
    ))));
    let handle = app.handle().clone();
    notifier.attach(owner.clone(), move |click| {
        open_from_notification(&handle, click)
    });
    tauri::async_runtime::spawn(shortcut::follow(app.handle().clone(), owner));

    let code = app.run_return(|_app, event| {
        if let RunEvent::ExitRequested { code, api, .. } = event {
            // No code: the last window went (a hidden window's webview is dropped); the app
            // lives in the tray. Quit and signals exit with a code.
            if code.is_none() {
                api.prevent_exit();
                return;
            }
            tracing::info!(?code, "exit requested");
        }
    });

    tracing::info!("stopping the daemon");
    tauri::async_runtime::block_on(daemon.shutdown());
    tracing::info!(code, "taskkeeper-app stopped");
    Ok(if code == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The app lives in the tray: closing the window only hides it; Quit is in the menu.
fn hide_on_close<R: Runtime>(window: &Window<R>, event: &WindowEvent) {
    if let WindowEvent::CloseRequested { api, .. } = event
        && window.label() == window::MAIN
    {
        api.prevent_close();
        window::hide(window.app_handle());
    }
}

/// A click on a desktop notification: the window, on the task when there is one.
fn open_from_notification<R: Runtime>(app: &AppHandle<R>, click: &Click) {
    window::show(app);
    match click {
        Click::Task(id) => window::navigate(app, Navigate::task(id.clone())),
        Click::Desks => window::navigate(app, Navigate::DESKS),
        Click::Digest => window::navigate(app, Navigate::DIGEST),
        Click::Window => {}
    }
}

/// Starting at login through `tauri-plugin-autostart` (an XDG autostart entry on Linux, a
/// LaunchAgent on macOS, the Run key on Windows).
pub struct PluginAutostart<R: Runtime>(pub AppHandle<R>);

impl<R: Runtime> Autostart for PluginAutostart<R> {
    fn is_enabled(&self) -> Result<bool, String> {
        self.0.autolaunch().is_enabled().map_err(|e| e.to_string())
    }

    fn set_enabled(&self, enabled: bool) -> Result<(), String> {
        let launch = self.0.autolaunch();
        let result = if enabled {
            launch.enable()
        } else {
            launch.disable()
        };
        result.map_err(|e| e.to_string())
    }
}

/// GTK panics deep inside Tauri when there is no display; say so plainly, before the daemon
/// starts. (A display that is set but unreachable still ends in that panic, which is logged.)
fn check_display() -> anyhow::Result<()> {
    #[cfg(all(unix, not(target_os = "macos")))]
    {
        let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
        if !set("DISPLAY") && !set("WAYLAND_DISPLAY") {
            anyhow::bail!(
                "no display (neither DISPLAY nor WAYLAND_DISPLAY is set); run it in a desktop session, \
                 under xvfb-run, or use `taskkeeper serve` for the daemon without a window"
            );
        }
    }
    Ok(())
}

/// Adds the window's commands and the state they use (the owner service)
/// to a builder. The tests on the mock runtime use it, with their own [`AutostartState`].
pub fn with_commands<R: Runtime>(
    builder: tauri::Builder<R>,
    owner: OwnerService,
) -> tauri::Builder<R> {
    builder.manage(owner).invoke_handler(window::handler())
}

/// SIGTERM (a service manager, the end-to-end test) and SIGINT (Ctrl-C in a terminal) quit the
/// way the menu's Quit does, so the daemon shuts down gracefully and the log is flushed.
#[cfg(unix)]
async fn exit_on_signal<R: Runtime>(app: tauri::AppHandle<R>) {
    use tokio::signal::unix::{SignalKind, signal};
    let (mut term, mut int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => (term, int),
        (Err(error), _) | (_, Err(error)) => {
            tracing::warn!(%error, "cannot listen for SIGTERM/SIGINT; they will end the app abruptly");
            return;
        }
    };
    let name = tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    };
    tracing::info!("{name} received, quitting");
    app.exit(0);
}
