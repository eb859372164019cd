//! The root router: every area's room ([`crate::http::routes`]) put together behind the guard
//! and the body limit, with `/healthz` and the owner's event stream. It sits above every area
//! it names (the owner API, A2A, the hooks, MCP, the web UI), so `http` stays a leaf that
//! serves them without naming them.

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::response::IntoResponse as _;
use axum::routing::get;

use crate::error::{OwnerError, OwnerErrorKind};
use crate::http::guard::{Guard, guard};
use crate::http::routes::{Access, House, Room, RouteDoc};
use crate::http::{MAX_BODY, error_response};
use crate::owner::OwnerService;
use crate::owner::api::SessionView;

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

/// The daemon's routers: every route, room by room ([`crate::http::routes`]), behind the
/// guard and the body limit, for loopback; the rooms served on the network listener, behind
/// the body limit, for the network listener to put its own front before
/// ([`crate::network`]); and the route table the rooms declare.
pub(crate) fn router(areas: Areas, guard_state: Arc<Guard>) -> (Router, Router, Vec<RouteDoc>) {
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
    let (router, network, routes) = House::default()
        .room(health)
        .room(crate::owner::room(owner))
        .room(events)
        .rooms(crate::a2a::rooms(a2a))
        .room(crate::agents::room(delivery, credentials, |session| {
            axum::Json(SessionView::from(session)).into_response()
        }))
        .room(mcp)
        .rooms(crate::http::ui::rooms(ui))
        .into_parts();
    let router = router
        .fallback(no_such_route)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(guard_state, guard))
        // Outermost: the guard's and the rooms' refusals of a gRPC call, as gRPC statuses.
        .layer(axum::middleware::from_fn(
            crate::http::grpc_refusals::as_grpc,
        ));
    let network = network
        .fallback(|| async {
            error_response(
                StatusCode::NOT_FOUND,
                OwnerError {
                    kind: OwnerErrorKind::NotFound,
                    message: "no such route on the network listener, which serves A2A and the \
                              Agent Cards only; the owner API, the hooks, MCP and the web UI \
                              answer on this machine's loopback address alone"
                        .into(),
                },
            )
        })
        .layer(DefaultBodyLimit::max(MAX_BODY));
    (router, network, routes)
}

async fn no_such_route() -> axum::response::Response {
    error_response(
        StatusCode::NOT_FOUND,
        OwnerError {
            kind: OwnerErrorKind::NotFound,
            message: "no such route".into(),
        },
    )
}
