//! The one window: shown near the tray, hidden instead of closed, and its webview kept only
//! while it is wanted.
//!
//! Where "near the tray" is depends on the platform (docs/tauri.md §5): macOS and Windows
//! report the icon's place with each tray event, so the window opens centred on it
//! (`tauri-plugin-positioner`'s `TrayCenter`); Linux's stock tray reports nothing, so the
//! window opens at the top right of the screen, where most panels keep their indicators.
//!
//! A hidden WebKit webview still costs its web process (well over 100 MB, issue 13), so the
//! window is not created at start (`"create": false` in `tauri.conf.json`): [`show`] creates it
//! from its configuration, and [`hide`] destroys it [`KEEP_HIDDEN`] after it was hidden (a
//! quick hide and show again finds it still there). What the app tells a page that is still
//! loading (a notification's "open on this task") waits in [`Lifecycle`] until the page reports
//! its first render (`ui_rendered`).
//!
//! On Linux the webview lives in a window process of its own ([`process`]): the
//! same program started again, which exits when the webview would be destroyed. WebKit loads
//! an OpenGL driver into whatever process holds a webview, for good; in a process of its own
//! it goes when the window does, and the app in the tray stays as light as before its first
//! open. Elsewhere (and where starting it fails) the webview is made in this process.
//!
//! A page's calls, from a webview of this process ([`handler`]) or over the window process's
//! pipe, are all answered by [`answer`]: the page's two reports about itself here (they move
//! the window's life on), every other command by [`commands::run`].

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use taskkeeper_server::OwnerError;
use tauri::ipc::Invoke;
use tauri::{AppHandle, Emitter as _, Manager as _, Runtime, WebviewWindow, WebviewWindowBuilder};
use tauri_plugin_positioner::{Position, WindowExt as _};

pub mod process;

use crate::commands;
use crate::events::{NAVIGATE, Navigate};
use process::Started;

/// The label of the one window, as in `tauri.conf.json` and the `main` capability.
pub const MAIN: &str = "main";

/// How long a hidden window keeps its webview; `TASKKEEPER_WINDOW_KEEP_MS` changes it (the
/// end-to-end test and the benchmark).
pub const KEEP_HIDDEN: Duration = Duration::from_secs(30);

/// The window's life, as managed state.
#[derive(Debug)]
pub struct Lifecycle {
    /// Grows at every show and hide, so a destroy planned at a hide is dropped by a later show.
    generation: AtomicU64,
    /// The page in the window has drawn once (so it hears events).
    page_ready: AtomicBool,
    /// The page in the window has reported its first frame on screen.
    framed: AtomicBool,
    /// Where the page should go once it is ready.
    pending: Mutex<Option<Navigate>>,
    /// When [`show`] was last asked for a window that was not on screen, until its page's
    /// first frame is reported ([`first_frame`]).
    opened: Mutex<Option<Instant>>,
    keep_hidden: Duration,
    /// The window process, when the window lives in one ([`process`]).
    pub(crate) process: process::Slot,
}

impl Default for Lifecycle {
    fn default() -> Self {
        let keep_hidden = std::env::var("TASKKEEPER_WINDOW_KEEP_MS")
            .ok()
            .and_then(|ms| ms.trim().parse().ok())
            .map_or(KEEP_HIDDEN, Duration::from_millis);
        Self {
            generation: AtomicU64::new(0),
            page_ready: AtomicBool::new(false),
            framed: AtomicBool::new(false),
            pending: Mutex::new(None),
            opened: Mutex::new(None),
            keep_hidden,
            process: process::Slot::from_env(),
        }
    }
}

