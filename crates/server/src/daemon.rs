//! Starting and stopping the daemon: the data directory, the store, the token, the listener
//! on 127.0.0.1, the router, and the housekeeping that prunes ended tasks and ended sessions
//! when they are due on the injected clock (and does nothing while nothing is due).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use taskkeeper_core::{Store, StoreError, StoreOptions};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::http::auth::Credentials;
use crate::http::guard::Guard;
use crate::owner::OwnerService;
use crate::tasks::Tasks;
use crate::token::{OWNER_FILE, Token, WORKER_FILE};
use crate::{DaemonConfig, http};

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("cannot create the data directory {path} or make it private: {source}")]
    DataDir {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot read or create the token file {path}: {source}")]
    Token {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(
        "port {port} on 127.0.0.1 is already in use; stop what uses it or choose another with --port / TASKKEEPER_PORT"
    )]
    PortInUse { port: u16 },
    #[error("cannot listen on 127.0.0.1:{port}: {source}")]
    Listen { port: u16, source: std::io::Error },
    #[error(transparent)]
    Ui(#[from] crate::http::ui::UiError),
    #[error(transparent)]
    Network(#[from] crate::network::NetworkError),
    #[error(transparent)]
    CardKey(#[from] crate::card_key::CardKeyError),
}

/// A running daemon.
#[derive(Debug)]
pub struct Daemon {
    addr: SocketAddr,
    owner: OwnerService,
    token: Token,
    worker_token: Token,
    credentials: Credentials,
    routes: Vec<crate::http::routes::RouteDoc>,
    store: Store,
    tasks: Tasks,
    stop: watch::Sender<bool>,
    server: JoinHandle<()>,
    housekeeping: JoinHandle<()>,
    conformance: Option<JoinHandle<()>>,
    watchdog: JoinHandle<()>,
    watchdog_passes: watch::Receiver<crate::watchdog::Pass>,
    delivery: crate::delivery::Delivery,
    pusher: JoinHandle<()>,
    push_wake: crate::a2a::pusher::Waker,
    push_looks: Arc<std::sync::atomic::AtomicU64>,
    digest_wake: Arc<tokio::sync::Notify>,
    /// The web UI's sign-in codes: their pages go when the daemon stops.
    ui_codes: crate::http::ui_codes::UiCodes,
    network: watch::Receiver<crate::network::NetworkStatus>,
    network_listener: JoinHandle<()>,
}

impl Daemon {
    /// Open the store, bind 127.0.0.1 and start serving. Refuses a second daemon on the same
    /// data directory, a damaged database and a port in use, each with its own error.
    pub async fn start(config: DaemonConfig) -> Result<Daemon, DaemonError> {
        let ours = [
            crate::logging::LOG_FILE,
            OWNER_FILE,
            WORKER_FILE,
            crate::http::tls::SELF_SIGNED_CERT,
            crate::http::tls::SELF_SIGNED_KEY,
            crate::http::tls::SELF_SIGNED_NAMES,
            crate::card_key::KEY_FILE,
        ];
        crate::private::secure_data_dir(&config.data_dir, &config.db_path(), &ours).map_err(
            |source| DaemonError::DataDir {
                path: config.data_dir.clone(),
                source,
            },
        )?;
        let db = config.db_path();
        let sync = config.synchronous;
        let store = tokio::task::spawn_blocking(move || {
            Store::open(
                &db,
                StoreOptions {
                    synchronous: sync,
                    ..Default::default()
                },
            )
        })
        .await
        .map_err(|e| StoreError::Open {
            path: config.db_path(),
            reason: e.to_string(),
        })??;

        let token_file = |file: &str| {
            Token::load_or_create(&config.data_dir, file).map_err(|source| DaemonError::Token {
                path: config.data_dir.join(file),
                source,
            })
        };
        let token = match &config.token {
            Some(t) => Token::new(t.clone()),
            None => token_file(OWNER_FILE)?,
        };
        let worker_token = token_file(WORKER_FILE)?;

        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, config.port))
            .await
            .map_err(|source| {
                if source.kind() == std::io::ErrorKind::AddrInUse {
                    DaemonError::PortInUse { port: config.port }
                } else {
                    DaemonError::Listen {
                        port: config.port,
                        source,
                    }
                }
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| DaemonError::Listen {
                port: config.port,
                source,
            })?;

        let askers = {
            let store = store.clone();
            tokio::task::spawn_blocking(move || store.askers())
                .await
                .map_err(|e| StoreError::Sqlite(e.to_string()))??
        };
        let credentials = Credentials::new(token.clone(), worker_token.clone(), &askers);
        let files = crate::files::Files::new(&config.data_dir, addr.port());
        let tasks = Tasks::new(store.clone(), config.clock.clone(), files.clone());
        let (stop, mut stopped) = watch::channel(false);
        let (network_status, network) = watch::channel(crate::network::NetworkStatus::default());
        let ports = {
            let network = network.clone();
            crate::a2a::push::DaemonPorts {
                loopback: addr.port(),
                network: Arc::new(move || network.borrow().addr.map(|a| a.port())),
            }
        };
        let pusher = crate::a2a::pusher::Pusher::new(tasks.clone(), ports.clone());
        let push_wake = pusher.waker();
        let push_looks = pusher.looks();
        let guard = Arc::new(Guard::new(credentials.clone(), addr.port()));
        let card_key = crate::card_key::CardKey::load_or_make(&config.data_dir)?;
        let a2a = crate::a2a::A2a {
            tasks: tasks.clone(),
            stop: stopped.clone(),
            port: addr.port(),
            ports,
            // The kit's strict v1.0 card check rejects v0.3's extra fields (a2a.md §10): the
            // conformance desk's card goes without them, the others keep them.
            card: crate::a2a::CardOptionsConfig {
                v03_fields: true,
                conformance_desk: config
                    .conformance
                    .then(|| crate::conformance::DESK.to_owned()),
            },
            slots: Default::default(),
            push: push_wake.clone(),
            outside: None,
            card_key: card_key.clone(),
            card_clock: Default::default(),
        };
        crate::conformance::prepare(&tasks, &config.data_dir, config.conformance).await?;
        // Cancelled at shutdown: ends any open MCP response so the graceful shutdown
        // does not wait on a connected client.
        let mcp_cancel = tokio_util::sync::CancellationToken::new();
        let mcp = crate::mcp::room(
            tasks.clone(),
            credentials.clone(),
            addr.port(),
            http::MAX_BODY,
            mcp_cancel.child_token(),
        );
        let notices = Arc::new(crate::notify::EventNotifier::new(config.notifier.clone()));
        let notifier: Arc<dyn crate::notify::Notifier> = notices.clone();
        let launch = crate::agents::launch::LaunchConfig {
            program: config.claude.clone(),
            codex: config.codex.clone(),
            gemini: config.gemini.clone(),
            port: addr.port(),
            credentials: credentials.clone(),
            worker_token: worker_token.clone(),
            dir: config.data_dir.join("launched"),
        };
        let sessions =
            crate::sessions::Sessions::new(tasks.clone(), stopped.clone(), notifier.clone());
        // The launcher keeps what it launched; delivery writes to those stdins.
        let launched = Arc::new(crate::agents::launched::Launched::default());
        let delivery = crate::delivery::Delivery::new(
            sessions.clone(),
            launched.clone(),
            |kind| crate::agents::adapter(kind).ways_in(),
            app_server_way(),
        );
        let launcher =
            crate::agents::launched::Launcher::new(delivery.clone(), launched, Some(launch));
        launcher.end_orphaned_headless().await?;
        let owner = OwnerService::new(
            tasks.clone(),
            credentials.clone(),
            launcher,
            stopped.clone(),
            crate::owner::agents::Machine {
                home: config.home.clone(),
                taskkeeper_bin: config.taskkeeper_bin.clone(),
                port: addr.port(),
            },
            network.clone(),
            card_key,
        );
        let ui_codes = crate::http::ui_codes::UiCodes::new(token.clone(), config.clock.clone())
            .with_pages(&config.data_dir, addr.port())
            .map_err(|source| DaemonError::DataDir {
                path: config.data_dir.join(crate::http::ui_codes::PAGES_DIR),
                source,
            })?;
        let ui = crate::http::ui::UiState {
            files: match &config.ui_dir {
                Some(dir) => Some(Arc::new(crate::http::ui::UiFiles::load(dir)?)),
                None => None,
            },
            codes: ui_codes.clone(),
        };
        let (app, network_router, routes) = crate::router::router(
            crate::router::Areas {
                owner: owner.clone(),
                a2a,
                mcp,
                delivery: delivery.clone(),
                credentials: credentials.clone(),
                notices: notices.clone(),
                ui,
            },
            guard,
        );

        let supervisor = crate::network::Supervisor {
            router: network_router,
            credentials: credentials.clone(),
            clock: config.clock.clone(),
            data_dir: config.data_dir.clone(),
            timeouts: config.network_timeouts,
            tasks: tasks.clone(),
            status: Arc::new(network_status),
        };
        let wanted = match &config.network {
            Some(flags) => flags.clone(),
            None => tasks.settings().await?.network,
        };
        let running = match supervisor.start(&wanted).await {
            Ok(running) => running,
            // From flags, `serve` says why it does not start; from the settings, the daemon
            // runs without it and the owner sees why (the status, the log).
            Err(e) if config.network.is_some() => return Err(e.into()),
            Err(_) => None,
        };
        let network_listener = tokio::spawn(supervisor.run(
            running,
            config.network.is_some(),
            owner.settings_changes(),
            stopped.clone(),
        ));

        tokio::spawn(crate::notify::follow_tasks(tasks.feed(), notifier.clone()));
        // Waiters re-check whenever a task changes.
        tokio::spawn(sessions.clone().follow_tasks(stopped.clone()));
        tokio::spawn(delivery.clone().deliver_loop());
        let watchdog = crate::watchdog::Watchdog::new(
            tasks.clone(),
            sessions.clone(),
            notifier,
            owner.schedule_changed(),
        );
        let watchdog_passes = watchdog.passes();
        let watchdog = tokio::spawn(watchdog.run(stopped.clone()));
        tokio::spawn(crate::owner::autolaunch::run(
            owner.clone(),
            stopped.clone(),
        ));
        let digest_wake = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(crate::owner::digest::run(
            owner.clone(),
            notices.clone(),
            digest_wake.clone(),
            config.utc_offset_s,
            stopped.clone(),
        ));
        let pusher = tokio::spawn(pusher.run(stopped.clone()));
        let conformance = config
            .conformance
            .then(|| tokio::spawn(crate::conformance::run(tasks.clone(), stopped.clone())));
        let mut stopped_for_server = stopped.clone();
        let server = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped_for_server.wait_for(|s| *s).await;
                mcp_cancel.cancel();
            };
            if let Err(e) = axum::serve(listener, app)
                .with_graceful_shutdown(shutdown)
                .await
            {
                tracing::error!(error = %e, "the HTTP server stopped");
            }
        });

        let housekeeping = {
            let tasks = tasks.clone();
            let mut session_changes = sessions.session_changes();
            tokio::spawn(async move {
                loop {
                    let next = prune_due(&tasks, &files).await;
                    let sleep = next.unwrap_or(Duration::from_secs(86_400));
                    // A session that just ended (or a clock that moved) may make something
                    // due before the planned wake.
                    let session_changed = async {
                        if session_changes.changed().await.is_err() {
                            std::future::pending::<()>().await;
                        }
                    };
                    tokio::select! {
                        _ = tokio::time::sleep(sleep) => {}
                        () = session_changed => {}
                        _ = stopped.wait_for(|s| *s) => return,
                    }
                }
            })
        };

        tracing::info!(%addr, data_dir = %config.data_dir.display(), "daemon started");
        Ok(Daemon {
            addr,
            owner,
            token,
            worker_token,
            credentials,
            routes,
            store,
            tasks,
            stop,
            server,
            housekeeping,
            conformance,
            watchdog,
            watchdog_passes,
            delivery,
            pusher,
            push_wake,
            push_looks,
            digest_wake,
            ui_codes,
            network,
            network_listener,
        })
    }

    /// What the network listener for askers on other machines is doing.
    pub fn network(&self) -> crate::network::NetworkStatus {
        self.network.borrow().clone()
    }

    /// Follows the network listener's status: tests wait for a change instead of sleeping.
    pub fn network_changes(&self) -> watch::Receiver<crate::network::NetworkStatus> {
        self.network.clone()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Follows the watchdog's passes: tests wait for one instead of sleeping.
    pub fn watchdog_passes(&self) -> watch::Receiver<crate::watchdog::Pass> {
        self.watchdog_passes.clone()
    }

    /// The delivery service (tests count its waiters' wakes).
    pub fn delivery(&self) -> &crate::delivery::Delivery {
        &self.delivery
    }

    pub fn owner(&self) -> OwnerService {
        self.owner.clone()
    }

    /// The owner's token.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The token of this machine's agent sessions (the hook helper, MCP).
    pub fn worker_token(&self) -> &Token {
        &self.worker_token
    }

    /// The proof a session presents to say it is `session` (what its hooks add to its MCP
    /// calls); for tests and the launcher.
    pub fn session_proof(&self, session: &str) -> String {
        self.credentials.session_proof(session)
    }

    /// Every route with who may call it: the table in ARCHITECTURE.md.
    pub fn routes(&self) -> &[crate::http::routes::RouteDoc] {
        &self.routes
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Whether session `id` has an asyncRewake waiter parked: the signal tests wait on.
    pub fn has_waiter(&self, id: &str) -> bool {
        self.delivery
            .has_waiter(&taskkeeper_core::SessionId::from(id))
    }

    /// The task service (tests count a task's followers with it).
    pub fn tasks(&self) -> &Tasks {
        &self.tasks
    }

    /// Make the push sender look at its queue now: for tests that moved the injected clock
    /// past a retry (it otherwise looks again within 30 s).
    pub fn wake_push(&self) {
        self.push_wake.notify_one();
    }

    /// How many times the push sender has read its queue since the start.
    pub fn push_looks(&self) -> u64 {
        self.push_looks.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Make the digest's offer look at the clock now (for tests that moved it).
    pub fn wake_digest(&self) {
        self.digest_wake.notify_one();
    }

    /// Make the desks that launch by themselves look at the clock now (for tests that moved
    /// it).
    pub fn wake_auto_launch(&self) {
        self.owner.auto_launches().poke();
    }

    /// Make the stalls the owner snoozed look at the clock now (for tests that moved it).
    pub fn wake_snoozes(&self) {
        self.owner.wake_snoozes();
    }

    /// How many times the snoozed stalls have looked at the clock since the start.
    pub fn snooze_looks(&self) -> u64 {
        self.owner.snooze_looks()
    }

    /// How many times the auto-launch loop has looked at the desks since the start.
    pub fn auto_launch_looks(&self) -> u64 {
        self.owner.auto_launches().looks()
    }

    /// Stop accepting requests, let those in flight finish, and stop.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        self.owner.launcher().stop_all_launched().await;
        let _ = self.server.await;
        let _ = self.housekeeping.await;
        let _ = self.watchdog.await;
        let _ = self.pusher.await;
        let _ = self.network_listener.await;
        if let Some(worker) = self.conformance {
            let _ = worker.await;
        }
        // Release the database now, whatever still holds a clone of the store (an MCP
        // session, a finished stream's task): a restart must find it free.
        let store = self.store.clone();
        let _ = tokio::task::spawn_blocking(move || store.close()).await;
        self.ui_codes.remove_pages();
        tracing::info!("daemon stopped");
    }
}

/// Prune what is due (ended tasks after `tasks.keep_ended`, ended sessions after
/// `sessions.keep_ended`); return how long until the next is due, if anything is kept. Only
/// reads while nothing is due. Tasks go through the task service, like every task write.
async fn prune_due(tasks: &Tasks, files: &crate::files::Files) -> Option<Duration> {
    let now = tasks.now();
    let result = async {
        let (keep_tasks, keep_sessions, tasks_due) = tasks.housekeeping().tasks_due().await?;
        if tasks_due {
            let pruned = tasks.prune_ended(keep_tasks).await?;
            if pruned > 0 {
                tracing::info!(pruned, "pruned ended tasks");
                // A pruned task's files go with it.
                let removed = tasks.housekeeping().prune_files(files.clone()).await?;
                match removed {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(tasks = n, "removed the files of pruned tasks"),
                    Err(e) => {
                        tracing::warn!(error = %e, "removing the files of pruned tasks failed")
                    }
                }
            }
        }
        tasks
            .housekeeping()
            .prune_sessions(keep_tasks, keep_sessions)
            .await
    }
    .await;
    match result {
        Ok(next) => next.map(|t| t.since(now).max(Duration::from_secs(1))),
        Err(e) => {
            tracing::warn!(error = %e, "pruning ended tasks failed; trying again in an hour");
            Some(Duration::from_secs(3600))
        }
    }
}

/// How delivery reaches an idle session through its agent's own server: Codex's app server,
/// where it runs (a Unix socket).
fn app_server_way() -> std::sync::Arc<dyn crate::delivery::AppServerWay> {
    #[cfg(unix)]
    return std::sync::Arc::new(crate::agents::codex::wake::CodexAppServer);
    #[cfg(not(unix))]
    return std::sync::Arc::new(NoAppServer);
}

/// Where no app server is reached (no Unix sockets): the way is never taken.
#[cfg(not(unix))]
#[derive(Debug)]
struct NoAppServer;

#[cfg(not(unix))]
impl crate::delivery::AppServerWay for NoAppServer {
    fn start_turn<'a>(
        &'a self,
        _session: &'a taskkeeper_core::Session,
        _text: &'a str,
        _written: &'a (dyn Fn() + Send + Sync),
    ) -> futures_util::future::BoxFuture<'a, crate::delivery::Pushed> {
        Box::pin(async { crate::delivery::Pushed::Failed("no app server on this system".into()) })
    }
}
