//! The front of the network listener, in place of the loopback guard: an asker from the
//! network is a stranger until its token says otherwise. In order, each refusal with its own
//! answer:
//!
//! - `Host` (HTTP/2's `:authority`) must name the listener (its public URL's host, or its own address; from a
//!   trusted proxy, `X-Forwarded-Host` if it sent one), and an `Origin`, if any, must be the
//!   public URL's own (a browser's request from another site is refused; `null` too);
//! - a source address that sent a wrong token waits, longer after each (429 with
//!   `Retry-After`, before its token is looked at; `core::network::FailedTokens`);
//! - a wrong token is 401 (and counts), the owner's and the sessions' tokens are 403: on
//!   this listener only askers' tokens are taken;
//! - each asker (without a token, each source address) may make
//!   `network.requests_per_minute` requests (429 with `Retry-After`);
//! - the body must arrive whole within the body timeout (408) and within the body limit.
//!
//! Over HTTP/2 the body is taken before any refusal is sent, since ending the stream while
//! the client still sends resets it, and the client never reads the refusal.
//!
//! What passes carries an [`Outside`] for the A2A area: the public URL the cards and file
//! links name, the certificate's fingerprint, and the per-asker count of streams opened
//! (`network.streams_per_minute`). The policy's time is the daemon's injected clock; the
//! numbers per minute are the settings as they are at each request.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use taskkeeper_core::Clock;
use taskkeeper_core::limits::LimitExceeded;
use taskkeeper_core::network::{FailedTokens, Plan, Windows};

use crate::error::{OwnerError, OwnerErrorKind};
use crate::http::auth::{Caller, Credentials, Presented};
use crate::http::tls::Certificates;

/// How long a client has to send what it sends; past it, the connection is cut (I/O, not
/// policy: real time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// The TLS handshake.
    pub handshake: Duration,
    /// A request's headers (and the wait for the next request on a kept connection).
    pub headers: Duration,
    /// A request's body, whole.
    pub body: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            handshake: Duration::from_secs(10),
            headers: Duration::from_secs(10),
            body: Duration::from_secs(30),
        }
    }
}

/// The front's state: the plan, the credentials, the clock and the stranger tables.
#[derive(Debug)]
pub(crate) struct Front {
    pub plan: Plan,
    pub credentials: Credentials,
    pub clock: Arc<dyn Clock>,
    pub certificates: Option<Arc<Certificates>>,
    pub timeouts: Timeouts,
    /// Where the numbers per minute are read (the store keeps the settings in memory).
    settings: crate::services::SettingStore,
    /// The numbers as last read, for a moment the store's memory is being refreshed.
    rates: Mutex<(u32, u32)>,
    requests: Mutex<Windows>,
    failed: Mutex<FailedTokens>,
    streams: Arc<Mutex<Windows>>,
}

impl Front {
    pub fn new(
        plan: Plan,
        credentials: Credentials,
        clock: Arc<dyn Clock>,
        certificates: Option<Arc<Certificates>>,
        timeouts: Timeouts,
        settings: crate::services::SettingStore,
    ) -> Self {
        let defaults = taskkeeper_core::network::Network::default();
        Self {
            plan,
            credentials,
            clock,
            certificates,
            timeouts,
            settings,
            rates: Mutex::new((defaults.requests_per_minute, defaults.streams_per_minute)),
            requests: Mutex::default(),
            failed: Mutex::default(),
            streams: Arc::default(),
        }
    }

    /// `network.requests_per_minute` and `network.streams_per_minute` now.
    fn rates(&self) -> (u32, u32) {
        let mut rates = self.rates.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = self.settings.cached() {
            *rates = (s.network.requests_per_minute, s.network.streams_per_minute);
        }
        *rates
    }

    fn outside(&self, streams_per_minute: u32) -> Outside {
        Outside {
            public_url: self.plan.public_url.clone().into(),
            certificates: self.certificates.clone(),
            streams: self.streams.clone(),
            streams_per_minute,
            clock: self.clock.clone(),
        }
    }
}

