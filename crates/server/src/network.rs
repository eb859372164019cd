//! The listener for askers on other machines: off unless the owner turns it on
//! (`taskkeeper serve --listen`, or the `network.*` settings, which the app and the window's
//! Settings change). It serves the rooms that say they are on the network
//! ([`crate::http::routes::Room::on_network`]: the cards, A2A, the askers' file fetch) behind
//! its own front ([`crate::http::network`]) instead of the loopback guard, over TLS the way
//! the settings say ([`crate::http::tls`]; behind a proxy, plain HTTP), with the handshake,
//! header and body timeouts. Over its own TLS it speaks HTTP/2 too (ALPN), for gRPC; plain
//! HTTP is HTTP/1.1 only.
//!
//! Started from flags, it stays as they say; started from the settings, it follows them: a
//! change of a `network.*` setting stops it and starts it again as they now say. What it is
//! doing (listening where, at which URL with which certificate, or why not) is a
//! [`NetworkStatus`] on a watch channel, for the owner service (`asker add`, the window) and
//! the log; plain HTTP beyond loopback runs only with the owner's word, and with a warning.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde::Serialize;
use taskkeeper_core::Clock;
use taskkeeper_core::network::{Network, Plan, Tls};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::http::auth::Credentials;
use crate::http::network::{Front, Timeouts};
use crate::http::tls::Certificates;
use crate::tasks::Tasks;

/// The calls one HTTP/2 connection may have open at once (hyper's default is 200): each
/// open call holds a stream's relay, and `network.streams_per_minute` counts per asker, not
/// per connection.
const HTTP2_STREAMS_PER_CONNECTION: u32 = 32;

/// Whether the network listener runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkState {
    #[default]
    Off,
    Listening,
    /// The settings do not make a listener, or it could not start: `error` says why.
    Failed,
}

/// What the network listener is doing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkStatus {
    pub state: NetworkState,
    /// Where it listens (the port chosen when the setting said 0).
    pub addr: Option<SocketAddr>,
    /// The URL askers reach it at (the cards name it).
    pub url: Option<String>,
    pub tls: Option<Tls>,
    /// The certificate it serves (with TLS here), whose fingerprint askers pin: read when
    /// asked ([`NetworkStatus::certificate_sha256`]), so a renewed file shows its new one.
    pub certificates: Option<Served>,
    /// What the owner is warned of while it runs (plain HTTP beyond loopback).
    pub warning: Option<String>,
    /// Why it does not run.
    pub error: Option<String>,
}

impl NetworkStatus {
    /// The SHA-256 fingerprint of the certificate served now, for askers to pin.
    pub fn certificate_sha256(&self) -> Option<String> {
        self.certificates.as_ref().map(|c| c.0.fingerprint())
    }
}

/// The listener's certificates, as the status holds them: two statuses are the same while they
/// name the same certificates (a renewal changes the certificate, not the status).
#[derive(Clone)]
pub struct Served(Arc<Certificates>);

impl PartialEq for Served {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Served {}

impl std::fmt::Debug for Served {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Served")
            .field(&self.0.fingerprint())
            .finish()
    }
}