impl Lifecycle {
    fn pending(&self) -> std::sync::MutexGuard<'_, Option<Navigate>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn opened(&self) -> std::sync::MutexGuard<'_, Option<Instant>> {
        self.opened
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A page is loading again (a new webview or a new window process): what it must hear
    /// waits until it draws.
    pub(crate) fn page_loading(&self) {
        self.page_ready.store(false, Ordering::SeqCst);
        self.framed.store(false, Ordering::SeqCst);
    }
}

pub(crate) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Sends the window to a view now, or once its page is ready when it is still loading.
pub fn navigate<R: Runtime>(app: &AppHandle<R>, to: Navigate) {
    if let Some(life) = app.try_state::<Lifecycle>()
        && !life.page_ready.load(Ordering::SeqCst)
    {
        tracing::info!(?to, "navigate once the page is ready");
        *life.pending() = Some(to);
        return;
    }
    send_navigate(app, &to);
}

/// Tells the page to show a view. A window that is gone (or a page not loaded yet) misses
/// it, which is harmless: the window is shown anyway by whoever asked.
fn send_navigate<R: Runtime>(app: &AppHandle<R>, to: &Navigate) {
    tracing::info!(?to, "navigate");
    emit(app, NAVIGATE, to);
}

/// Sends an event to the page: to the window process's, or to the webviews of this process.
/// With no page (no window now) it is dropped: a new page reads what it shows.
pub fn emit<R: Runtime, S: Serialize + Clone>(app: &AppHandle<R>, event: &str, payload: S) {
    if let Some(life) = app.try_state::<Lifecycle>()
        && life.process.in_use()
    {
        life.process.emit(event, &payload);
        return;
    }
    if let Err(error) = app.emit(event, payload) {
        tracing::debug!(%error, event, "could not send an event to the page");
    }
}

/// The page drew: it listens now, so a waiting navigation goes out.
pub fn page_rendered<R: Runtime>(app: &AppHandle<R>) {
    let Some(life) = app.try_state::<Lifecycle>() else {
        return;
    };
    if !life.page_ready.swap(true, Ordering::SeqCst)
        && let Some(to) = life.pending().take()
    {
        send_navigate(app, &to);
    }
}

/// The page's first frame is on screen: logged with the time since the window was asked for
/// (the issue 13 goal: 300 ms from the tray menu's Open).
///
/// `page_ms` is the page's own clock at that frame, from the moment it was on screen: since
/// its navigation started, which tells the page's share (load, script, first paint) from the
/// process and webview start before it; or, for a page loaded hidden ahead of the open
/// ([`prepare`]), since it became visible, `hidden_ms` (its clock then) being how long it
/// had been loaded before. A report while the window is not on screen (a page that thinks it
/// is visible while hidden) is not a first frame of an open and counts as none.
pub fn first_frame<R: Runtime>(app: &AppHandle<R>, page_ms: Option<u64>, hidden_ms: Option<u64>) {
    let Some(life) = app.try_state::<Lifecycle>() else {
        tracing::info!(page_ms, "first frame");
        return;
    };
    if life.process.in_use() && !life.process.on_screen() {
        tracing::warn!(
            page_ms,
            "the page reported a first frame while hidden: not counted"
        );
        return;
    }
    life.framed.store(true, Ordering::SeqCst);
    match life.opened().take() {
        Some(asked) => tracing::info!(
            ms = millis(asked.elapsed()),
            page_ms,
            hidden_ms,
            "first frame {} ms after the open",
            millis(asked.elapsed())
        ),
        None => tracing::info!(page_ms, hidden_ms, "first frame"),
    }
}

/// Answers the page's call `command` with `args`, however it came: the page's two reports
/// about itself here, every other command by [`commands::run`] (the table in its docs).
pub async fn answer<R: Runtime>(
    app: &AppHandle<R>,
    command: &str,
    args: &Value,
) -> Result<Value, OwnerError> {
    match command {
        // The page reports how many tasks it drew after each change. The log line is how the
        // app's end-to-end test sees the real window's DOM without a WebDriver; it is also
        // useful when a user reports an empty window.
        "ui_rendered" => {
            let count: u32 = commands::arg(args, "count")?;
            tracing::info!(count, "ui rendered {count} open tasks");
            page_rendered(app);
            Ok(Value::Null)
        }
        // The page's first frame is on screen (its first animation frame, and the paint after
        // it): the app logs the time since the window was asked for, by its own clock.
        "ui_first_frame" => {
            let page_ms = commands::arg(args, "pageMs")?;
            first_frame(app, page_ms, commands::arg(args, "hiddenMs")?);
            Ok(Value::Null)
        }
        _ => commands::run(app, command, args).await,
    }
}

/// The invoke handler of a webview in this process, for any runtime (the real one and the
/// mock): every call goes to [`answer`].
pub fn handler<R: Runtime>() -> impl Fn(Invoke<R>) -> bool + Send + Sync + 'static {
    |invoke: Invoke<R>| {
        let app = invoke.message.webview().app_handle().clone();
        let command = invoke.message.command().to_owned();
        let args = commands::args_of(invoke.message.payload());
        let resolver = invoke.resolver;
        tauri::async_runtime::spawn(async move {
            match answer(&app, &command, &args).await {
                Ok(value) => resolver.resolve(value),
                Err(error) => resolver.reject(error),
            }
        });
        true
    }
}

