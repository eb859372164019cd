//! The one window: shown near the tray, hidden instead of closed.
//!
//! Where "near the tray" is depends on the platform (docs/tauri.md §5): macOS and Windows
//! report the icon's place with each tray event, so the window opens centred on it
//! (`tauri-plugin-positioner`'s `TrayCenter`); Linux's stock tray reports nothing, so the
//! window opens at the top right of the screen, where most panels keep their indicators.

use tauri::{AppHandle, Manager as _, Runtime, WebviewWindow};
use tauri_plugin_positioner::{Position, WindowExt as _};

/// The label of the one window, as in `tauri.conf.json` and the `main` capability.
pub const MAIN: &str = "main";

fn main_window<R: Runtime>(app: &AppHandle<R>) -> Option<WebviewWindow<R>> {
    let window = app.get_webview_window(MAIN);
    if window.is_none() {
        tracing::warn!("the main window is gone; nothing to show");
    }
    window
}

/// Shows the window near the tray and gives it focus. A window already on screen stays where
/// the owner put it.
pub fn show<R: Runtime>(app: &AppHandle<R>) {
    let Some(window) = main_window(app) else {
        return;
    };
    if !window.is_visible().unwrap_or(false) {
        place_near_tray(&window);
    }
    let shown = window
        .show()
        .and_then(|()| window.unminimize())
        .and_then(|()| window.set_focus());
    match shown {
        Ok(()) => tracing::info!("window shown"),
        Err(error) => tracing::warn!(%error, "could not show the main window"),
    }
}

/// Hides the window; the app goes on in the tray.
pub fn hide<R: Runtime>(app: &AppHandle<R>) {
    if let Some(window) = main_window(app)
        && let Err(error) = window.hide()
    {
        tracing::warn!(%error, "could not hide the main window");
    }
}

/// A tray click: shows a hidden window, hides a shown one.
pub fn toggle<R: Runtime>(app: &AppHandle<R>) {
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
