//! The guard in front of every route (reliability.md §13): a `Host` that names loopback and
//! our port (defeats DNS rebinding), an `Origin` that is absent or our own (defeats
//! cross-site requests; `null` is refused), and the bearer token, compared in constant time
//! and resolved to the kind of caller it belongs to. The guard refuses nothing for the
//! token: whether that caller may call the route is the route's room's decision
//! ([`crate::http::routes`]), so open routes (`/healthz`, the web UI's files) need none.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::error::{OwnerError, OwnerErrorKind};
use crate::http::auth::{Credentials, Presented};

#[derive(Debug)]
pub(crate) struct Guard {
    credentials: Credentials,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
}

impl Guard {
    pub fn new(credentials: Credentials, port: u16) -> Self {
        let allowed_hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ];
        let allowed_origins = allowed_hosts
            .iter()
            .map(|h| format!("http://{h}"))
            .collect();
        Self {
            credentials,
            allowed_hosts,
            allowed_origins,
        }
    }

    fn check(&self, uri: &Uri, headers: &HeaderMap) -> Result<Presented, Box<Response>> {
        let path = uri.path();
        // HTTP/2 (gRPC) carries the host as the `:authority`, which lands in the URI.
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| uri.authority().map(|a| a.as_str()))
            .unwrap_or("");
        if !self
            .allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
        {
            tracing::warn!(%host, %path, "refused: foreign Host");
            return Err(Box::new(refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "Host {host:?} is not this daemon; use 127.0.0.1 or localhost with the port"
                ),
            )));
        }
        if let Some(origin) = headers.get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self
                .allowed_origins
                .iter()
                .any(|o| o.eq_ignore_ascii_case(origin))
            {
                tracing::warn!(%origin, %path, "refused: foreign Origin");
                return Err(Box::new(refuse(
                    StatusCode::FORBIDDEN,
                    format!("Origin {origin:?} may not call this daemon"),
                )));
            }
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        Ok(match presented {
            None => Presented::Nothing,
            Some(t) => match self.credentials.identify(t) {
                Some(caller) => Presented::Caller(caller),
                None => Presented::Unknown,
            },
        })
    }
}

pub(crate) fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    let kind = if status == StatusCode::UNAUTHORIZED {
        OwnerErrorKind::Unauthorized
    } else {
        OwnerErrorKind::Forbidden
    };
    let mut response = crate::http::error_response(
        status,
        OwnerError {
            kind,
            message: message.into(),
        },
    );
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    response
}

pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    match guard.check(request.uri(), request.headers()) {
        Ok(presented) => {
            request.extensions_mut().insert(presented);
            next.run(request).await
        }
        Err(refusal) => *refusal,
    }
}