/// What a request from the network listener carries to the A2A area (a request extension).
#[derive(Clone, Debug)]
pub struct Outside {
    /// The origin askers reach the listener at (`https://host[:port]`).
    pub public_url: Arc<str>,
    certificates: Option<Arc<Certificates>>,
    streams: Arc<Mutex<Windows>>,
    streams_per_minute: u32,
    clock: Arc<dyn Clock>,
}

impl Outside {
    /// The SHA-256 fingerprint of the certificate the listener serves now (none behind a
    /// proxy or without TLS).
    pub fn fingerprint(&self) -> Option<String> {
        self.certificates.as_ref().map(|c| c.fingerprint())
    }

    /// Where gRPC reaches the listener (`host:port`, what gRPC clients take): only where it
    /// serves TLS itself, since gRPC needs HTTP/2 end to end (ALPN `h2`), and a proxy in
    /// front speaks HTTP/1.1 to it.
    pub fn grpc_target(&self) -> Option<String> {
        self.certificates.as_ref()?;
        let url = url::Url::parse(&self.public_url).ok()?;
        let host = url.host_str()?;
        Some(format!("{host}:{}", url.port_or_known_default()?))
    }

    /// One more stream or blocking wait for `caller` this minute, or the refusal.
    pub fn open_stream(&self, caller: &str) -> Result<(), LimitExceeded> {
        let now = self.clock.now();
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        streams
            .take(caller, self.streams_per_minute, now)
            .map_err(|wait| LimitExceeded::StreamsPerMinute {
                caller: caller.to_owned(),
                max: u64::from(self.streams_per_minute),
                retry_after_s: wait.as_secs().max(1),
            })
    }

    /// `url` as the asker reaches it: a link to this daemon's loopback address (a file
    /// artifact's, made when the file was attached) names the public URL instead.
    pub fn public(&self, url: &str, loopback_port: u16) -> Option<String> {
        let rest = url.strip_prefix(&format!("http://127.0.0.1:{loopback_port}/"))?;
        Some(format!("{}/{rest}", self.public_url))
    }
}

fn refuse(status: StatusCode, kind: OwnerErrorKind, message: String) -> Response {
    crate::http::error_response(status, OwnerError { kind, message })
}

fn too_many(message: String, wait: Duration) -> Response {
    let mut response = refuse(
        StatusCode::TOO_MANY_REQUESTS,
        OwnerErrorKind::Limit,
        message,
    );
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    if let Ok(v) = HeaderValue::from_str(&secs.max(1).to_string()) {
        response.headers_mut().insert(header::RETRY_AFTER, v);
    }
    response
}

fn text(headers: &HeaderMap, name: impl header::AsHeaderName) -> Option<&str> {
    headers.get(name).and_then(|h| h.to_str().ok())
}

/// The front itself (see the module's doc).
pub(crate) async fn front(
    State(front): State<Arc<Front>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let source: IpAddr = front
        .plan
        .source(peer.ip(), text(&parts.headers, "x-forwarded-for"));
    let (presented, streams_per_minute) = match admit(&front, peer, source, &parts) {
        Ok(admitted) => admitted,
        // An HTTP/2 client still sending its body when a refusal ends the stream takes the
        // stream's reset as an error and never reads the refusal (curl: "Stream error in the
        // HTTP/2 framing layer"), so the body is taken first, as for a request let in.
        Err(refusal) if parts.version == axum::http::Version::HTTP_2 => {
            return match read_body(&front, source, &parts, body).await {
                Ok(_) => refusal,
                Err(cut) => cut,
            };
        }
        Err(refusal) => return refusal,
    };
    let bytes = match read_body(&front, source, &parts, body).await {
        Ok(bytes) => bytes,
        Err(refusal) => return refusal,
    };
    let mut request = Request::from_parts(parts, axum::body::Body::from(bytes));
    request.extensions_mut().insert(presented);
    request
        .extensions_mut()
        .insert(front.outside(streams_per_minute));
    next.run(request).await
}