/// The window, created from its configuration when it doesn't exist.
fn main_window<R: Runtime>(app: &AppHandle<R>) -> Result<WebviewWindow<R>, String> {
    if let Some(window) = app.get_webview_window(MAIN) {
        return Ok(window);
    }
    let Some(config) = app.config().app.windows.iter().find(|w| w.label == MAIN) else {
        return Err(format!(
            "no window {MAIN:?} in the configuration; nothing to show"
        ));
    };
    if let Some(life) = app.try_state::<Lifecycle>() {
        life.page_loading();
    }
    let built = WebviewWindowBuilder::from_config(app, config).and_then(|builder| {
        // Linux: the top right of the screen, where most panels keep their indicators.
        #[cfg(not(any(target_os = "macos", target_os = "windows")))]
        let builder = match app.primary_monitor() {
            Ok(Some(monitor)) => {
                let scale = monitor.scale_factor();
                let size = monitor.size().to_logical::<f64>(scale);
                let origin = monitor.position().to_logical::<f64>(scale);
                builder.position(origin.x + size.width - config.width, origin.y)
            }
            _ => builder,
        };
        builder.build()
    });
    built.map_err(|error| format!("could not create the window: {error}"))
}

/// The owner may ask for the window next (the tray's menu opened): where the window lives in
/// a window process, that process starts now and makes its webview hidden, its page loading
/// ([`prepare_here`]), so an Open finds the process, the webview and the page (nearly all of
/// a cold open) done and only maps the window. Unused, it ends like a hidden window's, after
/// [`Lifecycle::keep_hidden`], WebKit's processes with it.
pub fn prepare<R: Runtime>(app: &AppHandle<R>) {
    let Some(life) = app.try_state::<Lifecycle>() else {
        return;
    };
    if !life.process.in_use() {
        return;
    }
    match life.process.prepare(app) {
        Ok(true) => {
            life.page_loading();
            tracing::info!("the tray's menu opened: the window process starts ahead of an open");
            forget_later(app);
        }
        Ok(false) => {}
        Err(error) => tracing::warn!(%error, "could not start the window process ahead"),
    }
}

/// What showing the window here did, for the log (and the window process's report).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shown {
    /// The webview was made for this show, in this many milliseconds.
    pub created_ms: Option<u64>,
    pub position: Option<(i32, i32)>,
    pub size: Option<(u32, u32)>,
    /// Why it could not be shown.
    pub error: Option<String>,
}

impl Shown {
    /// The log lines of a window made hidden ahead of a show.
    pub(crate) fn log_prepared(&self) {
        match (&self.error, self.created_ms) {
            (Some(error), _) => tracing::warn!(%error, "could not make the window ahead"),
            (None, Some(ms)) => tracing::info!(ms, "webview created hidden, ahead of an open"),
            (None, None) => {}
        }
    }

