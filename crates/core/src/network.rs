//! **Askers on other machines**: the settings of the second listener, which serves askers
//! only, beyond loopback (`network.*`), what they mean together ([`Network::plan`]: where it
//! listens, how TLS is done, the URL the cards name, and the refusals: plain HTTP beyond
//! loopback without the owner's word), and the policy towards an asker from the network, a
//! stranger until its token says otherwise: how often each one may ask and open streams
//! ([`Windows`]) and how long a source address waits after a wrong token
//! ([`FailedTokens`]). Pure: the time is passed in (the daemon's injected clock); the
//! sockets, TLS and the refusals as HTTP are the server's.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use crate::clock::Timestamp;

/// How the network listener does TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tls {
    /// A certificate the daemon makes on first start and keeps in its data directory; askers
    /// pin its SHA-256 fingerprint.
    #[default]
    SelfSigned,
    /// The owner's certificate and key (PEM files, read again when they change).
    Files,
    /// A TLS proxy the owner runs in front (Tailscale `serve`, Caddy, nginx): plain HTTP on
    /// the listener, `X-Forwarded-*` trusted from `network.trusted_proxies` only.
    Proxy,
    /// No TLS at all: plain HTTP (beyond loopback only with `network.insecure_http`).
    Off,
}

impl Tls {
    pub fn as_str(self) -> &'static str {
        match self {
            Tls::SelfSigned => "self-signed",
            Tls::Files => "files",
            Tls::Proxy => "proxy",
            Tls::Off => "off",
        }
    }

    fn parse(text: &str) -> Option<Tls> {
        [Tls::SelfSigned, Tls::Files, Tls::Proxy, Tls::Off]
            .into_iter()
            .find(|t| t.as_str() == text.trim())
    }

    /// Whether the listener itself speaks plain HTTP.
    pub fn plain(self) -> bool {
        matches!(self, Tls::Proxy | Tls::Off)
    }
}

/// The network listener's settings (`network.*`). Off unless `listen` names an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    /// Where the listener listens (`network.listen`: `off`, or an address and port).
    pub listen: Option<SocketAddr>,
    pub tls: Tls,
    /// The certificate chain and the key, PEM (`network.tls = files`).
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// The URL askers reach the listener at, an origin (`https://host[:port]`); `None`: the
    /// listen address itself.
    pub public_url: Option<String>,
    /// The proxies whose `X-Forwarded-For` and `X-Forwarded-Host` are believed (addresses or
    /// networks).
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// The owner's word that plain HTTP beyond loopback is meant.
    pub insecure_http: bool,
    /// Requests one asker (or, without a token, one source address) may make per minute.
    pub requests_per_minute: u32,
    /// Streams and blocking waits one asker may open per minute.
    pub streams_per_minute: u32,
}

impl Default for Network {
    fn default() -> Self {
        Self {
            listen: None,
            tls: Tls::SelfSigned,
            cert_file: None,
            key_file: None,
            public_url: None,
            trusted_proxies: Vec::new(),
            insecure_http: false,
            requests_per_minute: 600,
            streams_per_minute: 60,
        }
    }
}

pub(crate) const LISTEN_HELP: &str =
    "off, or an address and port such as 0.0.0.0:7718 or [::]:7718";
pub(crate) const TLS_HELP: &str = "self-signed, files, proxy or off";
pub(crate) const PATH_HELP: &str = "a file's path (empty for none)";

/// A path setting's value: `Some(None)` for empty (none), `None` when refused: a control
/// character would reach a terminal or a log as written. Every path setting reads its value
/// here (`network.*_file`, `push.extra_roots`).
pub(crate) fn path_value(value: &str) -> Option<Option<PathBuf>> {
    let v = value.trim();
    if v.chars().any(char::is_control) {
        return None;
    }
    Some((!v.is_empty()).then(|| PathBuf::from(v)))
}

/// A path setting written as its value reads back (empty for none).
pub(crate) fn path_text(p: &Option<PathBuf>) -> String {
    p.as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}
