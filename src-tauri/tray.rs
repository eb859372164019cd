//! The tray icon and its menu. Built once at start and then only changed (docs/tauri.md §4:
//! rebuilding a tray moves it around on some desktops). On Linux the stock tray reports no
//! clicks, so the menu's first item is the way in and carries the counts.

use tauri::image::Image;
use tauri::menu::{MenuBuilder, MenuItem, MenuItemBuilder};
use tauri::tray::{TrayIcon, TrayIconBuilder};
use tauri::{AppHandle, Manager as _, Runtime};

const TRAY_ID: &str = "main";
const MENU_OPEN: &str = "open";
const MENU_QUIT: &str = "quit";

/// What the owner needs to know at a glance; it decides the icon and the menu text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub open: usize,
    pub stalled: usize,
}

impl Counts {
    /// The "Open" item's text, e.g. "Open — 3 open · 1 stalled".
    pub fn menu_text(self) -> String {
        match (self.open, self.stalled) {
            (0, _) => "Open — nothing open".to_owned(),
            (open, 0) => format!("Open — {open} open"),
            (open, stalled) => format!("Open — {open} open · {stalled} stalled"),
        }
    }

    fn icon(self) -> Image<'static> {
        // Decoded at compile time: no PNG decoder at run time and no chance of a zero-sized image.
        if self.stalled > 0 {
            tauri::include_image!("icons/tray-stalled@2x.png")
        } else if self.open > 0 {
            tauri::include_image!("icons/tray-open@2x.png")
        } else {
            tauri::include_image!("icons/tray-idle@2x.png")
        }
    }
}

/// The parts of the tray that change after start.
pub struct Tray<R: Runtime> {
    icon: TrayIcon<R>,
    open_item: MenuItem<R>,
}

impl<R: Runtime> Tray<R> {
    /// Creates the tray with its menu. Before the first count the item just says "Open".
    pub fn build(app: &AppHandle<R>) -> tauri::Result<Self> {
        let open_item = MenuItemBuilder::with_id(MENU_OPEN, "Open").build(app)?;
        let quit_item = MenuItemBuilder::with_id(MENU_QUIT, "Quit").build(app)?;
        let menu = MenuBuilder::new(app)
            .item(&open_item)
            .separator()
            .item(&quit_item)
            .build()?;
        let icon = TrayIconBuilder::with_id(TRAY_ID)
            .icon(Counts::default().icon())
            .tooltip("Taskkeeper")
            .menu(&menu)
            .on_menu_event(|app, event| match event.id().as_ref() {
                MENU_OPEN => show_main_window(app),
                MENU_QUIT => {
                    tracing::info!("quit chosen from the tray menu");
                    app.exit(0);
                }
                _ => {}
            })
            .build(app)?;
        Ok(Self { icon, open_item })
    }

    /// Shows new counts: icon, menu text, and the tooltip where the platform has one.
    pub fn show(&self, counts: Counts) -> tauri::Result<()> {
        let text = counts.menu_text();
        self.icon.set_icon(Some(counts.icon()))?;
        self.open_item.set_text(&text)?;
        self.icon.set_tooltip(Some(format!(
            "Taskkeeper: {}",
            text.trim_start_matches("Open — ")
        )))?;
        Ok(())
    }
}

/// Brings the window back from the tray.
pub fn show_main_window<R: Runtime>(app: &AppHandle<R>) {
    let Some(window) = app.get_webview_window(crate::MAIN_WINDOW) else {
        tracing::warn!("the main window is gone; nothing to show");
        return;
    };
    let shown = window
        .show()
        .and_then(|()| window.unminimize())
        .and_then(|()| window.set_focus());
    if let Err(error) = shown {
        tracing::warn!(%error, "could not show the main window");
    }
}
