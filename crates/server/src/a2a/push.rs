//! Push notifications (A2A §3.1.7–3.1.10, TaskPushNotificationConfig): an asker that does not
//! hold a connection open names a webhook for its task, and the daemon POSTs every change of
//! the task there as the StreamResponse a stream would carry (in v0.3, the bare v0.3 object).
//!
//! Two halves. The methods (Create/Get/List/Delete, v0.3's `tasks/pushNotificationConfig/*`
//! and the config inline in SendMessage) check the target when it is set: `http://` or
//! `https://`, public addresses; this machine only when the owner allows it
//! (`push.allow_loopback_targets`) and never on the daemon's own port; the private,
//! link-local, shared and other special ranges only when the owner allows them
//! (`push.allow_private_targets`); the rule is `core::push::target_refusal`. The
//! [`Pusher`] sends: the store queues each change's pushes in the change's own transaction
//! (core `store/push.rs`), and the pusher, woken by the changes that queued one (the task
//! service tells it; a change of a task without a webhook does not wake it) and on the
//! injected clock for retries, posts the head of each webhook's queue, one at a time per webhook so each
//! gets its pushes in order, and reports each attempt back to the store, which retries with
//! backoff and drops what still fails after `push.give_up_after`. The addresses a name
//! resolves to are checked again at connect time ([`CheckedResolver`]), so a name that
//! rebinds to a private or loopback address after it was checked is still refused; that check
//! is the one that counts, so a name that does not resolve when the webhook is set is taken
//! (an asker may name a host this machine cannot resolve yet) and judged at each connection.
//! `https://` webhooks are verified against the system's root certificates and the owner's
//! extra roots (`push.extra_roots`), with rustls on the daemon's one crypto provider (ring).

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use taskkeeper_core::push::{
    self, Attempted, Delivery, NewPushConfig, PushAuth, PushConfig, PushItem,
};
use taskkeeper_core::settings::Push;
use taskkeeper_core::{Task, TaskId};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

use super::rpc::RpcError;
use super::wire::{self, Dialect, Shape};
use super::{Ctx, decode, own_task};
use crate::tasks::Tasks;

/// The header A2A's reference SDK carries the config's `token` in (the spec names none).
pub const TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// How long one POST may take before it counts as failed.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest the pusher sleeps while something is queued (the clock may have moved).
const CAP: Duration = Duration::from_secs(30);
/// Heads taken per pass.
const PASS: u32 = 256;
const URL_MAX: usize = 2048;
const SECRET_MAX: usize = 4096;

// ---- the methods ----------------------------------------------------------------------

/// AuthenticationInfo, v1.0 (`scheme`) and v0.3 (`schemes[]`) alike.
#[derive(Debug, Default, Deserialize)]
struct AuthIn {
    #[serde(default)]
    scheme: Option<String>,
    #[serde(default)]
    schemes: Option<Vec<String>>,
    #[serde(default)]
    credentials: Option<String>,
}

/// A push config as either version writes it; nested (`pushNotificationConfig`, `config`)
/// or flat (v1.0's TaskPushNotificationConfig).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigIn {
    #[serde(default, alias = "task_id")]
    task_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    authentication: Option<AuthIn>,
    #[serde(default, alias = "push_notification_config", alias = "config")]
    push_notification_config: Option<Box<ConfigIn>>,
}

fn version_of(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::V1 => "1.0",
        Dialect::V03 => "0.3",
    }
}

/// The asker's config as the store keeps it, or what is wrong with it (naming the field).
fn new_config(raw: ConfigIn, dialect: Dialect) -> Result<NewPushConfig, RpcError> {
    let (outer_id, inner) = match raw.push_notification_config {
        Some(inner) => (raw.id, *inner),
        None => (None, raw),
    };
    let url = inner.url.filter(|u| !u.trim().is_empty()).ok_or_else(|| {
        RpcError::invalid_params("url: a push notification config needs the webhook's url")
    })?;
    if url.len() > URL_MAX {
        return Err(RpcError::invalid_params(format!(
            "url: at most {URL_MAX} characters"
        )));
    }
    let auth = match inner.authentication {
        None => None,
        Some(a) => {
            let scheme = a
                .scheme
                .or_else(|| a.schemes.and_then(|s| s.into_iter().next()))
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    RpcError::invalid_params(
                        "authentication.scheme: name the HTTP scheme, such as Bearer",
                    )
                })?;
            let header = match &a.credentials {
                Some(c) => format!("{scheme} {c}"),
                None => scheme.clone(),
            };
            if !scheme
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-._~+!#$%&'*^`|".contains(&b))
                || header.len() > SECRET_MAX
                || reqwest::header::HeaderValue::from_str(&header).is_err()
            {
                return Err(RpcError::invalid_params(format!(
                    "authentication: scheme and credentials must make a valid Authorization header of at most {SECRET_MAX} bytes (visible ASCII, no line breaks)"
                )));
            }
            Some(PushAuth {
                scheme,
                credentials: a.credentials,
            })
        }
    };
    if let Some(t) = &inner.token
        && (t.len() > SECRET_MAX || reqwest::header::HeaderValue::from_str(t).is_err())
    {
        return Err(RpcError::invalid_params(format!(
            "token: at most {SECRET_MAX} bytes of visible ASCII, no line breaks"
        )));
    }
    Ok(NewPushConfig {
        id: inner.id.or(outer_id).filter(|id| !id.is_empty()),
        url,
        token: inner.token.filter(|t| !t.is_empty()),
        auth,
        version: version_of(dialect).to_owned(),
    })
}

