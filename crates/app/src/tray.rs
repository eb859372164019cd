//! The tray icon and its menu. Built once at start and then only changed (docs/tauri.md §4:
//! rebuilding a tray moves it around on some desktops).
//!
//! The icon has three designed states ([`TrayState`]: nothing open, tasks open, something
//! stalled), drawn by `icons/make_icons.py`. On macOS and Windows a left click toggles the
//! window near the icon, and the tooltip carries the counts.
//!
//! On Linux the tray is a StatusNotifierItem of our own ([`sni`], the `ksni` crate) when a
//! StatusNotifierItem host runs (KDE, GNOME's AppIndicator extension, most panels): a left
//! click (`Activate`) toggles the window, the tooltip carries the counts, and the same menu is
//! on the right button. Where no host runs, the stock tray (libayatana-appindicator, which
//! reports no clicks) is kept, menu first: its first item opens the window and carries the
//! counts. Tauri's tray can't be both (its `tray-icon` crate picks one backend at build time,
//! and its `ksni` backend has no fallback), hence the two. Which one is decided at start; a
//! host that goes away later (a panel restarting) gets the item again when it comes back.

use taskkeeper_server::{OwnerService, TaskQuery};
use tauri::image::Image;
use tauri::menu::{MenuBuilder, MenuEvent, MenuItem, MenuItemBuilder};
use tauri::tray::{MouseButton, MouseButtonState, TrayIcon, TrayIconBuilder, TrayIconEvent};
use tauri::{AppHandle, Manager as _, Runtime};
use tokio::sync::broadcast::error::RecvError;

use crate::events::Navigate;
use crate::window;

const TRAY_ID: &str = "main";
const MENU_OPEN: &str = "open";
const MENU_REMINDERS: &str = "reminders";
const MENU_SETTINGS: &str = "settings";
const MENU_QUIT: &str = "quit";

/// What the owner needs to know at a glance; it decides the icon and the menu text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub open: usize,
    pub stalled: usize,
}

/// The icon's three states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrayState {
    /// Nothing open.
    Idle,
    /// Tasks open, none stalled.
    Open,
    /// At least one task stalled.
    Stalled,
}

impl TrayState {
    pub fn as_str(self) -> &'static str {
        match self {
            TrayState::Idle => "idle",
            TrayState::Open => "open",
            TrayState::Stalled => "stalled",
        }
    }

    fn icon(self) -> Image<'static> {
        // Decoded at compile time: no PNG decoder at run time and no chance of a zero-sized
        // image (which panics inside muda on macOS, docs/tauri.md §4).
        match self {
            TrayState::Idle => tauri::include_image!("icons/tray-idle@2x.png"),
            TrayState::Open => tauri::include_image!("icons/tray-open@2x.png"),
            TrayState::Stalled => tauri::include_image!("icons/tray-stalled@2x.png"),
        }
    }
}

impl Counts {
    pub fn state(self) -> TrayState {
        if self.stalled > 0 {
            TrayState::Stalled
        } else if self.open > 0 {
            TrayState::Open
        } else {
            TrayState::Idle
        }
    }

    /// The counts in words: "nothing open", "3 open", "3 open · 1 stalled".
    pub fn summary(self) -> String {
        match (self.open, self.stalled) {
            (0, _) => "nothing open".to_owned(),
            (open, 0) => format!("{open} open"),
            (open, stalled) => format!("{open} open · {stalled} stalled"),
        }
    }

    /// The "Open" item's text, e.g. "Open — 3 open · 1 stalled".
    pub fn menu_text(self) -> String {
        format!("Open — {}", self.summary())
    }

    /// The tooltip (macOS, Windows), e.g. "Taskkeeper — 3 open · 1 stalled".
    pub fn tooltip(self) -> String {
        format!("Taskkeeper — {}", self.summary())
    }
}

/// The Pause/Resume item's text for the current setting.
pub fn reminders_text(paused: bool) -> &'static str {
    if paused {
        "Resume reminders"
    } else {
        "Pause reminders"
    }
}

