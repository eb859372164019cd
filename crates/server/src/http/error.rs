//! How every HTTP area says no: an [`OwnerError`] as a response (`{"error": {"kind",
//! "message"}}` with a fitting status), and the JSON body and query extractors whose
//! refusals use that shape. A leaf: it knows the error kinds and axum, nothing else.

use axum::extract::FromRequest;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::error::{ErrorBody, OwnerError, OwnerErrorKind};
use crate::http::MAX_BODY;

pub(crate) fn error_response(status: StatusCode, error: OwnerError) -> Response {
    (status, axum::Json(ErrorBody { error })).into_response()
}

fn status_of(kind: OwnerErrorKind) -> StatusCode {
    match kind {
        OwnerErrorKind::NotFound => StatusCode::NOT_FOUND,
        OwnerErrorKind::Invalid => StatusCode::BAD_REQUEST,
        OwnerErrorKind::Conflict => StatusCode::CONFLICT,
        OwnerErrorKind::Unauthorized => StatusCode::UNAUTHORIZED,
        OwnerErrorKind::Forbidden => StatusCode::FORBIDDEN,
        OwnerErrorKind::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        OwnerErrorKind::Limit => StatusCode::TOO_MANY_REQUESTS,
        OwnerErrorKind::Internal => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for OwnerError {
    fn into_response(self) -> Response {
        error_response(status_of(self.kind), self)
    }
}

/// A JSON body whose refusals use our error shape: wrong content type 415, too large 413,
/// anything else 400 with serde's description of what was wrong.
pub(crate) struct Body<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = Response;
    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(rejection) => Err(json_refusal(rejection)),
        }
    }
}

fn json_refusal(rejection: JsonRejection) -> Response {
    let (status, kind) = match &rejection {
        JsonRejection::MissingJsonContentType(_) => {
            (StatusCode::UNSUPPORTED_MEDIA_TYPE, OwnerErrorKind::Invalid)
        }
        JsonRejection::BytesRejection(_) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            (StatusCode::PAYLOAD_TOO_LARGE, OwnerErrorKind::TooLarge)
        }
        _ => (StatusCode::BAD_REQUEST, OwnerErrorKind::Invalid),
    };
    let message = match kind {
        OwnerErrorKind::TooLarge => format!("request body is larger than {MAX_BODY} bytes"),
        _ if status == StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            "send the body as Content-Type: application/json".into()
        }
        _ => rejection.body_text(),
    };
    error_response(status, OwnerError { kind, message })
}

pub(crate) fn query_refusal(rejection: QueryRejection) -> Response {
    error_response(
        StatusCode::BAD_REQUEST,
        OwnerError::invalid(rejection.body_text()),
    )
}

pub(crate) fn reply<T: Serialize>(status: StatusCode, result: Result<T, OwnerError>) -> Response {
    match result {
        Ok(v) => (status, axum::Json(v)).into_response(),
        Err(e) => e.into_response(),
    }
}
