//! The push sender: the store queues each change's pushes in the change's own transaction
//! (core `store/push.rs`), and the [`Pusher`], woken by the changes that queued one (the task
//! service tells it; a change of a task without a webhook does not wake it) and on the
//! injected clock for retries, posts the head of each webhook's queue, one at a time per
//! webhook so each gets its pushes in order, as the StreamResponse a stream would carry (in
//! v0.3, the bare v0.3 object), and reports each attempt back to the store, which retries
//! with backoff and drops what still fails after `push.give_up_after`.
//!
//! The addresses a name resolves to are checked at connect time ([`CheckedResolver`], by
//! [`super::push`]'s rules), so a name that rebinds to a private or loopback address after it
//! was checked is still refused. `https://` webhooks are verified against the system's root
//! certificates and the owner's extra roots (`push.extra_roots`, read again when the file
//! changes), with rustls on the daemon's one crypto provider (ring).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde_json::Value;
use taskkeeper_core::TaskId;
use taskkeeper_core::push::{Attempted, Delivery, PushItem};
use taskkeeper_core::settings::Push;
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::push::{DaemonPorts, on_daemon_port, refuse};
use super::wire::{self, Dialect, Shape};
use crate::tasks::Tasks;

/// The header A2A's reference SDK carries the config's `token` in (the spec names none).
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// How long one POST may take before it counts as failed.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the pusher sleeps while something is queued (the clock may have moved).
const CAP: Duration = Duration::from_secs(30);
/// Heads taken per pass.
const PASS: u32 = 256;

/// The body of one push: the StreamResponse (v1.0) or the bare v0.3 object, as a stream
/// would carry it.
pub fn body(d: &Delivery) -> Value {
    let dialect = if d.config.version == "0.3" {
        Dialect::V03
    } else {
        Dialect::V1
    };
    let t = &d.task;
    let (item, v1) = match (d.item, t.artifacts.first()) {
        (PushItem::Task, _) => ("task", wire::task_v1(t, Shape::FULL)),
        (item @ (PushItem::ArtifactUpdate | PushItem::ArtifactAppend), Some(a)) => {
            let change = taskkeeper_core::ArtifactChange {
                artifact: a.clone(),
                append: item == PushItem::ArtifactAppend,
                last_chunk: !t.artifacts_in_progress.contains(&a.artifact_id),
            };
            ("artifactUpdate", wire::artifact_update_v1(t, &change))
        }
        (PushItem::StatusUpdate | PushItem::ArtifactUpdate | PushItem::ArtifactAppend, _) => {
            ("statusUpdate", wire::status_update_v1(t))
        }
    };
    wire::stream_item(dialect, item, v1, !t.is_open())
}

/// Resolves a webhook's name and refuses it when any of its addresses is one pushes may not
/// go to: the check at connect time, on the addresses the connection will use. A resolver
/// is not told the port, so the pusher has one client for webhooks on the daemon's own port
/// (`on_daemon_port`, where this machine is refused whatever the settings) and one for the
/// rest.
struct CheckedResolver {
    tasks: Tasks,
    on_daemon_port: bool,
}

