//! Taskkeeper's tray app. It runs the same daemon as `taskkeeper serve`, in-process, and adds
//! what only a desktop app can: a tray icon whose state and menu show the open and stalled
//! counts, and a window (the web UI in `ui/`) that reaches the daemon's owner service through
//! Tauri commands instead of HTTP.
//!
//! Only this crate knows Tauri; the daemon (`taskkeeper-server`) and the domain
//! (`taskkeeper-core`) don't (docs/tauri.md §2). The binary is `main.rs`, which calls [`main`].

pub mod commands;
pub mod tray;

use std::process::ExitCode;

use anyhow::Context as _;
use taskkeeper_server::{Daemon, DaemonConfig, OwnerService, TaskQuery};
use tauri::{Manager as _, RunEvent, Runtime, WindowEvent};

use crate::tray::{Counts, Tray};

/// The label of the one window, as in `tauri.conf.json` and the `main` capability.
pub const MAIN_WINDOW: &str = "main";

/// How often the tray re-reads the counts. A later issue replaces this poll with the owner
/// event stream; until then a few seconds of lag in the icon is the price.

/// Runs the app until Quit (or SIGTERM/SIGINT). A daemon that can't start (port in use,
/// database locked by another instance) is reported on stderr and in the log, and the process
/// exits non-zero before any window opens.
pub fn main() -> ExitCode {
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
    // Logged while the guard still lives, so the line reaches the file; the log's stderr
    // layer shows it to whoever started the app.
    run(config).unwrap_or_else(|error| {
        tracing::error!("taskkeeper-app failed: {error:#}");
        ExitCode::FAILURE
    })
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

fn run(config: DaemonConfig) -> anyhow::Result<ExitCode> {
    tracing::info!(data_dir = %config.data_dir.display(), port = config.port, "taskkeeper-app starting");
    check_display()?;

    // The daemon runs on Tauri's own tokio runtime, started before the GUI so that a failure
    // ends the process with a message instead of leaving a blank window behind.
    let daemon =
        tauri::async_runtime::block_on(Daemon::start(config)).context("starting the daemon")?;
    tracing::info!(addr = %daemon.addr(), "daemon listening");

    let builder = with_commands(tauri::Builder::default(), daemon.owner())
        .on_window_event(|window, event| {
            // The app lives in the tray: closing the window only hides it; Quit is in the menu.
            if let WindowEvent::CloseRequested { api, .. } = event
                && window.label() == MAIN_WINDOW
            {
                api.prevent_close();
                if let Err(error) = window.hide() {
                    tracing::warn!(%error, "could not hide the main window");
                }
            }
        })
        .setup(|app| {
            let tray = Tray::build(app.handle())?;
            let owner = app.state::<OwnerService>().inner().clone();
            tauri::async_runtime::spawn(keep_tray_current(tray, owner));
            #[cfg(unix)]
            tauri::async_runtime::spawn(exit_on_signal(app.handle().clone()));
            Ok(())
        });
    let app = match builder.build(tauri::generate_context!()) {
        Ok(app) => app,
        Err(error) => {
            tauri::async_runtime::block_on(daemon.shutdown());
            return Err(anyhow::Error::new(error).context("starting the window system"));
        }
    };

    let code = app.run_return(|_app, event| {
        if let RunEvent::ExitRequested { code, .. } = event {
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

/// Adds the owner service and the window's commands to a builder. Shared by the app and its
/// tests on the mock runtime, so both exercise the same wiring.
pub fn with_commands<R: Runtime>(
    builder: tauri::Builder<R>,
    owner: OwnerService,
) -> tauri::Builder<R> {
    builder.manage(owner).invoke_handler(commands::handler())
}

/// Recounts after every task change the daemon publishes (and once at start) and updates the
/// tray when the counts differ: no work while nothing changes. Errors are logged once per
/// change of message, so a broken store doesn't flood the log.
async fn keep_tray_current<R: Runtime>(tray: Tray<R>, owner: OwnerService) {
    let mut shown: Option<Counts> = None;
    let mut last_error: Option<String> = None;
    let mut changes = owner.changes();
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            match changes.recv().await {
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
        let tasks = match owner.list_tasks(TaskQuery::open()).await {
            Ok(tasks) => tasks,
            Err(error) => {
                let message = error.to_string();
                if last_error.as_ref() != Some(&message) {
                    tracing::warn!(%message, "could not count open tasks for the tray");
                    last_error = Some(message);
                }
                continue;
            }
        };
        last_error = None;
        let counts = Counts {
            open: tasks.len(),
            stalled: tasks.iter().filter(|t| t.stalled_at.is_some()).count(),
        };
        if shown == Some(counts) {
            continue;
        }
        match tray.show(counts) {
            Ok(()) => {
                tracing::debug!(open = counts.open, stalled = counts.stalled, "tray updated");
                shown = Some(counts);
            }
            Err(error) => tracing::warn!(%error, "could not update the tray"),
        }
    }
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