/// Everything the tray shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrayView {
    pub counts: Counts,
    pub reminders_paused: bool,
}

/// The parts of the tray that change after start.
pub enum Tray<R: Runtime> {
    /// Tauri's tray: macOS, Windows, and Linux without a StatusNotifierItem host.
    Stock {
        icon: TrayIcon<R>,
        open_item: MenuItem<R>,
        reminders_item: MenuItem<R>,
    },
    /// Our StatusNotifierItem (Linux with a host).
    #[cfg(all(unix, not(target_os = "macos")))]
    Sni(ksni::Handle<sni::Item<R>>),
}

impl<R: Runtime> Tray<R> {
    /// Creates the tray: on Linux a StatusNotifierItem where a host runs, else the stock tray.
    pub fn build(app: &AppHandle<R>) -> tauri::Result<Self> {
        #[cfg(all(unix, not(target_os = "macos")))]
        match tauri::async_runtime::block_on(sni::spawn(app.clone())) {
            Ok(handle) => {
                tracing::info!("tray: a StatusNotifierItem (a left click opens the window)");
                return Ok(Tray::Sni(handle));
            }
            Err(why) => tracing::info!(
                "tray: no StatusNotifierItem host ({why}); the stock tray, whose menu opens the window"
            ),
        }
        Self::build_stock(app)
    }

    /// Tauri's tray with its menu. Before the first count the item just says "Open".
    fn build_stock(app: &AppHandle<R>) -> tauri::Result<Self> {
        let open_item = MenuItemBuilder::with_id(MENU_OPEN, "Open").build(app)?;
        let reminders_item =
            MenuItemBuilder::with_id(MENU_REMINDERS, reminders_text(false)).build(app)?;
        let settings_item = MenuItemBuilder::with_id(MENU_SETTINGS, "Settings…").build(app)?;
        let quit_item = MenuItemBuilder::with_id(MENU_QUIT, "Quit Taskkeeper").build(app)?;
        let menu = MenuBuilder::new(app)
            .item(&open_item)
            .separator()
            .item(&reminders_item)
            .item(&settings_item)
            .separator()
            .item(&quit_item)
            .build()?;
        let icon = TrayIconBuilder::with_id(TRAY_ID)
            .icon(TrayState::Idle.icon())
            .tooltip("Taskkeeper")
            .menu(&menu)
            // A left click toggles the window (macOS, Windows); the menu is on the right button.
            .show_menu_on_left_click(false)
            .on_menu_event(on_menu_event)
            .on_tray_icon_event(|tray, event| {
                let app = tray.app_handle();
                tauri_plugin_positioner::on_tray_event(app, &event);
                if let TrayIconEvent::Click {
                    button: MouseButton::Left,
                    button_state: MouseButtonState::Up,
                    ..
                } = event
                {
                    window::toggle(app);
                }
            })
            .build(app)?;
        Ok(Tray::Stock {
            icon,
            open_item,
            reminders_item,
        })
    }

    /// Shows a new view: icon, menu texts, tooltip and the stalled count beside the icon
    /// (Linux, macOS).
    pub async fn show(&self, view: TrayView) -> tauri::Result<()> {
        match self {
            Tray::Stock {
                icon,
                open_item,
                reminders_item,
            } => {
                let counts = view.counts;
                icon.set_icon(Some(counts.state().icon()))?;
                open_item.set_text(counts.menu_text())?;
                reminders_item.set_text(reminders_text(view.reminders_paused))?;
                icon.set_tooltip(Some(counts.tooltip()))?;
                let title = (counts.stalled > 0).then(|| counts.stalled.to_string());
                icon.set_title(title)?;
            }
            #[cfg(all(unix, not(target_os = "macos")))]
            Tray::Sni(handle) => {
                // None: the item's service is gone (the bus went away); nothing to show on.
                if handle
                    .update(move |item| item.view = Some(view))
                    .await
                    .is_none()
                {
                    tracing::debug!("the StatusNotifierItem is gone");
                }
            }
        }
        Ok(())
    }
}