/// Where a webhook may point (`core::push::target_refusal`): `http://` or
/// `https://` to a public address; this machine and the special ranges only as the owner
/// allows; this daemon's port never. The `url` crate's host parser has already normalised
/// every IPv4 spelling (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) and the bracketed
/// IPv6 forms; a name is resolved and each of its addresses checked. A name that does not
/// resolve now is taken: every push checks the addresses it connects to ([`CheckedResolver`]).
pub(crate) async fn check_target(
    url: &str,
    settings: &Push,
    ports: &DaemonPorts,
) -> Result<(), String> {
    let parsed =
        Url::parse(url).map_err(|e| format!("url {url:?} is not an absolute URL ({e})"))?;
    match parsed.scheme() {
        "http" | "https" => {}
        other => {
            return Err(format!(
                "url {url:?}: the scheme must be http or https, not {other}"
            ));
        }
    }
    let Some(port) = parsed.port_or_known_default() else {
        return Err(format!("url {url:?} has no port"));
    };
    let on_daemon_port = ports.holds(port);
    let addrs: Vec<IpAddr> = match parsed.host() {
        Some(url::Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
        Some(url::Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
        Some(url::Host::Domain(name)) => match tokio::net::lookup_host((name, port)).await {
            Ok(found) => found.map(|a| a.ip()).collect(),
            // Judged when a push connects, on the addresses it gets then.
            Err(_) => Vec::new(),
        },
        None => return Err(format!("url {url:?} has no host")),
    };
    for ip in addrs {
        refuse(ip, on_daemon_port, settings)?;
    }
    Ok(())
}

/// The ports this daemon answers on, where no push goes: the loopback listener's, and the
/// network listener's while it runs (it starts, stops and moves with the settings).
#[derive(Clone)]
pub struct DaemonPorts {
    pub loopback: u16,
    pub network: Arc<dyn Fn() -> Option<u16> + Send + Sync>,
}

impl std::fmt::Debug for DaemonPorts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DaemonPorts")
            .field("loopback", &self.loopback)
            .field("network", &(self.network)())
            .finish()
    }
}

impl DaemonPorts {
    /// Whether this daemon answers on `port`.
    fn holds(&self, port: u16) -> bool {
        port == self.loopback || (self.network)() == Some(port)
    }
}

/// Whether a webhook URL names a port this daemon listens on.
fn on_daemon_port(url: &Url, ports: &DaemonPorts) -> bool {
    url.port_or_known_default()
        .is_some_and(|port| ports.holds(port))
}

fn refuse(ip: IpAddr, on_daemon_port: bool, settings: &Push) -> Result<(), String> {
    match push::target_refusal(ip, on_daemon_port, settings) {
        None => Ok(()),
        Some(why) => Err(format!("the webhook address {ip} is {why}")),
    }
}

/// The config from a request, its target checked against the current settings.
pub(super) async fn checked_config(ctx: &Ctx, raw: Value) -> Result<NewPushConfig, RpcError> {
    checked(ctx, decode(raw)?).await
}

async fn checked(ctx: &Ctx, raw: ConfigIn) -> Result<NewPushConfig, RpcError> {
    let config = new_config(raw, ctx.dialect)?;
    let settings = super::settings_of(ctx).await?;
    check_target(&config.url, &settings.push, &ctx.a2a.ports)
        .await
        .map_err(RpcError::invalid_params)?;
    Ok(config)
}

/// A config on the wire, in the request's dialect.
fn config_json(c: &PushConfig, dialect: Dialect) -> Value {
    let mut inner = Map::new();
    inner.insert("id".into(), json!(c.id));
    inner.insert("url".into(), json!(c.url));
    if let Some(t) = &c.token {
        inner.insert("token".into(), json!(t));
    }
    if let Some(a) = &c.auth {
        let mut auth = Map::new();
        match dialect {
            Dialect::V1 => auth.insert("scheme".into(), json!(a.scheme)),
            Dialect::V03 => auth.insert("schemes".into(), json!([a.scheme])),
        };
        if let Some(cred) = &a.credentials {
            auth.insert("credentials".into(), json!(cred));
        }
        inner.insert("authentication".into(), Value::Object(auth));
    }
    match dialect {
        Dialect::V1 => {
            inner.insert("taskId".into(), json!(c.task_id));
            Value::Object(inner)
        }
        Dialect::V03 => json!({"taskId": c.task_id, "pushNotificationConfig": inner}),
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConfigRef {
    /// v1.0: the task; v0.3: `id` is the task and `pushNotificationConfigId` the config.
    #[serde(default, alias = "task_id")]
    task_id: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default, alias = "push_notification_config_id")]
    push_notification_config_id: Option<String>,
}

