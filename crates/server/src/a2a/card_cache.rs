//! How the Agent Cards are cached by their readers (A2A §8.6): `Cache-Control`, an `ETag`
//! from the card's bytes, and a `Last-Modified` that is when this daemon first served the
//! card as it is now (a card is drawn from the desks, the settings and the signing key, none
//! of which keeps a date of its own). Both validators are honoured: `If-None-Match` first,
//! else `If-Modified-Since` (RFC 9110 §13.2.2).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, SubsecRound, Utc};
use serde_json::Value;

/// The cards kept track of at most; past that the clock starts over (every card then counts
/// as changed now, which only costs a reader one full answer).
const KEPT: usize = 256;

/// The ETag a card was last served with, and since when.
type Served = (String, DateTime<Utc>);

/// Per card path (under the base URL it was served at), what it was last served as.
#[derive(Clone, Debug, Default)]
pub(crate) struct CardClock(Arc<Mutex<HashMap<String, Served>>>);

impl CardClock {
    /// Since when `path` has been served with `etag`: now, if it changed.
    fn since(&self, path: &str, etag: &str) -> DateTime<Utc> {
        let mut seen = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((kept, since)) = seen.get(path)
            && kept == etag
        {
            return *since;
        }
        if seen.len() >= KEPT {
            seen.clear();
        }
        // Whole seconds, as the header carries them, so an echoed date matches exactly.
        let now = Utc::now().trunc_subsecs(0);
        seen.insert(path.to_owned(), (etag.to_owned(), now));
        now
    }
}

/// The card at `path` as an answer to a GET with `headers`: the card, or 304 when the
/// reader's copy is current.
pub(super) fn card_response(
    clock: &CardClock,
    path: &str,
    headers: &HeaderMap,
    card: &Value,
) -> Response {
    let body = card.to_string();
    let etag = format!("\"{}\"", &crate::http::auth::token_hash(&body)[..32]);
    let since = clock.since(path, &etag);
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let current = match text(header::IF_NONE_MATCH) {
        Some(tags) => tags.split(',').any(|t| t.trim() == etag || t.trim() == "*"),
        None => text(header::IF_MODIFIED_SINCE)
            .and_then(|d| DateTime::parse_from_rfc2822(d).ok())
            .is_some_and(|held| since <= held),
    };
    let mut response = if current {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, "application/json")], body).into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=60"),
    );
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    let date = since.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    if let Ok(v) = HeaderValue::from_str(&date) {
        h.insert(header::LAST_MODIFIED, v);
    }
    response
}
