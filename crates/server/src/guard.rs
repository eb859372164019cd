//! The guard in front of every route (reliability.md §13): a `Host` that names loopback and
//! our port (defeats DNS rebinding), an `Origin` that is absent or our own (defeats
//! cross-site requests; `null` is refused), and the bearer token, compared in constant time.
//! Only `GET /healthz`, the web UI's static files (`GET /ui/...`, see [`crate::ui`]) and its
//! code exchange (`POST /ui/session`, which holds its own credential, a one-time code) are
//! open, and even they must pass the `Host` and `Origin` checks.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;

use crate::OwnerError;
use crate::auth::{Caller, Credentials};
use crate::owner::OwnerErrorKind;

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

    fn check(
        &self,
        method: &Method,
        path: &str,
        headers: &HeaderMap,
    ) -> Result<Option<Caller>, Box<Response>> {
        let host = headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
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
        if path == "/healthz"
            || is_ui_file(method, path)
            || (method == Method::POST && path == crate::ui::SESSION_PATH)
        {
            return Ok(None);
        }
        let presented = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        match presented {
            Some(t) => match self.credentials.identify(t) {
                Some(Caller::Asker(name)) if path == "/api" || path.starts_with("/api/") => {
                    tracing::warn!(asker = %name, %path, "refused: an asker on the owner API");
                    Err(Box::new(refuse(
                        StatusCode::FORBIDDEN,
                        "the owner API needs the owner's token; askers use /a2a",
                    )))
                }
                Some(caller) => Ok(Some(caller)),
                None => {
                    tracing::warn!(%path, "refused: wrong token");
                    Err(Box::new(refuse(
                        StatusCode::UNAUTHORIZED,
                        "wrong bearer token; the owner's token is in the data directory's `token` file",
                    )))
                }
            },
            None => Err(Box::new(refuse(
                StatusCode::UNAUTHORIZED,
                "missing `Authorization: Bearer <token>`; the owner's token is in the data directory's `token` file",
            ))),
        }
    }
}

/// The web UI's files: a browser cannot send the bearer header when it loads a page, and the
/// files hold no data. Only reading them is open; everything the page then asks of `/api`
/// needs the token like any other call.
fn is_ui_file(method: &Method, path: &str) -> bool {
    method == Method::GET && (path == "/ui" || path.starts_with("/ui/"))
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
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
    match guard.check(request.method(), request.uri().path(), request.headers()) {
        Ok(caller) => {
            if let Some(caller) = caller {
                request.extensions_mut().insert(caller);
            }
            next.run(request).await
        }
        Err(refusal) => *refusal,
    }
}