pub(crate) const URL_HELP: &str = "an https:// (or http://) URL with a host and no path, such as https://box.example.net:7718 (empty: the listen address)";
pub(crate) const PROXIES_HELP: &str =
    "comma-separated addresses or networks such as 127.0.0.1, 10.0.0.0/8 (empty for none)";
pub(crate) const PER_MINUTE_HELP: &str = "a whole number from 1 to 10000000";

/// Why a network setting was not taken: its key is none of the network's, or its value is not
/// what the setting takes (`expected`). The settings table words it (`SettingError`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    Unknown,
    Invalid { expected: &'static str },
}

impl Network {
    /// The setting `key` as text; `None` when it is none of the network's.
    pub(crate) fn get(&self, key: &str) -> Option<String> {
        let text = path_text;
        Some(match key {
            "network.listen" => self
                .listen
                .map_or_else(|| "off".to_owned(), |a| a.to_string()),
            "network.tls" => self.tls.as_str().to_owned(),
            "network.cert_file" => text(&self.cert_file),
            "network.key_file" => text(&self.key_file),
            "network.public_url" => self.public_url.clone().unwrap_or_default(),
            "network.trusted_proxies" => self
                .trusted_proxies
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            "network.insecure_http" => self.insecure_http.to_string(),
            "network.requests_per_minute" => self.requests_per_minute.to_string(),
            "network.streams_per_minute" => self.streams_per_minute.to_string(),
            _ => return None,
        })
    }

    pub(crate) fn set(&mut self, key: &str, value: &str) -> Result<(), Refused> {
        let invalid = |expected| Refused::Invalid { expected };
        let path = || path_value(value).ok_or_else(|| invalid(PATH_HELP));
        let per_minute = || {
            value
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=10_000_000).contains(n))
                .ok_or_else(|| invalid(PER_MINUTE_HELP))
        };
        match key {
            "network.listen" => {
                self.listen = match value.trim() {
                    "off" | "" => None,
                    v => Some(v.parse().map_err(|_| invalid(LISTEN_HELP))?),
                }
            }
            "network.tls" => self.tls = Tls::parse(value).ok_or_else(|| invalid(TLS_HELP))?,
            "network.cert_file" => self.cert_file = path()?,
            "network.key_file" => self.key_file = path()?,
            "network.public_url" => {
                self.public_url = match value.trim() {
                    "" => None,
                    v => Some(origin(v).ok_or_else(|| invalid(URL_HELP))?.serialized),
                }
            }
            "network.trusted_proxies" => {
                self.trusted_proxies = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(parse_net)
                    .collect::<Option<Vec<_>>>()
                    .ok_or_else(|| invalid(PROXIES_HELP))?;
            }
            "network.insecure_http" => {
                self.insecure_http = match value.trim() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(invalid("true or false")),
                }
            }
            "network.requests_per_minute" => self.requests_per_minute = per_minute()?,
            "network.streams_per_minute" => self.streams_per_minute = per_minute()?,
            _ => return Err(Refused::Unknown),
        }
        Ok(())
    }

    /// What the settings mean together: `Ok(None)` when the listener is off, else where it
    /// listens and how; refused (with what to change) when they do not fit together.
    pub fn plan(&self) -> Result<Option<Plan>, PlanError> {
        let Some(listen) = self.listen else {
            return Ok(None);
        };
        let (cert, key) = match self.tls {
            Tls::Files => match (&self.cert_file, &self.key_file) {
                (Some(c), Some(k)) => (Some(c.clone()), Some(k.clone())),
                _ => return Err(PlanError::NoFiles),
            },
            _ => (None, None),
        };
        let scheme = if self.tls == Tls::Off {
            "http"
        } else {
            "https"
        };
        let public = match &self.public_url {
            Some(url) => origin(url).ok_or_else(|| PlanError::PublicUrl(url.clone()))?,
            None if self.tls == Tls::Proxy => return Err(PlanError::ProxyNeedsUrl),
            None if listen.ip().is_unspecified() => return Err(PlanError::EveryAddress(listen)),
            None => origin(&format!("{scheme}://{listen}"))
                .ok_or_else(|| PlanError::PublicUrl(listen.to_string()))?,
        };
        if self.tls == Tls::Proxy && self.trusted_proxies.is_empty() {
            return Err(PlanError::NoProxies);
        }
        let beyond_loopback = !listen.ip().is_loopback();
        let mut warning = None;
        if self.tls.plain() && beyond_loopback {
            if !self.insecure_http {
                return Err(PlanError::PlainBeyondLoopback(listen));
            }
            warning = Some(format!(
                "the network listener on {listen} speaks plain HTTP (network.insecure_http): \
                 askers' tokens and tasks cross the network unencrypted"
            ));
        }
        if self.tls != Tls::Proxy && !public.https && self.tls != Tls::Off {
            return Err(PlanError::PublicUrl(public.serialized));
        }
        // Behind a proxy the listener is plain by design; what crosses the network is what
        // askers reach the proxy by, the public URL.
        if self.tls == Tls::Proxy && !public.https && !public.on_loopback() {
            if !self.insecure_http {
                return Err(PlanError::PlainPublicUrl(public.serialized));
            }
            warning = Some(format!(
                "askers reach the proxy at {} over plain HTTP (network.insecure_http): their \
                 tokens and tasks cross the network unencrypted",
                public.serialized
            ));
        }
        let mut hosts = public.hosts.clone();
        if !listen.ip().is_unspecified() {
            hosts.push(listen.to_string());
        }
        let names = public.name.clone();
        Ok(Some(Plan {
            listen,
            tls: self.tls,
            cert_file: cert,
            key_file: key,
            public_url: public.serialized,
            hosts,
            certificate_names: certificate_names(&names, listen),
            trusted_proxies: self.trusted_proxies.clone(),
            warning,
        }))
    }

    /// Whether `other` makes the same listener: the numbers per minute aside, which the
    /// listener reads as they are at each request.
    pub fn same_listener(&self, other: &Network) -> bool {
        let rates = |n: &Network| Network {
            requests_per_minute: 0,
            streams_per_minute: 0,
            ..n.clone()
        };
        rates(self) == rates(other)
    }
}