/// Why the network listener did not start.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    #[error(transparent)]
    Plan(#[from] taskkeeper_core::network::PlanError),
    #[error(transparent)]
    Tls(#[from] crate::http::tls::TlsError),
    #[error("cannot listen on {addr} for askers on other machines: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

/// What the listener needs besides its settings.
#[derive(Clone)]
pub(crate) struct Supervisor {
    /// The rooms on the network, behind the body limit (`router::router`'s second).
    pub router: Router,
    pub credentials: Credentials,
    pub clock: Arc<dyn Clock>,
    pub data_dir: PathBuf,
    pub timeouts: Timeouts,
    /// The tasks, and through them the settings, where the front reads the numbers per minute.
    pub tasks: Tasks,
    pub status: Arc<watch::Sender<NetworkStatus>>,
}

/// A running listener.
pub(crate) struct Running {
    network: Network,
    handle: axum_server::Handle<SocketAddr>,
    server: JoinHandle<()>,
}

impl Running {
    async fn stop(self) {
        self.handle.graceful_shutdown(Some(Duration::from_secs(5)));
        let _ = self.server.await;
    }
}

impl Supervisor {
    /// Start what `network` says (nothing when it is off), and say so in the status.
    pub async fn start(&self, network: &Network) -> Result<Option<Running>, NetworkError> {
        let started = self.try_start(network).await;
        let status = match &started {
            Ok(Some((_, status))) => status.clone(),
            Ok(None) => NetworkStatus::default(),
            Err(e) => {
                tracing::error!(error = %e, "the network listener for askers is not running");
                NetworkStatus {
                    state: NetworkState::Failed,
                    error: Some(e.to_string()),
                    ..NetworkStatus::default()
                }
            }
        };
        self.status.send_replace(status);
        started.map(|s| s.map(|(running, _)| running))
    }

    async fn try_start(
        &self,
        network: &Network,
    ) -> Result<Option<(Running, NetworkStatus)>, NetworkError> {
        let Some(plan) = network.plan()? else {
            return Ok(None);
        };
        let listener =
            std::net::TcpListener::bind(plan.listen).map_err(|source| NetworkError::Listen {
                addr: plan.listen,
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| NetworkError::Listen {
                addr: plan.listen,
                source,
            })?;
        // Port 0 (tests): the URL and the names follow the port that was chosen.
        let plan = if plan.listen.port() == 0 {
            let mut chosen = network.clone();
            chosen.listen = Some(addr);
            chosen.plan()?.unwrap_or(plan)
        } else {
            plan
        };
        let certificates = match plan.tls {
            Tls::SelfSigned => Some(Arc::new(Certificates::self_signed(
                &self.data_dir,
                &plan.certificate_names,
            )?)),
            Tls::Files => match (&plan.cert_file, &plan.key_file) {
                (Some(cert), Some(key)) => Some(Arc::new(Certificates::files(cert, key)?)),
                _ => return Err(taskkeeper_core::network::PlanError::NoFiles.into()),
            },
            Tls::Proxy | Tls::Off => None,
        };
        let status = NetworkStatus {
            state: NetworkState::Listening,
            addr: Some(addr),
            url: Some(plan.public_url.clone()),
            tls: Some(plan.tls),
            certificates: certificates.clone().map(Served),
            warning: plan.warning.clone(),
            error: None,
        };
        let handle = axum_server::Handle::new();
        let server = self.serve(listener, &plan, certificates, handle.clone())?;
        match &plan.warning {
            Some(w) => tracing::warn!(%addr, url = %plan.public_url, "{w}"),
            None => tracing::info!(
                %addr,
                url = %plan.public_url,
                tls = plan.tls.as_str(),
                fingerprint = status.certificate_sha256().as_deref().unwrap_or("-"),
                "listening for askers on other machines"
            ),
        }
        Ok(Some((
            Running {
                network: network.clone(),
                handle,
                server,
            },
            status,
        )))
    }

    fn serve(
        &self,
        listener: std::net::TcpListener,
        plan: &Plan,
        certificates: Option<Arc<Certificates>>,
        handle: axum_server::Handle<SocketAddr>,
    ) -> Result<JoinHandle<()>, NetworkError> {
        let addr = plan.listen;
        let listen_error = |source| NetworkError::Listen { addr, source };
        let front = Arc::new(Front::new(
            plan.clone(),
            self.credentials.clone(),
            self.clock.clone(),
            certificates.clone(),
            self.timeouts,
            self.tasks.setting_store(),
        ));
        let app = self
            .router
            .clone()
            .layer(axum::middleware::from_fn_with_state(
                front,
                crate::http::network::front,
            ))
            // Outermost: the front's refusals of a gRPC call, as gRPC statuses.
            .layer(axum::middleware::from_fn(
                crate::http::grpc_refusals::as_grpc,
            ))
            .into_make_service_with_connect_info::<SocketAddr>();
        let mut server = axum_server::from_tcp(listener)
            .map_err(listen_error)?
            .handle(handle);
        if certificates.is_none() {
            // Plain HTTP is for a proxy in front, which speaks HTTP/1.1 to us; gRPC, which
            // needs HTTP/2 end to end, is announced only where TLS is served here.
            server = server.http1_only();
        }
        let builder = server.http_builder();
        builder
            .http1()
            .header_read_timeout(Some(self.timeouts.headers));
        builder
            .http2()
            .max_concurrent_streams(HTTP2_STREAMS_PER_CONNECTION)
            // A peer gone silent is found and its connection closed.
            .keep_alive_interval(Some(self.timeouts.headers))
            .keep_alive_timeout(self.timeouts.headers);
        let server = server.first_request_timeout(self.timeouts.headers);
        let task = match certificates {
            Some(certificates) => {
                let config = certificates.server_config()?;
                let acceptor = axum_server::tls_rustls::RustlsAcceptor::new(
                    axum_server::tls_rustls::RustlsConfig::from_config(config),
                )
                .handshake_timeout(self.timeouts.handshake);
                tokio::spawn(async move {
                    if let Err(e) = server.acceptor(acceptor).serve(app).await {
                        tracing::error!(error = %e, "the network listener stopped");
                    }
                })
            }
            None => tokio::spawn(async move {
                if let Err(e) = server.serve(app).await {
                    tracing::error!(error = %e, "the network listener stopped");
                }
            }),
        };
        Ok(task)
    }

    /// Follow the settings (unless `fixed`, from flags, says what to do): start, stop and
    /// start again as they change, until the daemon stops.
    pub async fn run(
        self,
        mut running: Option<Running>,
        fixed: bool,
        mut settings_changes: watch::Receiver<u64>,
        mut stop: watch::Receiver<bool>,
    ) {
        settings_changes.mark_unchanged();
        loop {
            if fixed {
                let _ = stop.wait_for(|s| *s).await;
                break;
            }
            let changed = tokio::select! {
                changed = settings_changes.changed() => changed.is_ok(),
                _ = stop.wait_for(|s| *s) => break,
            };
            if !changed {
                let _ = stop.wait_for(|s| *s).await;
                break;
            }
            let network = match self.tasks.settings().await {
                Ok(settings) => settings.network,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the network settings");
                    continue;
                }
            };
            let current = running.as_ref().map(|r| &r.network);
            let failed = self.status.borrow().state == NetworkState::Failed;
            let same = match current {
                Some(n) => n.same_listener(&network),
                None => network.listen.is_none() && !failed,
            };
            if same {
                continue;
            }
            if let Some(r) = running.take() {
                r.stop().await;
                tracing::info!("the network listener stopped for a change of its settings");
            }
            running = self.start(&network).await.unwrap_or(None);
        }
        if let Some(r) = running {
            r.stop().await;
        }
    }
}
