//! The window in a process of its own (Linux): the app starts its own program again as the
//! window process, which holds the webview and exits when the webview would be destroyed.
//!
//! Why: WebKit opens its own EGL display in the process that holds a webview, which maps
//! Mesa's driver and LLVM (43 MiB) into it for good (a library cannot be unloaded, and hiding
//! EGL from WebKit makes its web process abort). Held by a window process, they go when it
//! exits, and the app in the tray never loads them (issue 13: ≤ 80 MB hidden).
//!
//! How the two talk: one JSON object per line, the app's orders ([`Order`]) on the window
//! process's stdin and its reports ([`Report`]) on its stdout. The page in the window process
//! calls the app's commands as ever (the Tauri transport, `ui/src/data/tauri.ts`); the window
//! process hands each call over the pipe, the app answers it with [`window::answer`], and the
//! answer goes back the same way. So the window process needs no credentials: it has none,
//! and the owner token, the port and the owner service stay in the app. Only the app can
//! write to the pipe (it made it); a program started with the marker by anyone else holds
//! nothing but a pipe to whoever started it. Events (task changes, notices, navigation) go to
//! it as orders too ([`crate::window::emit`]).
//!
//! A window process starts with a show, or ahead of one when the tray's menu opens
//! ([`crate::window::prepare`]: its start, its first webview and the page's load are nearly
//! all of a cold open, and the menu opens a moment before its Open is chosen). Started ahead,
//! it makes its webview hidden and loads the page at once ([`Order::Prepare`]), so a show
//! only maps a window whose page is there; the page counts its first frame from the moment
//! it is on screen (`ui/src/main.tsx`), never a frame drawn while hidden.
//! The window process exits when told ([`Order::Quit`], [`crate::window::KEEP_HIDDEN`] after
//! a hide), when the app goes (its stdin ends), or when it fails; the app notices by its
//! stdout's end and starts a new one for the next show. `TASKKEEPER_WINDOW_PROCESS=0` keeps
//! the window in the app's own process (as on macOS and Windows, where WebKit's driver is not
//! the app's to carry), and so does a window process that cannot be started.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, mpsc};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tauri::ipc::{Invoke, InvokeResolver};
use tauri::{AppHandle, Emitter as _, Manager as _, RunEvent, Runtime, WindowEvent, Wry};

use crate::commands;
use crate::window::{self, Lifecycle, Shown};

/// Set (to `1`) in the window process's environment: the program runs as the window process.
pub const CHILD: &str = "TASKKEEPER_APP_WINDOW";
/// `0` keeps the window in the app's own process.
pub const SWITCH: &str = "TASKKEEPER_WINDOW_PROCESS";

/// What the app tells its window process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "order", rename_all = "snake_case")]
pub enum Order {
    /// Show the window (making its webview the first time), near the tray, focused.
    Show,
    /// Make the webview hidden and load its page, ahead of a show; answered by
    /// [`Report::Prepared`].
    Prepare,
    /// Hide it; answered by [`Report::Hidden`].
    Hide,
    /// Send this event to the page.
    Emit { event: String, payload: Value },
    /// The answer to the page's call `call`: its value, or its `{kind, message}` error.
    Answer { call: u64, ok: bool, value: Value },
    /// Exit (the webview and WebKit's processes go with it).
    Quit,
}

/// What the window process tells the app.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "report", rename_all = "snake_case")]
pub enum Report {
    /// The window process has started and its event loop is made (before any webview).
    Up,
    /// The window is on screen (or could not be shown: [`Shown::error`]).
    Shown(Shown),
    /// The webview is made, hidden, and its page loads (or it could not be made).
    Prepared(Shown),
    /// The window is hidden (asked to, or its close button).
    Hidden,
    /// The page calls a command; answered by [`Order::Answer`] with the same `call`.
    Call {
        call: u64,
        command: String,
        args: Value,
    },
}

/// One line of the pipe: a message as JSON and a newline.
pub fn line<T: Serialize>(message: &T) -> String {
    let mut text = serde_json::to_string(message).unwrap_or_default();
    text.push('\n');
    text
}

/// A window process that runs, as the app sees it.
struct Running {
    /// Which start this is, so a report of an older process that is going changes nothing.
    serial: u64,
    orders: mpsc::Sender<Order>,
    /// Its window is on screen, as far as the app knows (shown, and no hide since).
    on_screen: bool,
}

/// What [`Slot::show`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Started {
    /// A new window process: its page loads.
    New,
    /// The one that ran; whether its window was on screen already.
    Running { on_screen: bool },
}

/// The app's window process, if it runs (part of [`Lifecycle`]).
#[derive(Debug, Default)]
pub struct Slot {
    used: AtomicBool,
    serial: AtomicU64,
    running: Mutex<Option<Running>>,
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running")
            .field("serial", &self.serial)
            .field("on_screen", &self.on_screen)
            .finish_non_exhaustive()
    }
}