fn on_menu_event<R: Runtime>(app: &AppHandle<R>, event: MenuEvent) {
    choose(app, event.id().as_ref());
}

/// A menu item chosen, by id: the same for both trays.
fn choose<R: Runtime>(app: &AppHandle<R>, id: &str) {
    tracing::info!(id, "tray menu");
    match id {
        MENU_OPEN => window::show(app),
        MENU_REMINDERS => {
            let app = app.clone();
            tauri::async_runtime::spawn(async move { flip_reminders(&app).await });
        }
        MENU_SETTINGS => {
            window::show(app);
            window::navigate(app, Navigate::SETTINGS);
        }
        MENU_QUIT => {
            tracing::info!("quit chosen from the tray menu");
            app.exit(0);
        }
        _ => {}
    }
}

/// The StatusNotifierItem (the freedesktop tray protocol over D-Bus), through `ksni`.
#[cfg(all(unix, not(target_os = "macos")))]
pub mod sni {
    use ksni::TrayMethods as _;
    use ksni::menu::{MenuItem, StandardItem};
    use tauri::{AppHandle, Runtime};

    use super::{
        Counts, MENU_OPEN, MENU_QUIT, MENU_REMINDERS, MENU_SETTINGS, TrayState, TrayView,
        reminders_text,
    };
    use crate::window;

    /// What the item shows; `view` is `None` until the first count.
    pub struct Item<R: Runtime> {
        pub app: AppHandle<R>,
        pub view: Option<TrayView>,
    }

    /// Registers the item with the host's watcher. Fails, quickly, where no watcher runs or no
    /// host has registered with it (nothing would show the item), so the caller falls back.
    pub async fn spawn<R: Runtime>(app: AppHandle<R>) -> Result<ksni::Handle<Item<R>>, String> {
        let item = Item { app, view: None };
        let spawned = tokio::time::timeout(std::time::Duration::from_secs(5), item.spawn()).await;
        match spawned {
            Ok(Ok(handle)) => Ok(handle),
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err("the StatusNotifierWatcher did not answer within 5s".to_owned()),
        }
    }

    /// The icon as the protocol wants it: ARGB32, big-endian.
    fn pixmap(state: TrayState) -> ksni::Icon {
        let image = state.icon();
        let data = image
            .rgba()
            .chunks_exact(4)
            .flat_map(|p| [p[3], p[0], p[1], p[2]])
            .collect();
        ksni::Icon {
            width: i32::try_from(image.width()).unwrap_or(0),
            height: i32::try_from(image.height()).unwrap_or(0),
            data,
        }
    }

    impl<R: Runtime> Item<R> {
        fn counts(&self) -> Counts {
            self.view.map(|v| v.counts).unwrap_or_default()
        }

        fn item(&self, id: &'static str, label: String) -> MenuItem<Self> {
            StandardItem {
                label,
                activate: Box::new(move |item: &mut Self| super::choose(&item.app, id)),
                ..Default::default()
            }
            .into()
        }
    }

    impl<R: Runtime> ksni::Tray for Item<R> {
        fn id(&self) -> String {
            "taskkeeper".into()
        }

        fn title(&self) -> String {
            "Taskkeeper".into()
        }

        /// The panel opens the menu (dbusmenu's `AboutToShow`): Open may come next, so the
        /// window process starts now (`window::prepare`).
        fn menu_about_to_show(&mut self) {
            window::prepare(&self.app);
        }

        /// A left click.
        fn activate(&mut self, _x: i32, _y: i32) {
            tracing::info!("tray activated");
            window::toggle(&self.app);
        }

        fn status(&self) -> ksni::Status {
            match self.counts().state() {
                TrayState::Stalled => ksni::Status::NeedsAttention,
                TrayState::Idle | TrayState::Open => ksni::Status::Active,
            }
        }

        fn icon_pixmap(&self) -> Vec<ksni::Icon> {
            vec![pixmap(self.counts().state())]
        }

