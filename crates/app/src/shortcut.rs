//! The global shortcut that shows and hides the window (the `app.shortcut` setting, e.g.
//! `CmdOrCtrl+Alt+K`; `off` for none), through `tauri-plugin-global-shortcut`: a key grab on
//! X11, a hot key on Windows, a Carbon hot key on macOS. Wayland has no global grabs for
//! ordinary apps, so there registering fails and is logged; the tray stays the way in.
//!
//! The setting is followed while the app runs: a change unregisters the old shortcut and
//! registers the new one, so the settings panel's change counts at once.

use taskkeeper_core::settings::APP_SHORTCUT as KEY;
use taskkeeper_server::OwnerService;
use tauri::plugin::TauriPlugin;
use tauri::{AppHandle, Runtime};
use tauri_plugin_global_shortcut::{GlobalShortcutExt as _, Shortcut, ShortcutState};

use crate::window;

/// The plugin, with the handler every registered shortcut shares: a press toggles the window.
pub fn plugin<R: Runtime>() -> TauriPlugin<R> {
    tauri_plugin_global_shortcut::Builder::new()
        .with_handler(|app, shortcut, event| {
            if event.state() == ShortcutState::Pressed {
                tracing::info!(shortcut = %shortcut.into_string(), "global shortcut pressed");
                window::toggle(app);
            }
        })
        .build()
}

/// Keeps the registered shortcut equal to the setting, until the daemon stops.
pub async fn follow<R: Runtime>(app: AppHandle<R>, owner: OwnerService) {
    let mut changes = owner.settings_changes();
    let mut registered: Option<String> = None;
    loop {
        let wanted = match owner.settings().await {
            Ok(settings) => settings
                .get(KEY)
                .and_then(|v| v.as_str())
                .filter(|v| *v != "off")
                .map(str::to_owned),
            Err(error) => {
                tracing::warn!(%error, "could not read the shortcut setting");
                registered.clone()
            }
        };
        if wanted != registered {
            if let Some(old) = registered.take()
                && let Err(error) = app.global_shortcut().unregister(old.as_str())
            {
                tracing::debug!(%error, "could not unregister the old shortcut");
            }
            if let Some(new) = wanted {
                registered = register(&app, &new).then_some(new);
            }
        }
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// Registers `text`; says in the log why not when it can't (a key name the plugin doesn't
/// know, a shortcut another app holds, Wayland).
fn register<R: Runtime>(app: &AppHandle<R>, text: &str) -> bool {
    let shortcut: Shortcut = match text.parse() {
        Ok(s) => s,
        Err(error) => {
            tracing::warn!(%error, "the shortcut {text:?} ({KEY}) is not one the system knows");
            return false;
        }
    };
    match app.global_shortcut().register(shortcut) {
        Ok(()) => {
            tracing::info!("global shortcut {text} registered");
            true
        }
        Err(error) => {
            tracing::warn!(%error, "could not register the global shortcut {text}");
            false
        }
    }
}