impl Resolve for CheckedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let tasks = self.tasks.clone();
        let on_daemon_port = self.on_daemon_port;
        Box::pin(async move {
            let settings = tasks.setting_store().get().await?;
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            for a in &addrs {
                refuse(a.ip(), on_daemon_port, &settings.push)
                    .map_err(|e| format!("{host} resolves to {}: {e}", a.ip()))?;
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

/// Wakes the pusher: a change queued a push (`Tasks::push_wake`, the same one), a config was
/// set (its first push is queued), or the clock moved.
pub type Waker = Arc<Notify>;

/// The sender loop (see the module docs).
pub struct Pusher {
    tasks: Tasks,
    clients: Clients,
    wake: Waker,
    /// Reads of the push queue so far: a test counts them to know a change of a task
    /// without a webhook did not make one.
    looks: Arc<std::sync::atomic::AtomicU64>,
}

impl std::fmt::Debug for Pusher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pusher").finish_non_exhaustive()
    }
}

/// The HTTP clients pushes go out through, and the daemon's port they tell apart. They are
/// made again when the owner's extra roots change (the setting, or the file's contents).
#[derive(Clone)]
struct Clients {
    tasks: Tasks,
    ports: DaemonPorts,
    built: Arc<Mutex<Option<(Roots, ClientPair)>>>,
}

/// The pair of clients one set of trusted roots makes.
#[derive(Clone)]
struct ClientPair {
    /// For webhooks on the daemon's own port.
    on_daemon_port: reqwest::Client,
    other: reqwest::Client,
}

/// Which extra roots a pair was made with: the file, its modification time and length.
type Roots = Option<(PathBuf, SystemTime, u64)>;

/// Why no client could be made for a push (it is retried): names the setting and the fix.
fn roots_error(path: &Path, why: impl std::fmt::Display) -> String {
    format!(
        "push.extra_roots {}: {why}; give a PEM file of CA certificates, or empty the setting",
        path.display()
    )
}

/// The TLS set-up of an `https://` push: the system's roots and `extra`, on ring (the
/// daemon's one crypto provider, as `http::tls::provider`), HTTP/1.1.
fn tls_config(extra: Vec<CertificateDer<'static>>) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier =
        rustls_platform_verifier::Verifier::new_with_extra_roots(extra, Arc::clone(&provider))
            .map_err(|e| format!("cannot load the root certificates for https:// pushes: {e}"))?;
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

impl Clients {
    fn new(tasks: &Tasks, ports: DaemonPorts) -> Self {
        Self {
            tasks: tasks.clone(),
            ports,
            built: Arc::default(),
        }
    }

    /// What `push` says the extra roots are, as of now.
    fn roots(push: &Push) -> Result<Roots, String> {
        let Some(path) = &push.extra_roots else {
            return Ok(None);
        };
        let meta = std::fs::metadata(path).map_err(|e| roots_error(path, e))?;
        let modified = meta.modified().map_err(|e| roots_error(path, e))?;
        Ok(Some((path.clone(), modified, meta.len())))
    }

    fn make(&self, roots: &Roots) -> Result<ClientPair, String> {
        let extra = match roots {
            None => Vec::new(),
            Some((path, ..)) => {
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                    .and_then(|certs| certs.collect())
                    .map_err(|e| roots_error(path, e))?;
                if certs.is_empty() {
                    return Err(roots_error(path, "it holds no certificate"));
                }
                certs
            }
        };
        let tls = tls_config(extra)?;
        let client = |on_daemon_port| {
            reqwest::Client::builder()
                .no_proxy()
                // A redirect could lead anywhere; a webhook answers where it is.
                .redirect(reqwest::redirect::Policy::none())
                .timeout(SEND_TIMEOUT)
                // Each push connects anew, so each is checked on the address it uses, under
                // the settings of the moment.
                .pool_max_idle_per_host(0)
                .dns_resolver(Arc::new(CheckedResolver {
                    tasks: self.tasks.clone(),
                    on_daemon_port,
                }))
                .tls_backend_preconfigured(tls.clone())
                .build()
                .map_err(|e| format!("cannot make the push client: {e}"))
        };
        Ok(ClientPair {
            on_daemon_port: client(true)?,
            other: client(false)?,
        })
    }

    /// The client for a push to `url` under `push`.
    fn for_url(&self, url: &Url, push: &Push) -> Result<reqwest::Client, String> {
        let roots = Self::roots(push)?;
        let mut built = self.built.lock().unwrap_or_else(|e| e.into_inner());
        let pair = match &*built {
            Some((made_with, pair)) if *made_with == roots => pair.clone(),
            _ => {
                let pair = self.make(&roots)?;
                *built = Some((roots, pair.clone()));
                pair
            }
        };
        Ok(if on_daemon_port(url, &self.ports) {
            pair.on_daemon_port
        } else {
            pair.other
        })
    }
}

impl Pusher {
    /// The sender for a daemon listening on `ports`, where no push goes.
    pub fn new(tasks: Tasks, ports: DaemonPorts) -> Self {
        let clients = Clients::new(&tasks, ports);
        // Told by the task service after each change that queued a push: a change of a task
        // without a webhook does not wake this loop.
        let wake = tasks.push_wake();
        Self {
            tasks,
            clients,
            wake,
            looks: Arc::default(),
        }
    }

    pub fn waker(&self) -> Waker {
        Arc::clone(&self.wake)
    }

    /// Counts the loop's reads of the push queue (see [`Pusher::looks`]).
    pub fn looks(&self) -> Arc<std::sync::atomic::AtomicU64> {
        Arc::clone(&self.looks)
    }

    /// Post what is due, until `stop`; a send in flight at the stop is abandoned and stays
    /// queued for the next start (at least once).
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        // The wake keeps a permit: a push queued before the first read is not missed.
        let mut sending: JoinSet<()> = JoinSet::new();
        let mut in_flight: HashSet<(TaskId, String)> = HashSet::new();
        let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<(TaskId, String)>();
        loop {
            while let Ok(key) = done_rx.try_recv() {
                in_flight.remove(&key);
            }
            let now = self.tasks.now();
            // What is due and when the next is, in one trip to the blocking pool: this runs
            // after every change of any task.
            let (due, next) = match self.tasks.push_store().due(now, PASS).await {
                Ok(read) => read,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the push queue; trying again soon");
                    (Vec::new(), None)
                }
            };
            self.looks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            for d in due {
                let key = (d.config.task_id.clone(), d.config.id.clone());
                if !in_flight.insert(key.clone()) {
                    continue;
                }
                let (tasks, clients, done) =
                    (self.tasks.clone(), self.clients.clone(), done_tx.clone());
                sending.spawn(async move {
                    deliver(&tasks, &clients, d).await;
                    let _ = done.send(key);
                });
            }
            // Something due is in flight: its end wakes the loop, not a timer.
            let sleep = next.filter(|at| *at > now).map(|at| at.since(now).min(CAP));
            let timer = async {
                match sleep {
                    Some(d) => tokio::time::sleep(d).await,
                    None if next.is_some() && in_flight.is_empty() => tokio::time::sleep(CAP).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = self.wake.notified() => {}
                Some(_) = sending.join_next() => {}
                () = timer => {}
                _ = stop.wait_for(|s| *s) => break,
            }
        }
        sending.shutdown().await;
    }
}

/// One attempt at `d`, reported to the store.
async fn deliver(tasks: &Tasks, clients: &Clients, d: Delivery) {
    let outcome = post(tasks, clients, &d).await;
    let (seq, failure) = (d.seq, outcome.clone().err());
    let attempted = tasks.push_store().attempted(seq, outcome).await;
    let (task, config) = (d.config.task_id.as_str(), d.config.id.as_str());
    match attempted {
        Ok(Attempted::Delivered) => {
            tracing::debug!(task, config, item = d.item.as_str(), "push delivered")
        }
        Ok(Attempted::Retry { at }) => tracing::info!(
            task,
            config,
            error = failure.as_deref().unwrap_or(""),
            retry_at = %at,
            "push failed; trying again later"
        ),
        Ok(Attempted::Dropped { attempts, age }) => tracing::warn!(
            task,
            config,
            url = %d.config.url,
            attempts,
            age_s = age.as_secs(),
            error = failure.as_deref().unwrap_or(""),
            "push dropped: still failing after push.give_up_after"
        ),
        Ok(Attempted::Gone) => {}
        Err(e) => {
            tracing::warn!(task, config, error = %e, "cannot record a push attempt; it stays queued")
        }
    }
}

/// POST one push; `Err` says why it did not arrive.
async fn post(tasks: &Tasks, clients: &Clients, d: &Delivery) -> Result<(), String> {
    let settings = tasks
        .setting_store()
        .get()
        .await
        .map_err(|e| e.to_string())?;
    let url = Url::parse(&d.config.url).map_err(|e| e.to_string())?;
    // A literal address never reaches the resolver: check it here (the setting may have
    // changed since the config was set).
    let on_daemon_port = on_daemon_port(&url, &clients.ports);
    match url.host() {
        Some(url::Host::Ipv4(ip)) => refuse(IpAddr::V4(ip), on_daemon_port, &settings.push)?,
        Some(url::Host::Ipv6(ip)) => refuse(IpAddr::V6(ip), on_daemon_port, &settings.push)?,
        _ => {}
    }
    let mut request = clients
        .for_url(&url, &settings.push)?
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body(d).to_string());
    if let Some(a) = &d.config.auth {
        let value = match &a.credentials {
            Some(c) => format!("{} {c}", a.scheme),
            None => a.scheme.clone(),
        };
        request = request.header(reqwest::header::AUTHORIZATION, value);
    }
    if let Some(t) = &d.config.token {
        request = request.header(TOKEN_HEADER, t);
    }
    let response = request.send().await.map_err(|e| {
        // The chain says why (refused address, connection refused, timeout).
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            text.push_str(": ");
            text.push_str(&s.to_string());
            source = s.source();
        }
        text
    })?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("the webhook answered HTTP {}", status.as_u16()))
    }
}
