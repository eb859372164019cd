//! The daemon's refusals in gRPC's form for a gRPC request. The guard and the rooms' layers
//! refuse before any binding runs, with an HTTP status and a JSON body (`{"error":
//! {"kind", "message"}}`); a gRPC client reads neither, only `grpc-status` and
//! `grpc-message`. This layer, outermost, rewrites such a refusal of a request sent as
//! `application/grpc` into a trailers-only gRPC reply with the status that means it (401
//! UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 UNIMPLEMENTED, ...) and the same message.
//! Every other response passes untouched.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::Value;
use tonic::{Code, Status};

/// A refusal body is a short JSON object; anything longer is not one of ours.
const LARGEST_REFUSAL: usize = 64 * 1024;

pub(crate) async fn as_grpc(request: Request, next: Next) -> Response {
    let grpc = is_grpc(request.headers());
    let response = next.run(request).await;
    if !grpc || response.status() == StatusCode::OK || is_grpc(response.headers()) {
        return response;
    }
    let status = response.status();
    let body = axum::body::to_bytes(response.into_body(), LARGEST_REFUSAL)
        .await
        .unwrap_or_default();
    let message = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| {
            v.pointer("/error/message")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("refused").to_owned());
    Status::new(code_of(status), message).into_http::<Body>()
}

fn is_grpc(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("application/grpc"))
}

/// The gRPC code for an HTTP refusal (gRPC's own mapping of HTTP statuses, with 403 and
/// the limits said more precisely).
fn code_of(status: StatusCode) -> Code {
    match status.as_u16() {
        400 => Code::InvalidArgument,
        401 => Code::Unauthenticated,
        403 => Code::PermissionDenied,
        404 | 405 => Code::Unimplemented,
        413 | 429 => Code::ResourceExhausted,
        502..=504 => Code::Unavailable,
        _ => Code::Internal,
    }
}