impl Slot {
    /// Used on Linux unless [`SWITCH`] is `0`.
    pub fn from_env() -> Slot {
        let off = std::env::var(SWITCH).is_ok_and(|v| v.trim() == "0");
        let slot = Slot::default();
        slot.used.store(
            cfg!(all(unix, not(target_os = "macos"))) && !off,
            Ordering::SeqCst,
        );
        slot
    }

    /// Whether the window lives in a window process.
    pub fn in_use(&self) -> bool {
        self.used.load(Ordering::SeqCst)
    }

    /// From now on the window is made in this process.
    pub fn give_up(&self) {
        self.used.store(false, Ordering::SeqCst);
    }

    fn running(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Tells the window process to show its window, starting one if none runs.
    pub fn show<R: Runtime>(&self, app: &AppHandle<R>) -> std::io::Result<Started> {
        let mut running = self.running();
        if let Some(process) = running.as_mut()
            && process.orders.send(Order::Show).is_ok()
        {
            let on_screen = std::mem::replace(&mut process.on_screen, true);
            return Ok(Started::Running { on_screen });
        }
        let serial = self.serial.fetch_add(1, Ordering::SeqCst) + 1;
        let orders = start(app, serial)?;
        // Read once the window process is up; the pipe holds it until then.
        let _ = orders.send(Order::Show);
        *running = Some(Running {
            serial,
            orders,
            on_screen: true,
        });
        Ok(Started::New)
    }

    /// Starts a window process that makes its window hidden and loads its page, unless one
    /// runs; whether it did.
    pub fn prepare<R: Runtime>(&self, app: &AppHandle<R>) -> std::io::Result<bool> {
        let mut running = self.running();
        if running.is_some() {
            return Ok(false);
        }
        let serial = self.serial.fetch_add(1, Ordering::SeqCst) + 1;
        let orders = start(app, serial)?;
        // Read once the window process is up, like a show's.
        let _ = orders.send(Order::Prepare);
        *running = Some(Running {
            serial,
            orders,
            on_screen: false,
        });
        Ok(true)
    }

    pub fn hide(&self) {
        if let Some(process) = self.running().as_mut() {
            process.on_screen = false;
            let _ = process.orders.send(Order::Hide);
        }
    }

    pub fn on_screen(&self) -> bool {
        self.running().as_ref().is_some_and(|p| p.on_screen)
    }

    /// Sends an event to the page, if a window process runs.
    pub fn emit<S: Serialize>(&self, event: &str, payload: &S) {
        if let Some(process) = self.running().as_ref() {
            match serde_json::to_value(payload) {
                Ok(payload) => {
                    let _ = process.orders.send(Order::Emit {
                        event: event.to_owned(),
                        payload,
                    });
                }
                Err(error) => tracing::debug!(%error, event, "could not write an event"),
            }
        }
    }

    /// Tells the window process to exit; the next show starts a new one.
    pub fn end(&self) {
        if let Some(process) = self.running().take() {
            tracing::info!("ending the window process (no window on screen for the keep time)");
            let _ = process.orders.send(Order::Quit);
        }
    }

    /// A report of the window process `serial` that it hid its window.
    fn hidden(&self, serial: u64) -> bool {
        match self.running().as_mut() {
            Some(process) if process.serial == serial => {
                process.on_screen = false;
                true
            }
            _ => false,
        }
    }

    /// The window process `serial` is gone; whether it was the current one.
    fn gone(&self, serial: u64) -> bool {
        let mut running = self.running();
        if running.as_ref().is_some_and(|p| p.serial == serial) {
            *running = None;
            true
        } else {
            false
        }
    }
}

/// Starts the window process `serial`: this program with [`CHILD`] set, its stdin and stdout
/// piped to two threads of the app (stderr is the app's).
fn start<R: Runtime>(app: &AppHandle<R>, serial: u64) -> std::io::Result<mpsc::Sender<Order>> {
    let exe = std::env::current_exe()?;
    let mut child = Command::new(exe)
        .env(CHILD, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    tracing::info!(pid = child.id(), "window process started");
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(std::io::Error::other("the window process has no pipes"));
    };
    let (orders, queue) = mpsc::channel::<Order>();
    std::thread::Builder::new()
        .name("window-orders".into())
        .spawn(move || {
            for order in queue {
                let quit = order == Order::Quit;
                if stdin.write_all(line(&order).as_bytes()).is_err() || quit {
                    break;
                }
            }
        })?;
    let (app, answers) = (app.clone(), orders.clone());
    std::thread::Builder::new()
        .name("window-reports".into())
        .spawn(move || read_reports(&app, serial, stdout, &answers, child))?;
    Ok(orders)
}

/// The app's side of the window process's stdout, until it ends.
fn read_reports<R: Runtime>(
    app: &AppHandle<R>,
    serial: u64,
    stdout: std::process::ChildStdout,
    answers: &mpsc::Sender<Order>,
    mut child: Child,
) {
    let started = std::time::Instant::now();
    for text in BufReader::new(stdout).lines() {
        let Ok(text) = text else { break };
        // Whatever else writes to its stdout (a library's chatter) is not a report.
        let Ok(report) = serde_json::from_str::<Report>(&text) else {
            tracing::debug!(line = %text, "the window process said something that is no report");
            continue;
        };
        match report {
            Report::Up => tracing::info!(
                ms = window::millis(started.elapsed()),
                "window process up {} ms after it was started",
                window::millis(started.elapsed())
            ),
            Report::Shown(shown) => shown.log(),
            Report::Prepared(made) => made.log_prepared(),
            Report::Hidden => {
                if let Some(life) = app.try_state::<Lifecycle>()
                    && life.process.hidden(serial)
                {
                    window::hidden(app);
                }
            }
            Report::Call {
                call,
                command,
                args,
            } => {
                let (app, answers) = (app.clone(), answers.clone());
                tauri::async_runtime::spawn(async move {
                    let (ok, value) = match window::answer(&app, &command, &args).await {
                        Ok(value) => (true, value),
                        Err(error) => (false, serde_json::to_value(error).unwrap_or_default()),
                    };
                    let _ = answers.send(Order::Answer { call, ok, value });
                });
            }
        }
    }
    let status = child.wait();
    let current = app
        .try_state::<Lifecycle>()
        .is_some_and(|life| life.process.gone(serial));
    if current && let Some(life) = app.try_state::<Lifecycle>() {
        life.page_loading();
    }
    tracing::info!(
        ?status,
        "webview destroyed (the window process ended, and WebKit's processes with it)"
    );
}

/// The window process's `main`: a Tauri app with the one window and no tray, daemon or
/// plugins of the app's, reading orders on stdin and reporting on stdout.
pub fn main() -> ExitCode {
    let (reports, queue) = mpsc::channel::<Report>();
    std::thread::spawn(move || {
        let mut stdout = std::io::stdout().lock();
        for report in queue {
            if stdout.write_all(line(&report).as_bytes()).is_err() || stdout.flush().is_err() {
                break;
            }
        }
    });
    let calls: Arc<Mutex<HashMap<u64, InvokeResolver<Wry>>>> = Arc::default();
    let next_call = AtomicU64::new(0);
    let handler = {
        let (calls, reports) = (calls.clone(), reports.clone());
        move |invoke: Invoke<Wry>| {
            let call = next_call.fetch_add(1, Ordering::SeqCst);
            let (command, args) = (
                invoke.message.command().to_owned(),
                commands::args_of(invoke.message.payload()),
            );
            lock(&calls).insert(call, invoke.resolver);
            let _ = reports.send(Report::Call {
                call,
                command,
                args,
            });
            true
        }
    };
    let on_close = {
        let reports = reports.clone();
        move |window: &tauri::Window<Wry>, event: &WindowEvent| {
            if let WindowEvent::CloseRequested { api, .. } = event
                && window.label() == window::MAIN
            {
                api.prevent_close();
                window::hide_here(window.app_handle());
                let _ = reports.send(Report::Hidden);
            }
        }
    };
    let built = tauri::Builder::default()
        .plugin(tauri_plugin_positioner::init())
        .invoke_handler(handler)
        .on_window_event(on_close)
        .setup(move |app| {
            let _ = reports.send(Report::Up);
            let app = app.handle().clone();
            std::thread::Builder::new()
                .name("window-orders".into())
                .spawn(move || follow_orders(&app, &calls, &reports))?;
            Ok(())
        })
        .build(crate::context());
    let app = match built {
        Ok(app) => app,
        Err(error) => {
            eprintln!("taskkeeper-app (window process): could not start: {error}");
            return ExitCode::FAILURE;
        }
    };
    app.run_return(|_app, event| {
        // Only Quit or the app's end (an exit with a code) ends it.
        if let RunEvent::ExitRequested {
            code: None, api, ..
        } = event
        {
            api.prevent_exit();
        }
    });
    ExitCode::SUCCESS
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The window process's side of its stdin: the app's orders, until Quit or the app's end.
fn follow_orders(
    app: &AppHandle<Wry>,
    calls: &Mutex<HashMap<u64, InvokeResolver<Wry>>>,
    reports: &mpsc::Sender<Report>,
) {
    for text in std::io::stdin().lock().lines() {
        let Ok(text) = text else { break };
        let order = match serde_json::from_str::<Order>(&text) {
            Ok(order) => order,
            Err(error) => {
                eprintln!("taskkeeper-app (window process): not an order ({error}): {text}");
                continue;
            }
        };
        match order {
            Order::Show => {
                let _ = reports.send(Report::Shown(window::show_here(app)));
            }
            Order::Prepare => {
                let _ = reports.send(Report::Prepared(window::prepare_here(app)));
            }
            Order::Hide => {
                window::hide_here(app);
                let _ = reports.send(Report::Hidden);
            }
            Order::Emit { event, payload } => {
                if let Err(error) = app.emit(&event, payload) {
                    eprintln!("taskkeeper-app (window process): could not emit {event}: {error}");
                }
            }
            Order::Answer { call, ok, value } => {
                if let Some(resolver) = lock(calls).remove(&call) {
                    if ok {
                        resolver.resolve(value);
                    } else {
                        resolver.reject(value);
                    }
                }
            }
            Order::Quit => break,
        }
    }
    app.exit(0);
}
