//! A StatusNotifierItem host for a test's private bus: `org.kde.StatusNotifierWatcher` at
//! `/StatusNotifierWatcher`, saying a host is registered (as a panel's tray does) and keeping
//! the items that register; and a client for the item's own interface (`Activate`, the
//! `ToolTip` property), as a panel calls it on a left click or a hover.
//!
//! It runs on a thread of its own, inside its own `zbus::block_on`, like the notification
//! server.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;
use zbus::message::Header;
use zbus::object_server::SignalEmitter;
use zbus::zvariant::{OwnedValue, Value};

const NAME: &str = "org.kde.StatusNotifierWatcher";
const PATH: &str = "/StatusNotifierWatcher";
const ITEM_PATH: &str = "/StatusNotifierItem";
const ITEM: &str = "org.kde.StatusNotifierItem";
const MENU_PATH: &str = "/MenuBar";
const MENU: &str = "com.canonical.dbusmenu";

type Items = Arc<Mutex<Vec<String>>>;
/// A dbusmenu layout node: (id, properties, children).
type MenuNode = (i32, HashMap<String, OwnedValue>, Vec<OwnedValue>);

struct Watcher {
    items: Items,
}

#[zbus::interface(name = "org.kde.StatusNotifierWatcher")]
impl Watcher {
    async fn register_status_notifier_item(
        &mut self,
        service: String,
        #[zbus(header)] header: Header<'_>,
        #[zbus(signal_emitter)] emitter: SignalEmitter<'_>,
    ) {
        // An item names its bus name, or only its path (then the sender is the name).
        let name = if service.starts_with('/') {
            header.sender().map(ToString::to_string).unwrap_or_default()
        } else {
            service
        };
        self.items.lock().unwrap().push(name.clone());
        let _ = Self::status_notifier_item_registered(&emitter, &name).await;
    }

    fn register_status_notifier_host(&self, _service: String) {}

    #[zbus(property)]
    fn registered_status_notifier_items(&self) -> Vec<String> {
        self.items.lock().unwrap().clone()
    }

    #[zbus(property)]
    fn is_status_notifier_host_registered(&self) -> bool {
        true
    }

    #[zbus(property)]
    fn protocol_version(&self) -> i32 {
        0
    }

    #[zbus(signal)]
    async fn status_notifier_item_registered(
        emitter: &SignalEmitter<'_>,
        service: &str,
    ) -> zbus::Result<()>;

    #[zbus(signal)]
    async fn status_notifier_host_registered(emitter: &SignalEmitter<'_>) -> zbus::Result<()>;
}

/// The running watcher; stops when dropped.
pub struct Host {
    address: String,
    items: Items,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Host {
    /// Serves on the bus at `address`; returns once the name is owned.
    pub fn start(address: &str) -> Host {
        let items = Items::default();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let watcher = Watcher {
            items: items.clone(),
        };
        let bus = address.to_owned();
        let thread = std::thread::Builder::new()
            .name("sni-host".into())
            .spawn(move || {
                zbus::block_on(async move {
                    let connection = async {
                        zbus::connection::Builder::address(bus.as_str())?
                            .name(NAME)?
                            .serve_at(PATH, watcher)?
                            .build()
                            .await
                    }
                    .await;
                    match connection {
                        Ok(c) => {
                            let _ = ready_tx.send(Ok(()));
                            let _ = stopped.await;
                            drop(c);
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                        }
                    }
                });
            })
            .unwrap();
        ready
            .recv_timeout(Duration::from_secs(10))
            .expect("the StatusNotifierWatcher to start")
            .expect("the StatusNotifierWatcher to own its name");
        Host {
            address: address.to_owned(),
            items,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// The bus names of the items registered so far.
    pub fn items(&self) -> Vec<String> {
        self.items.lock().unwrap().clone()
    }

    /// A panel's left click on the item `name`.
    pub fn activate(&self, name: &str) {
        self.call(name, |proxy| async move {
            proxy.call_method("Activate", &(0i32, 0i32)).await.map(drop)
        })
        .expect("Activate");
    }

    /// A panel opening the item's menu: dbusmenu's `AboutToShow` on its root.
    pub fn open_menu(&self, name: &str) {
        let (address, name) = (self.address.clone(), name.to_owned());
        zbus::block_on(async move {
            let connection = zbus::connection::Builder::address(address.as_str())?
                .build()
                .await?;
            let menu = zbus::proxy::Builder::<zbus::Proxy<'_>>::new(&connection)
                .destination(name)?
                .path(MENU_PATH)?
                .interface(MENU)?
                .cache_properties(zbus::proxy::CacheProperties::No)
                .build()
                .await?;
            menu.call::<_, _, bool>("AboutToShow", &(0i32,))
                .await
                .map(drop)
        })
        .expect("AboutToShow");
    }

    /// A click on the item's menu entry whose label starts with `label` (the menu is
    /// `com.canonical.dbusmenu` at `/MenuBar`, as a panel reads it); answers the label.
    pub fn click_menu(&self, name: &str, label: &str) -> String {
        let (address, name, label) = (self.address.clone(), name.to_owned(), label.to_owned());
        zbus::block_on(async move {
            let connection = zbus::connection::Builder::address(address.as_str())?
                .build()
                .await?;
            let menu = zbus::proxy::Builder::<zbus::Proxy<'_>>::new(&connection)
                .destination(name)?
                .path(MENU_PATH)?
                .interface(MENU)?
                .cache_properties(zbus::proxy::CacheProperties::No)
                .build()
                .await?;
            let (_, (_, _, children)): (u32, MenuNode) = menu
                .call("GetLayout", &(0i32, -1i32, Vec::<String>::new()))
                .await?;
            for child in children {
                let value = match Value::from(child) {
                    Value::Value(inner) => *inner,
                    other => other,
                };
                let Ok((id, props, _)) =
                    <(i32, HashMap<String, Value<'_>>, Vec<Value<'_>>)>::try_from(value)
                else {
                    continue;
                };
                let text = match props.get("label") {
                    Some(Value::Str(text)) => text.to_string(),
                    _ => String::new(),
                };
                if text.starts_with(&label) {
                    let _: () = menu
                        .call("Event", &(id, "clicked", Value::from(0i32), 0u32))
                        .await?;
                    return Ok::<_, zbus::Error>(text);
                }
            }
            Err(zbus::Error::Failure(format!("no menu entry {label:?}")))
        })
        .expect("clicking the tray menu")
    }

    /// The item's tooltip: (title, description).
    pub fn tooltip(&self, name: &str) -> (String, String) {
        type ToolTip = (String, Vec<(i32, i32, Vec<u8>)>, String, String);
        let mut out = (String::new(), String::new());
        let got = self.call(name, |proxy| async move {
            proxy.get_property::<ToolTip>("ToolTip").await
        });
        if let Ok((_, _, title, description)) = got {
            out = (title, description);
        }
        out
    }

    fn call<T, F, Fut>(&self, name: &str, f: F) -> zbus::Result<T>
    where
        F: FnOnce(zbus::Proxy<'static>) -> Fut,
        Fut: std::future::Future<Output = zbus::Result<T>>,
    {
        let (address, name) = (self.address.clone(), name.to_owned());
        zbus::block_on(async move {
            let connection = zbus::connection::Builder::address(address.as_str())?
                .build()
                .await?;
            let proxy = zbus::proxy::Builder::new(&connection)
                .destination(name)?
                .path(ITEM_PATH)?
                .interface(ITEM)?
                .cache_properties(zbus::proxy::CacheProperties::No)
                .build()
                .await?;
            f(proxy).await
        })
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