/// The names a self-signed certificate is made for: the public URL's host and the listen
/// address (when it is one address, not every address).
fn certificate_names(host: &str, listen: SocketAddr) -> Vec<String> {
    let mut names = vec![host.trim_matches(['[', ']']).to_owned()];
    if !listen.ip().is_unspecified() {
        let ip = listen.ip().to_string();
        if !names.contains(&ip) {
            names.push(ip);
        }
    }
    names
}

fn parse_net(text: &str) -> Option<ipnet::IpNet> {
    text.parse::<ipnet::IpNet>()
        .ok()
        .or_else(|| text.parse::<IpAddr>().ok().map(ipnet::IpNet::from))
}

/// A public URL read as an origin.
struct Origin {
    https: bool,
    /// The host as the URL writes it (`[::1]` for IPv6).
    name: String,
    /// `scheme://host[:port]`, the port left out when it is the scheme's.
    serialized: String,
    /// The `Host` header values that name it.
    hosts: Vec<String>,
}

impl Origin {
    /// Whether its host is this machine's loopback (`localhost`, 127.0.0.0/8, `[::1]`).
    fn on_loopback(&self) -> bool {
        let bare = self.name.trim_start_matches('[').trim_end_matches(']');
        self.name == "localhost"
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

fn origin(text: &str) -> Option<Origin> {
    let url = url::Url::parse(text.trim()).ok()?;
    let https = match url.scheme() {
        "https" => true,
        "http" => false,
        _ => return None,
    };
    if !url.username().is_empty()
        || url.password().is_some()
        || url.path() != "/"
        || url.query().is_some()
        || url.fragment().is_some()
    {
        return None;
    }
    let name = url.host_str()?.to_ascii_lowercase();
    let port = url.port_or_known_default()?;
    let serialized = url.origin().ascii_serialization();
    let mut hosts = vec![format!("{name}:{port}")];
    if url.port().is_none() {
        hosts.push(name.clone());
    }
    Some(Origin {
        https,
        name,
        serialized,
        hosts,
    })
}

/// What the network listener does, from [`Network::plan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub listen: SocketAddr,
    pub tls: Tls,
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
    /// The origin the cards name (`https://host[:port]`).
    pub public_url: String,
    /// The `Host` values the listener answers to: the public URL's and its own address.
    pub hosts: Vec<String>,
    /// The names (hosts and addresses) a self-signed certificate is made for.
    pub certificate_names: Vec<String>,
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// What the owner is warned of while it runs (plain HTTP beyond loopback).
    pub warning: Option<String>,
}

impl Plan {
    /// The address a request came from: the connection's peer, or, from a trusted proxy,
    /// the last address `X-Forwarded-For` names that is not itself a trusted proxy.
    pub fn source(&self, peer: IpAddr, forwarded_for: Option<&str>) -> IpAddr {
        if !self.trusts(peer) {
            return peer;
        }
        let Some(chain) = forwarded_for else {
            return peer;
        };
        chain
            .rsplit(',')
            .filter_map(|a| a.trim().parse::<IpAddr>().ok())
            .find(|a| !self.trusts(*a))
            .unwrap_or(peer)
    }