        fn tool_tip(&self) -> ksni::ToolTip {
            ksni::ToolTip {
                title: "Taskkeeper".into(),
                description: self.counts().summary(),
                ..Default::default()
            }
        }

        fn menu(&self) -> Vec<MenuItem<Self>> {
            let open = match self.view {
                Some(view) => view.counts.menu_text(),
                None => "Open".to_owned(),
            };
            let paused = self.view.is_some_and(|v| v.reminders_paused);
            vec![
                self.item(MENU_OPEN, open),
                MenuItem::Separator,
                self.item(MENU_REMINDERS, reminders_text(paused).to_owned()),
                self.item(MENU_SETTINGS, "Settings…".to_owned()),
                MenuItem::Separator,
                self.item(MENU_QUIT, "Quit Taskkeeper".to_owned()),
            ]
        }
    }
}

/// Pause reminders if they run, resume them if paused: the item's text says which.
async fn flip_reminders<R: Runtime>(app: &AppHandle<R>) {
    let owner = app.state::<OwnerService>().inner().clone();
    let paused = match owner.settings().await {
        Ok(settings) => is_paused(&settings),
        Err(error) => {
            tracing::warn!(%error, "could not read whether reminders are paused");
            return;
        }
    };
    match owner.pause_reminders(!paused).await {
        Ok(_) => tracing::info!(
            paused = !paused,
            "reminders paused or resumed from the tray"
        ),
        Err(error) => tracing::warn!(%error, "could not pause or resume reminders"),
    }
}

/// Whether the settings map says reminders are paused.
pub fn is_paused(settings: &serde_json::Map<String, serde_json::Value>) -> bool {
    settings
        .get(taskkeeper_core::settings::REMINDERS_PAUSED)
        .and_then(|v| v.as_str())
        == Some("true")
}

/// Keeps the tray current: re-reads after every task and settings change the daemon
/// publishes, also settings changes (a pause made in the window, a browser or with
/// `taskkeeper settings`), and once at start, and touches the tray only when what it shows differs.
/// A change of state is logged (`tray state stalled`), which is also how the end-to-end test
/// sees the tray. Errors are logged once per change of message, so a broken store doesn't
/// flood the log.
pub async fn follow<R: Runtime>(tray: Tray<R>, owner: OwnerService) {
    let mut shown: Option<TrayView> = None;
    let mut last_error: Option<String> = None;
    let mut changes = owner.changes();
    let mut settings = owner.settings_changes();
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::select! {
                change = changes.recv() => match change {
                    Ok(_) | Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return,
                },
                // A pause made in the window, the browser or with `taskkeeper settings`.
                change = settings.changed() => if change.is_err() {
                    return;
                },
            }
        }
        let view = match read_view(&owner).await {
            Ok(view) => view,
            Err(error) => {
                let message = error.to_string();
                if last_error.as_ref() != Some(&message) {
                    tracing::warn!(%message, "could not read the tray's counts");
                    last_error = Some(message);
                }
                continue;
            }
        };
        last_error = None;
        if shown == Some(view) {
            continue;
        }
        match tray.show(view).await {
            Ok(()) => {
                let state = view.counts.state();
                if shown.is_none_or(|s| s.counts.state() != state) {
                    tracing::info!(
                        open = view.counts.open,
                        stalled = view.counts.stalled,
                        "tray state {}",
                        state.as_str()
                    );
                }
                if shown.is_some_and(|s| s.reminders_paused != view.reminders_paused) {
                    tracing::info!("tray menu: {}", reminders_text(view.reminders_paused));
                }
                shown = Some(view);
            }
            Err(error) => tracing::warn!(%error, "could not update the tray"),
        }
    }
}

async fn read_view(owner: &OwnerService) -> Result<TrayView, taskkeeper_server::OwnerError> {
    let tasks = owner.list_tasks(TaskQuery::open()).await?;
    let settings = owner.settings().await?;
    Ok(TrayView {
        counts: Counts {
            open: tasks.len(),
            stalled: tasks.iter().filter(|t| t.stalled_at.is_some()).count(),
        },
        reminders_paused: is_paused(&settings),
    })
}