    /// The log lines the end-to-end tests and the benchmark read.
    pub(crate) fn log(&self) {
        if let Some(ms) = self.created_ms {
            tracing::info!(ms, "webview created");
        }
        match &self.error {
            None => tracing::info!(position = ?self.position, size = ?self.size, "window shown"),
            Some(error) => tracing::warn!(%error, "could not show the main window"),
        }
    }
}

/// A window made hidden by [`prepare_here`] and not shown since: it is made in its place.
static MADE_HIDDEN: AtomicBool = AtomicBool::new(false);

/// Makes the window of this process hidden, its page loading, ahead of a show (the window
/// process's half of [`prepare`]).
pub fn prepare_here<R: Runtime>(app: &AppHandle<R>) -> Shown {
    if app.get_webview_window(MAIN).is_some() {
        return Shown::default();
    }
    let started = Instant::now();
    // The configuration's window is not visible until shown.
    match main_window(app) {
        Ok(_) => {
            MADE_HIDDEN.store(true, Ordering::SeqCst);
            Shown {
                created_ms: Some(millis(started.elapsed())),
                ..Shown::default()
            }
        }
        Err(error) => Shown {
            error: Some(error),
            ..Shown::default()
        },
    }
}

/// Shows the window near the tray and gives it focus, creating it if needed. A window already
/// on screen stays where the owner put it.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    let asked = Instant::now();
    let Some(life) = app.try_state::<Lifecycle>() else {
        show_here(app).log();
        return;
    };
    life.generation.fetch_add(1, Ordering::SeqCst);
    if life.process.in_use() {
        match life.process.show(app) {
            Ok(started) => {
                if started == Started::New {
                    life.page_loading();
                }
                // A page that has not drawn yet (new, or in a window process started ahead
                // by [`prepare`]) reports its first frame: timed from this open.
                if !life.framed.load(Ordering::SeqCst) {
                    *life.opened() = Some(asked);
                }
                return;
            }
            Err(error) => {
                tracing::warn!(%error, "could not start the window process; the window opens in this process from now on");
                life.process.give_up();
            }
        }
    }
    if app.get_webview_window(MAIN).is_none() {
        *life.opened() = Some(asked);
    }
    show_here(app).log();
}

/// Shows the window of this process, creating it if needed (the in-process half of [`show`],
/// and all the window process does when asked to show).
pub fn show_here<R: Runtime>(app: &AppHandle<R>) -> Shown {
    let existed = app.get_webview_window(MAIN).is_some();
    let started = Instant::now();
    let window = match main_window(app) {
        Ok(window) => window,
        Err(error) => {
            return Shown {
                error: Some(error),
                ..Shown::default()
            };
        }
    };
    let created_ms = (!existed).then(|| millis(started.elapsed()));
    // Linux: a window made just now is made in its place (GTK knows its size only once it
    // is mapped, which a move from here can't wait for).
    let fresh = !existed || MADE_HIDDEN.swap(false, Ordering::SeqCst);
    let placed = fresh && cfg!(not(any(target_os = "macos", target_os = "windows")));
    if !placed && !window.is_visible().unwrap_or(false) {
        place_near_tray(&window);
    }
    let shown = window
        .show()
        .and_then(|()| window.unminimize())
        .and_then(|()| window.set_focus());
    Shown {
        created_ms,
        position: window.outer_position().ok().map(|p| (p.x, p.y)),
        size: window.outer_size().ok().map(|s| (s.width, s.height)),
        error: shown.err().map(|e| e.to_string()),
    }
}

/// Hides the window of this process; whether there was one to hide.
pub fn hide_here<R: Runtime>(app: &AppHandle<R>) -> bool {
    let Some(window) = app.get_webview_window(MAIN) else {
        return false;
    };
    match window.hide() {
        Ok(()) => true,
        Err(error) => {
            tracing::warn!(%error, "could not hide the main window");
            false
        }
    }
}