impl ConfigRef {
    /// (task, config) as the dialect names them.
    fn ids(self, dialect: Dialect) -> Result<(String, Option<String>), RpcError> {
        let (task, config) = match dialect {
            Dialect::V1 => (self.task_id, self.id.or(self.push_notification_config_id)),
            Dialect::V03 => (self.task_id.or(self.id), self.push_notification_config_id),
        };
        let task = task.filter(|t| !t.is_empty()).ok_or_else(|| {
            RpcError::invalid_params(match dialect {
                Dialect::V1 => "taskId: name the task",
                Dialect::V03 => "id: name the task",
            })
        })?;
        Ok((task, config.filter(|c| !c.is_empty())))
    }
}

fn no_config(task: &str, id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "task {task} has no push notification config {id}; ListTaskPushNotificationConfigs shows its configs"
    ))
    .with("taskId", task)
}

/// CreateTaskPushNotificationConfig / `tasks/pushNotificationConfig/set`.
pub(super) async fn create(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let mut raw: ConfigIn = decode(params)?;
    let task_id = raw
        .task_id
        .take()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| RpcError::invalid_params("taskId: name the task the webhook is for"))?;
    let task = own_task(ctx, &task_id).await?;
    let config = checked(ctx, raw).await?;
    let id = task.id.clone();
    let stored = ctx
        .a2a
        .tasks
        .push_store()
        .set(&id, config)
        .await
        .map_err(RpcError::from_store)?;
    ctx.a2a.push.notify_one();
    Ok(config_json(&stored, ctx.dialect))
}

/// GetTaskPushNotificationConfig / `tasks/pushNotificationConfig/get` (in v0.3 without a
/// config id: the task's first config).
pub(super) async fn get(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let (task_id, config) = decode::<ConfigRef>(params)?.ids(ctx.dialect)?;
    let task = own_task(ctx, &task_id).await?;
    let configs = configs_of(ctx, &task).await?;
    let found = match &config {
        Some(id) => configs.into_iter().find(|c| c.id == *id),
        None if ctx.dialect == Dialect::V03 => configs.into_iter().next(),
        None => {
            return Err(RpcError::invalid_params(
                "id: name the push notification config",
            ));
        }
    };
    found
        .map(|c| config_json(&c, ctx.dialect))
        .ok_or_else(|| no_config(&task_id, config.as_deref().unwrap_or("(any)")))
}

async fn configs_of(ctx: &Ctx, task: &Task) -> Result<Vec<PushConfig>, RpcError> {
    let id = task.id.clone();
    ctx.a2a
        .tasks
        .push_store()
        .list(&id)
        .await
        .map_err(RpcError::from_store)
}

/// ListTaskPushNotificationConfigs / `tasks/pushNotificationConfig/list`. A task has at most
/// `push.configs_per_task` configs, so one page holds them all.
pub(super) async fn list(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let (task_id, _) = decode::<ConfigRef>(params)?.ids(ctx.dialect)?;
    let task = own_task(ctx, &task_id).await?;
    let configs: Vec<Value> = configs_of(ctx, &task)
        .await?
        .iter()
        .map(|c| config_json(c, ctx.dialect))
        .collect();
    Ok(match ctx.dialect {
        Dialect::V1 => json!({"configs": configs, "nextPageToken": ""}),
        Dialect::V03 => Value::Array(configs),
    })
}

/// DeleteTaskPushNotificationConfig / `tasks/pushNotificationConfig/delete`: what is still
/// queued for it goes with it.
pub(super) async fn delete(ctx: &Ctx, params: Value) -> Result<Value, RpcError> {
    let (task_id, config) = decode::<ConfigRef>(params)?.ids(ctx.dialect)?;
    let config = config.ok_or_else(|| {
        RpcError::invalid_params(match ctx.dialect {
            Dialect::V1 => "id: name the push notification config",
            Dialect::V03 => "pushNotificationConfigId: name the push notification config",
        })
    })?;
    let task = own_task(ctx, &task_id).await?;
    let (id, cid) = (task.id.clone(), config.clone());
    let deleted = ctx
        .a2a
        .tasks
        .push_store()
        .delete(&id, &cid)
        .await
        .map_err(RpcError::from_store)?;
    if !deleted {
        return Err(no_config(&task_id, &config));
    }
    Ok(match ctx.dialect {
        Dialect::V1 => json!({}),
        Dialect::V03 => Value::Null,
    })
}

// ---- the sender -------------------------------------------------------------------------

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
