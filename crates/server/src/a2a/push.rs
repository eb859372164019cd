//! Push notification configs (A2A §3.1.7–3.1.10, TaskPushNotificationConfig): an asker that
//! does not hold a connection open names a webhook for its task, and the daemon POSTs every
//! change of the task there ([`super::pusher`] sends).
//!
//! The methods (Create/Get/List/Delete, v0.3's `tasks/pushNotificationConfig/*` and the
//! config inline in SendMessage) check the target when it is set: `http://` or `https://`,
//! public addresses; this machine only when the owner allows it
//! (`push.allow_loopback_targets`) and never on the daemon's own ports (loopback's and the
//! network listener's); the private, link-local, shared and other special ranges only when
//! the owner allows them (`push.allow_private_targets`); the rule is
//! `core::push::target_refusal`. A name is resolved and each of its addresses checked; one
//! that does not resolve when the webhook is set is taken (an asker may name a host this
//! machine cannot resolve yet), since the check that counts is the sender's, at each
//! connection, on the addresses it connects to.

use std::net::IpAddr;
use std::sync::Arc;

use reqwest::Url;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use taskkeeper_core::Task;
use taskkeeper_core::push::{self, NewPushConfig, PushAuth, PushConfig};
use taskkeeper_core::settings::Push;

use super::rpc::RpcError;
use super::wire::Dialect;
use super::{Ctx, decode, own_task};

const URL_MAX: usize = 2048;
const SECRET_MAX: usize = 4096;

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
pub(super) fn on_daemon_port(url: &Url, ports: &DaemonPorts) -> bool {
    url.port_or_known_default()
        .is_some_and(|port| ports.holds(port))
}

pub(super) fn refuse(ip: IpAddr, on_daemon_port: bool, settings: &Push) -> Result<(), String> {
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

/// Whether params decode as a config to create (`create`) or as one config's ids (a request
/// that cannot run: `super::unanswerable`).
pub(super) fn check(create: bool, params: Value) -> Result<(), RpcError> {
    if create {
        decode::<ConfigIn>(params).map(drop)
    } else {
        decode::<ConfigRef>(params).map(drop)
    }
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
/// queued for it goes with it. Idempotent (A2A §3.1.10 MUST): a config already gone is
/// deleted again without an error; only the task must be the asker's.
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
    ctx.a2a
        .tasks
        .push_store()
        .delete(&id, &cid)
        .await
        .map_err(RpcError::from_store)?;
    Ok(match ctx.dialect {
        Dialect::V1 => json!({}),
        Dialect::V03 => Value::Null,
    })
}