    /// Whether `peer` is a proxy the owner listed.
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted_proxies.iter().any(|n| n.contains(&peer))
    }

    /// Whether `Host` names this listener (compared without case).
    pub fn answers_to(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Whether `Origin` is the listener's own (a browser's request from another site is not).
    pub fn own_origin(&self, origin: &str) -> bool {
        origin.eq_ignore_ascii_case(&self.public_url)
    }
}

/// Why the network settings do not make a listener; each says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error(
        "network.tls is files but network.cert_file or network.key_file is empty; give both (PEM), or use network.tls self-signed"
    )]
    NoFiles,
    #[error(
        "network.tls is proxy but network.public_url is empty; give the https:// URL the proxy serves (e.g. https://box.tailnet.ts.net)"
    )]
    ProxyNeedsUrl,
    #[error(
        "network.tls is proxy but network.trusted_proxies is empty; name the proxy's address (e.g. 127.0.0.1)"
    )]
    NoProxies,
    #[error(
        "the listener on {0} listens on every address; set network.public_url to the https:// URL askers reach it at, so the cards name it"
    )]
    EveryAddress(SocketAddr),
    #[error(
        "network.public_url {0:?} is not an https:// URL with a host and no path (http:// only with network.tls off or proxy)"
    )]
    PublicUrl(String),
    #[error(
        "plain HTTP on {0}, beyond loopback, would send askers' tokens unencrypted; use TLS (network.tls self-signed or files), listen on 127.0.0.1 behind your proxy, or say network.insecure_http true (`--insecure-http`)"
    )]
    PlainBeyondLoopback(SocketAddr),
    #[error(
        "network.public_url {0} is plain HTTP beyond loopback: askers would send their tokens to the proxy unencrypted; give the proxy's https:// URL, or say network.insecure_http true (`--insecure-http`)"
    )]
    PlainPublicUrl(String),
}

// ---- strangers ---------------------------------------------------------------------------

/// How long one counting window lasts.
pub const WINDOW: Duration = Duration::from_secs(60);

/// How many callers (or sources) the stranger tables remember; past it the stalest go first,
/// so a flood of new addresses cannot grow them without bound.
pub const REMEMBERED: usize = 4096;

/// Counts per caller in windows of [`WINDOW`]: requests, or streams opened. A window starts
/// at a caller's first count and is replaced by a fresh one when it is over.
#[derive(Debug, Default)]
pub struct Windows {
    by_caller: HashMap<String, (Timestamp, u32)>,
}