/// Whether a request may come in, by its head alone: who it is and the streams per minute
/// now, or the refusal.
#[expect(
    clippy::result_large_err,
    reason = "the refusal is the response, sent at once; boxing it would only add an allocation"
)]
fn admit(
    front: &Front,
    peer: SocketAddr,
    source: IpAddr,
    parts: &axum::http::request::Parts,
) -> Result<(Presented, u32), Response> {
    let path = parts.uri.path();
    let headers = &parts.headers;
    let plan = &front.plan;
    let trusted = plan.trusts(peer.ip());
    let host = trusted
        .then(|| text(headers, "x-forwarded-host"))
        .flatten()
        .or_else(|| text(headers, header::HOST))
        // HTTP/2 (gRPC) names it in `:authority`, which is the URI's.
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or("");
    if !plan.answers_to(host) {
        tracing::warn!(%host, %source, %path, "network listener refused: foreign Host");
        return Err(refuse(
            StatusCode::FORBIDDEN,
            OwnerErrorKind::Forbidden,
            format!(
                "Host {host:?} is not this listener; use {} (network.public_url)",
                plan.public_url
            ),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if !plan.own_origin(origin) {
            tracing::warn!(%origin, %source, %path, "network listener refused: foreign Origin");
            return Err(refuse(
                StatusCode::FORBIDDEN,
                OwnerErrorKind::Forbidden,
                format!("Origin {origin:?} may not call this listener"),
            ));
        }
    }
    let now = front.clock.now();
    let waiting = front
        .failed
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .must_wait(source, now);
    if let Some(wait) = waiting {
        return Err(too_many(
            format!("{source} sent a wrong token; wait before the next request"),
            wait,
        ));
    }
    let token = text(headers, header::AUTHORIZATION)
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::trim);
    let presented = match token.map(|t| front.credentials.identify(t)) {
        None => Presented::Nothing,
        Some(Some(Caller::Asker(name))) => {
            front
                .failed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .succeeded(source);
            Presented::Caller(Caller::Asker(name))
        }
        Some(Some(caller)) => {
            tracing::warn!(caller = caller.kind().as_str(), %source, %path, "network listener refused: not an asker's token");
            return Err(refuse(
                StatusCode::FORBIDDEN,
                OwnerErrorKind::Forbidden,
                "the network listener takes askers' tokens only (`taskkeeper asker add`); \
                 the owner's and the sessions' tokens stay on this machine"
                    .into(),
            ));
        }
        Some(None) => {
            let wait = front
                .failed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .failed(source, now);
            tracing::warn!(%source, %path, wait_s = wait.as_secs(), "network listener refused: wrong token");
            let mut response = crate::http::guard::refuse(
                StatusCode::UNAUTHORIZED,
                "wrong bearer token; askers get theirs from the owner's `taskkeeper asker add`",
            );
            if let Ok(v) = HeaderValue::from_str(&wait.as_secs().to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, v);
            }
            return Err(response);
        }
    };
    let (requests_per_minute, streams_per_minute) = front.rates();
    let counted = match &presented {
        Presented::Caller(caller) => caller.asker_name().to_owned(),
        _ => format!("address {source}"),
    };
    let over = front
        .requests
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take(&counted, requests_per_minute, now);
    if let Err(wait) = over {
        tracing::warn!(caller = %counted, %path, "network listener refused: requests per minute");
        return Err(too_many(
            format!(
                "{counted} made {requests_per_minute} requests in the last minute, the most \
                 network.requests_per_minute allows; try again after Retry-After"
            ),
            wait,
        ));
    }
    Ok((presented, streams_per_minute))
}

/// The request's body, whole, within the body limit and timeout; or the refusal.
async fn read_body(
    front: &Front,
    source: IpAddr,
    parts: &axum::http::request::Parts,
    body: axum::body::Body,
) -> Result<axum::body::Bytes, Response> {
    let read = tokio::time::timeout(
        front.timeouts.body,
        axum::body::to_bytes(body, crate::http::MAX_BODY),
    )
    .await;
    match read {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(_)) => Err(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            OwnerErrorKind::TooLarge,
            format!(
                "the request body is larger than {} bytes or was cut off",
                crate::http::MAX_BODY
            ),
        )),
        Err(_) => {
            let path = parts.uri.path();
            tracing::warn!(%source, %path, "network listener refused: the body came too slowly");
            Err(refuse(
                StatusCode::REQUEST_TIMEOUT,
                OwnerErrorKind::Invalid,
                format!(
                    "the request body did not arrive within {} s",
                    front.timeouts.body.as_secs()
                ),
            ))
        }
    }
}