/// Hides the window; the app goes on in the tray. The webview goes a little later.
pub fn hide<R: Runtime>(app: &AppHandle<R>) {
    if let Some(life) = app.try_state::<Lifecycle>()
        && life.process.in_use()
    {
        // The window process answers that it hid, and that answer is [`hidden`].
        life.process.hide();
        return;
    }
    if hide_here(app) {
        tracing::info!("window hidden");
    }
    forget_later(app);
}

/// The window process hid its window (asked to, or its close button).
pub(crate) fn hidden<R: Runtime>(app: &AppHandle<R>) {
    tracing::info!("window hidden");
    forget_later(app);
}

/// Destroys the hidden window's webview after [`Lifecycle::keep_hidden`], unless it was shown
/// again meanwhile.
pub fn forget_later<R: Runtime>(app: &AppHandle<R>) {
    let Some(life) = app.try_state::<Lifecycle>() else {
        return;
    };
    let generation = life.generation.fetch_add(1, Ordering::SeqCst) + 1;
    let keep = life.keep_hidden;
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        tokio::time::sleep(keep).await;
        let Some(life) = app.try_state::<Lifecycle>() else {
            return;
        };
        if life.generation.load(Ordering::SeqCst) != generation {
            return;
        }
        if life.process.in_use() {
            // The webview, its web process and WebKit's network process go with it.
            life.process.end();
            return;
        }
        if let Some(window) = app.get_webview_window(MAIN)
            && !window.is_visible().unwrap_or(true)
        {
            life.page_ready.store(false, Ordering::SeqCst);
            match window.destroy() {
                Ok(()) => tracing::info!("webview destroyed (the window was hidden)"),
                Err(error) => {
                    tracing::warn!(%error, "could not destroy the hidden window");
                    return;
                }
            }
            #[cfg(all(unix, not(target_os = "macos")))]
            end_network_process(&app, generation).await;
        }
    });
}

/// Once the web process has gone with the webview, ends WebKit's network process too
/// ([`crate::webkit`]), unless the window was asked for again meanwhile.
#[cfg(all(unix, not(target_os = "macos")))]
async fn end_network_process<R: Runtime>(app: &AppHandle<R>, generation: u64) {
    let still_gone = || {
        app.try_state::<Lifecycle>()
            .is_some_and(|life| life.generation.load(Ordering::SeqCst) == generation)
            && app.get_webview_window(MAIN).is_none()
    };
    // The web process leaves a moment after its webview; give it up to 5 s.
    for _ in 0..50 {
        if !crate::webkit::web_process_running() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if still_gone() {
        let ended = crate::webkit::end_network_process();
        tracing::info!(ended, "WebKit's network process ended (no webview left)");
    }
}

/// A tray click or the shortcut: shows a hidden window, hides a shown one.
pub fn toggle<R: Runtime>(app: &AppHandle<R>) {
    if let Some(life) = app.try_state::<Lifecycle>()
        && life.process.in_use()
    {
        if life.process.on_screen() {
            hide(app)
        } else {
            show(app)
        }
        return;
    }
    let visible = app
        .get_webview_window(MAIN)
        .and_then(|w| w.is_visible().ok())
        .unwrap_or(false);
    if visible { hide(app) } else { show(app) }
}

fn place_near_tray<R: Runtime>(window: &WebviewWindow<R>) {
    // Linux: the tray reports no position, so a Tray* move always fails there.
    #[cfg(not(any(target_os = "macos", target_os = "windows")))]
    let placed = window.move_window(Position::TopRight);
    #[cfg(any(target_os = "macos", target_os = "windows"))]
    let placed = window
        .move_window_constrained(Position::TrayCenter)
        // Before the first tray event (a notification click, a second launch) the tray's
        // place is unknown.
        .or_else(|_| window.move_window(Position::TopRight));
    if let Err(error) = placed {
        tracing::debug!(%error, "could not place the window near the tray");
    }
}