impl Windows {
    /// Count one for `caller` if it has had fewer than `max` in its window; else how long
    /// until its window is over.
    pub fn take(&mut self, caller: &str, max: u32, now: Timestamp) -> Result<(), Duration> {
        if !self.by_caller.contains_key(caller) && self.by_caller.len() >= REMEMBERED {
            self.by_caller
                .retain(|_, (start, _)| now.since(*start) < WINDOW);
            if self.by_caller.len() >= REMEMBERED {
                let stalest = self
                    .by_caller
                    .iter()
                    .min_by_key(|(_, (start, _))| *start)
                    .map(|(k, _)| k.clone());
                if let Some(k) = stalest {
                    self.by_caller.remove(&k);
                }
            }
        }
        let (start, count) = self.by_caller.entry(caller.to_owned()).or_insert((now, 0));
        if now.since(*start) >= WINDOW || now < *start {
            (*start, *count) = (now, 0);
        }
        if *count >= max {
            return Err(WINDOW.saturating_sub(now.since(*start)));
        }
        *count += 1;
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.by_caller.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_caller.is_empty()
    }
}

/// The wait after `failures` wrong tokens in a row from one source: 1 s, doubling with
/// each, at most [`FAILED_TOKEN_WAIT_MAX`].
pub fn failed_token_wait(failures: u32) -> Duration {
    let doublings = failures.saturating_sub(1).min(16);
    Duration::from_secs(1u64 << doublings).min(FAILED_TOKEN_WAIT_MAX)
}

/// The longest wait after wrong tokens.
pub const FAILED_TOKEN_WAIT_MAX: Duration = Duration::from_secs(300);

/// A source is forgotten this long after its last wrong token.
pub const FAILED_TOKEN_MEMORY: Duration = Duration::from_secs(3600);

/// Wrong tokens per source address (an IPv6 source by its /64, which one machine usually
/// holds whole): after each, the source waits [`failed_token_wait`] before its next request
/// is looked at, so guessing a token costs time that grows with every guess.
#[derive(Debug, Default)]
pub struct FailedTokens {
    by_source: HashMap<IpAddr, (u32, Timestamp)>,
}

impl FailedTokens {
    /// How long `source` must still wait, if it must.
    pub fn must_wait(&self, source: IpAddr, now: Timestamp) -> Option<Duration> {
        let (failures, last) = self.by_source.get(&source_key(source))?;
        let until = last.plus(failed_token_wait(*failures));
        (now < until).then(|| until.since(now))
    }

    /// A wrong token from `source`; the wait it has now.
    pub fn failed(&mut self, source: IpAddr, now: Timestamp) -> Duration {
        let key = source_key(source);
        if !self.by_source.contains_key(&key) && self.by_source.len() >= REMEMBERED {
            self.by_source
                .retain(|_, (_, last)| now.since(*last) < FAILED_TOKEN_MEMORY);
            if self.by_source.len() >= REMEMBERED {
                let stalest = self
                    .by_source
                    .iter()
                    .min_by_key(|(_, (_, last))| *last)
                    .map(|(k, _)| *k);
                if let Some(k) = stalest {
                    self.by_source.remove(&k);
                }
            }
        }
        let entry = self.by_source.entry(key).or_insert((0, now));
        if now.since(entry.1) >= FAILED_TOKEN_MEMORY {
            entry.0 = 0;
        }
        *entry = (entry.0.saturating_add(1), now);
        failed_token_wait(entry.0)
    }

    /// A right token from `source`: it starts afresh.
    pub fn succeeded(&mut self, source: IpAddr) {
        self.by_source.remove(&source_key(source));
    }

    pub fn len(&self) -> usize {
        self.by_source.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_source.is_empty()
    }
}

