//! HTTP itself: the root router that puts every area's room together behind the guard
//! (`Host`, `Origin`, the bearer token resolved to a [`auth::Caller`]) and the body limit
//! (JSON bodies of at most 1 MiB), `/healthz`, the web UI's files, and how every area
//! refuses ([`error`]). The areas' routes live with their areas: the owner API in
//! `owner`, A2A in `a2a`, MCP in `mcp`, the hooks in `agents`.

pub(crate) mod auth;
pub(crate) mod error;
pub(crate) mod guard;
pub mod routes;
pub mod ui;
pub mod ui_codes;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::get;

use crate::http::guard::{Guard, guard};
use crate::http::routes::{Access, House, Room, RouteDoc};
use crate::owner::{OwnerError, OwnerErrorKind, OwnerService};

/// The largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// What the daemon's areas need to build their rooms.
pub(crate) struct Areas {
    pub owner: OwnerService,
    pub a2a: crate::a2a::A2a,
    pub mcp: Room,
    pub delivery: crate::delivery::Delivery,
    pub credentials: crate::http::auth::Credentials,
    pub notices: Arc<crate::notify::EventNotifier>,
    pub ui: crate::http::ui::UiState,
}

/// Every route of the daemon, room by room ([`crate::http::routes`]), behind the guard and the
/// body limit; with the route table the rooms declare.
pub(crate) fn router(areas: Areas, guard_state: Arc<Guard>) -> (Router, Vec<RouteDoc>) {
    let Areas {
        owner,
        a2a,
        mcp,
        delivery,
        credentials,
        notices,
        ui,
    } = areas;
    let health = Room::new(Access::Open).route("GET", "/healthz", get(|| async { "ok" }));
    let events = Room::new(Access::Owner)
        .route("GET", "/api/events", get(crate::owner::events))
        .with_state((owner.clone(), notices));
    let (router, routes) = House::default()
        .room(health)
        .room(crate::owner::room(owner))
        .room(events)
        .rooms(crate::a2a::rooms(a2a))
        .room(crate::agents::room(delivery, credentials))
        .room(mcp)
        .rooms(crate::http::ui::rooms(ui))
        .into_parts();
    let router = router
        .fallback(|| async {
            error_response(
                StatusCode::NOT_FOUND,
                OwnerError {
                    kind: OwnerErrorKind::NotFound,
                    message: "no such route".into(),
                },
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(guard_state, guard));
    (router, routes)
}

pub(crate) use error::{Body, error_response};
