//! A recording notification server: `org.freedesktop.Notifications` at
//! `/org/freedesktop/Notifications` on a test's private bus, answering `Notify`,
//! `GetCapabilities`, `GetServerInformation` and `CloseNotification` the way a desktop's
//! daemon does, keeping every `Notify` call, and playing the owner's choice with
//! `ActionInvoked(id, key)` (a click on the body is the key `default`).
//!
//! [`Recorder::start_hung`] plays a registered but hung service instead: it records each
//! `Notify` and never answers it.
//!
//! It runs on a thread of its own, inside its own `zbus::block_on` (docs/tauri.md §7: a
//! blocking call on the thread that drives the server's connection would deadlock).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use zbus::object_server::SignalEmitter;

const NAME: &str = "org.freedesktop.Notifications";
const PATH: &str = "/org/freedesktop/Notifications";

/// One `Notify` call as the server saw it.
#[derive(Debug, Clone)]
pub struct NotifyCall {
    pub id: u32,
    pub app_name: String,
    pub summary: String,
    pub body: String,
    pub actions: Vec<String>,
}

type Calls = Arc<Mutex<Vec<NotifyCall>>>;

struct Server {
    calls: Calls,
    next_id: u32,
    hung: bool,
}

#[zbus::interface(name = "org.freedesktop.Notifications")]
impl Server {
    #[allow(clippy::too_many_arguments)]
    async fn notify(
        &mut self,
        app_name: String,
        replaces_id: u32,
        _app_icon: String,
        summary: String,
        body: String,
        actions: Vec<String>,
        _hints: HashMap<String, zbus::zvariant::OwnedValue>,
        _expire_timeout: i32,
    ) -> u32 {
        let id = if replaces_id == 0 {
            self.next_id += 1;
            self.next_id
        } else {
            replaces_id
        };
        self.calls.lock().unwrap().push(NotifyCall {
            id,
            app_name,
            summary,
            body,
            actions,
        });
        if self.hung {
            std::future::pending::<()>().await;
        }
        id
    }

    fn get_capabilities(&self) -> Vec<String> {
        ["actions", "body"].map(str::to_owned).to_vec()
    }

    fn get_server_information(&self) -> (String, String, String, String) {
        (
            "recorder".to_owned(),
            "taskkeeper tests".to_owned(),
            "1".to_owned(),
            "1.2".to_owned(),
        )
    }

    fn close_notification(&self, _id: u32) {}

    #[zbus(signal)]
    async fn action_invoked(
        emitter: &SignalEmitter<'_>,
        id: u32,
        action_key: &str,
    ) -> zbus::Result<()>;
}

enum Command {
    Invoke(u32, String, std::sync::mpsc::Sender<zbus::Result<()>>),
}

/// The running server; stops when dropped.
pub struct Recorder {
    calls: Calls,
    commands: Option<mpsc::UnboundedSender<Command>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Recorder {
    /// Serves on the bus at `address`; returns once the name is owned.
    pub fn start(address: &str) -> Recorder {
        Recorder::serve(address, false)
    }

    /// Owns the name but never answers a `Notify`.
    pub fn start_hung(address: &str) -> Recorder {
        Recorder::serve(address, true)
    }

    fn serve(address: &str, hung: bool) -> Recorder {
        let calls = Calls::default();
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (commands, mut inbox) = mpsc::unbounded_channel::<Command>();
        let server = Server {
            calls: calls.clone(),
            next_id: 0,
            hung,
        };
        let address = address.to_owned();
        let thread = std::thread::Builder::new()
            .name("notification-server".into())
            .spawn(move || {
                zbus::block_on(async move {
                    let built = async {
                        zbus::connection::Builder::address(address.as_str())?
                            .name(NAME)?
                            .serve_at(PATH, server)?
                            .build()
                            .await
                    }
                    .await;
                    let connection = match built {
                        Ok(c) => {
                            let _ = ready_tx.send(Ok(()));
                            c
                        }
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    while let Some(command) = inbox.recv().await {
                        match command {
                            Command::Invoke(id, key, done) => {
                                let emitted = async {
                                    let emitter = SignalEmitter::new(&connection, PATH)?;
                                    Server::action_invoked(&emitter, id, &key).await
                                }
                                .await;
                                let _ = done.send(emitted);
                            }
                        }
                    }
                });
            })
            .unwrap();
        ready
            .recv_timeout(Duration::from_secs(10))
            .expect("the notification server to start")
            .expect("the notification server to own its name");
        Recorder {
            calls,
            commands: Some(commands),
            thread: Some(thread),
        }
    }

    pub fn calls(&self) -> Vec<NotifyCall> {
        self.calls.lock().unwrap().clone()
    }

    /// The owner clicks the notification `id` (its body: action `default`).
    pub fn click(&self, id: u32) {
        self.invoke(id, "default");
    }

    /// The owner chooses the action `key` on the notification `id`: the server's
    /// `ActionInvoked` signal, as a desktop sends it.
    pub fn invoke(&self, id: u32, key: &str) {
        let (done, result) = std::sync::mpsc::channel();
        self.commands
            .as_ref()
            .unwrap()
            .send(Command::Invoke(id, key.to_owned(), done))
            .unwrap();
        result
            .recv_timeout(Duration::from_secs(10))
            .unwrap()
            .expect("emitting ActionInvoked");
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.commands.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