/// The key a source is remembered by: an IPv4 address, or an IPv6 address's /64.
fn source_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(bits.into())
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn network(pairs: &[(&str, &str)]) -> Network {
        let mut n = Network::default();
        for (k, v) in pairs {
            n.set(k, v).unwrap();
        }
        n
    }

    #[test]
    fn off_by_default_and_values_round_trip() {
        assert_eq!(Network::default().plan(), Ok(None));
        let mut n = Network::default();
        for (k, v) in [
            ("network.listen", "[::]:7718"),
            ("network.tls", "proxy"),
            ("network.public_url", "https://Box.Example.net:443/"),
            ("network.trusted_proxies", " 127.0.0.1, 10.0.0.0/8 "),
            ("network.cert_file", "/etc/x.pem"),
        ] {
            n.set(k, v).unwrap();
        }
        assert_eq!(n.get("network.listen").unwrap(), "[::]:7718");
        assert_eq!(
            n.get("network.public_url").unwrap(),
            "https://box.example.net"
        );
        assert_eq!(
            n.get("network.trusted_proxies").unwrap(),
            "127.0.0.1/32,10.0.0.0/8"
        );
        for (k, v) in [
            ("network.listen", "7718"),
            ("network.tls", "openssl"),
            ("network.public_url", "https://box/path"),
            ("network.public_url", "ftp://box"),
            ("network.trusted_proxies", "box.example.net"),
            ("network.requests_per_minute", "0"),
        ] {
            let before = n.clone();
            assert!(n.set(k, v).is_err(), "{k}={v}");
            assert_eq!(n, before);
        }
    }

    #[test]
    fn plain_http_beyond_loopback_needs_the_owners_word() {
        let n = network(&[("network.listen", "10.1.2.3:7718"), ("network.tls", "off")]);
        assert!(matches!(n.plan(), Err(PlanError::PlainBeyondLoopback(_))));
        let n = network(&[
            ("network.listen", "10.1.2.3:7718"),
            ("network.tls", "off"),
            ("network.insecure_http", "true"),
        ]);
        let plan = n.plan().unwrap().unwrap();
        assert_eq!(plan.public_url, "http://10.1.2.3:7718");
        assert!(plan.warning.unwrap().contains("plain HTTP"));
        // Behind a proxy on loopback, plain HTTP is fine.
        let n = network(&[
            ("network.listen", "127.0.0.1:7718"),
            ("network.tls", "proxy"),
            ("network.public_url", "https://box.tailnet.ts.net"),
            ("network.trusted_proxies", "127.0.0.1"),
        ]);
        let plan = n.plan().unwrap().unwrap();
        assert_eq!(plan.warning, None);
        assert!(plan.answers_to("box.tailnet.ts.net"));
        assert!(plan.answers_to("BOX.tailnet.ts.net:443"));
        assert!(plan.answers_to("127.0.0.1:7718"));
        assert!(!plan.answers_to("localhost:7718"));
        assert!(plan.own_origin("https://box.tailnet.ts.net"));
        assert!(!plan.own_origin("https://evil.example"));
    }

    #[test]
    fn a_proxy_askers_reach_over_plain_http_needs_the_owners_word() {
        let behind = |public: &'static str| {
            vec![
                ("network.listen", "127.0.0.1:7718"),
                ("network.tls", "proxy"),
                ("network.public_url", public),
                ("network.trusted_proxies", "127.0.0.1"),
            ]
        };
        let n = network(&behind("http://box.example.net:8080"));
        assert_eq!(
            n.plan(),
            Err(PlanError::PlainPublicUrl(
                "http://box.example.net:8080".into()
            ))
        );
        let mut pairs = behind("http://box.example.net:8080");
        pairs.push(("network.insecure_http", "true"));
        let plan = network(&pairs).plan().unwrap().unwrap();
        assert!(plan.warning.unwrap().contains("over plain HTTP"));
        // A proxy on this machine that askers here reach: nothing crosses the network.
        for public in [
            "http://localhost:8080",
            "http://127.0.0.1:8080",
            "http://[::1]:8080",
        ] {
            let plan = network(&behind(public)).plan().unwrap().unwrap();
            assert_eq!(plan.warning, None, "{public}");
        }
    }

    #[test]
    fn each_way_says_what_it_misses() {
        let listen = ("network.listen", "10.1.2.3:7718");
        assert_eq!(
            network(&[listen, ("network.tls", "files")]).plan(),
            Err(PlanError::NoFiles)
        );
        assert_eq!(
            network(&[listen, ("network.tls", "proxy")]).plan(),
            Err(PlanError::ProxyNeedsUrl)
        );
        assert_eq!(
            network(&[
                listen,
                ("network.tls", "proxy"),
                ("network.public_url", "https://x.example")
            ])
            .plan(),
            Err(PlanError::NoProxies)
        );
        assert!(matches!(
            network(&[("network.listen", "0.0.0.0:7718")]).plan(),
            Err(PlanError::EveryAddress(_))
        ));
        let plan = network(&[listen]).plan().unwrap().unwrap();
        assert_eq!(plan.public_url, "https://10.1.2.3:7718");
        assert_eq!(plan.certificate_names, vec!["10.1.2.3".to_owned()]);
    }

    #[test]
    fn only_a_trusted_proxy_names_the_source() {
        let plan = network(&[
            ("network.listen", "127.0.0.1:7718"),
            ("network.tls", "proxy"),
            ("network.public_url", "https://x.example"),
            ("network.trusted_proxies", "127.0.0.1,10.0.0.0/8"),
        ])
        .plan()
        .unwrap()
        .unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // From the proxy: the last address it did not add itself.
        assert_eq!(
            plan.source(ip("127.0.0.1"), Some("1.2.3.4, 5.6.7.8, 10.0.0.9")),
            ip("5.6.7.8")
        );
        // From anyone else, the header is the caller's own word: ignored.
        assert_eq!(
            plan.source(ip("192.0.2.7"), Some("1.2.3.4")),
            ip("192.0.2.7")
        );
        assert_eq!(plan.source(ip("127.0.0.1"), None), ip("127.0.0.1"));
    }

    #[test]
    fn a_window_counts_to_its_max_and_starts_afresh_after_a_minute() {
        let mut w = Windows::default();
        let t0 = Timestamp::from_millis(1_000_000);
        for _ in 0..3 {
            w.take("alice", 3, t0).unwrap();
        }
        let wait = w
            .take("alice", 3, t0.plus(Duration::from_secs(20)))
            .unwrap_err();
        assert_eq!(wait, Duration::from_secs(40));
        // Another caller has its own window.
        w.take("bob", 3, t0).unwrap();
        w.take("alice", 3, t0.plus(WINDOW)).unwrap();
    }

    #[test]
    fn the_wait_after_wrong_tokens_doubles_and_a_right_one_forgets_it() {
        let mut f = FailedTokens::default();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let t0 = Timestamp::from_millis(1_000_000);
        assert_eq!(f.must_wait(ip, t0), None);
        assert_eq!(f.failed(ip, t0), Duration::from_secs(1));
        assert_eq!(f.must_wait(ip, t0), Some(Duration::from_secs(1)));
        let t1 = t0.plus(Duration::from_secs(1));
        assert_eq!(f.must_wait(ip, t1), None);
        assert_eq!(f.failed(ip, t1), Duration::from_secs(2));
        assert_eq!(f.failed(ip, t1), Duration::from_secs(4));
        assert_eq!(failed_token_wait(40), FAILED_TOKEN_WAIT_MAX);
        f.succeeded(ip);
        assert_eq!(f.must_wait(ip, t1), None);
        // An IPv6 source is one /64.
        let a: IpAddr = "2001:db8::1".parse().unwrap();
        let b: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        f.failed(a, t0);
        assert!(f.must_wait(b, t0).is_some());
    }

    #[test]
    fn the_tables_stay_bounded() {
        let mut f = FailedTokens::default();
        let mut w = Windows::default();
        let t0 = Timestamp::from_millis(0);
        for i in 0..(REMEMBERED as u32 + 100) {
            let ip = IpAddr::from(i.to_be_bytes());
            f.failed(ip, t0);
            w.take(&ip.to_string(), 10, t0).unwrap();
        }
        assert!(f.len() <= REMEMBERED && w.len() <= REMEMBERED);
    }
}
