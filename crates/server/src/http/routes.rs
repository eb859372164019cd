//! Who may call which route, in the router's shape. Every area builds its routes in a
//! [`Room`] that says, once, which kinds of caller may enter; the room's routes sit behind a
//! layer that lets only those through, so a route cannot exist without saying who may call
//! it. The rooms together are the [`House`], whose [`RouteDoc`]s are the table in
//! ARCHITECTURE.md ("Who may call which route"); a test calls every route with every kind
//! of credential and with none and checks it against that table.
//!
//! The guard in front of everything ([`crate::http::guard`]) checks `Host` and `Origin` and finds
//! out who presented which token; the room's layer only decides.
//!
//! A room also says whether it is served on the network listener for askers on other
//! machines ([`Room::on_network`]; off unless said): the House puts those rooms, and only
//! those, into a second router, whose front is [`crate::http::network`]. The route table's
//! last column says which.

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;

use crate::http::auth::{Caller, CallerKind, Presented};

/// Which callers may enter a room.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Anyone who passes the `Host` and `Origin` checks: `/healthz`, the web UI's files.
    Open,
    /// The owner and the askers: A2A and the Agent Cards.
    Askers,
    /// The owner and the agent sessions of this machine: the hook intake and MCP.
    Workers,
    /// The owner alone: the owner API.
    Owner,
    /// The conformance desk of `serve --conformance` (its routes exist only then): the owner,
    /// the askers, and callers without a token, who enter as one anonymous asker
    /// ([`crate::http::auth::ANONYMOUS_ASKER`]) confined to that desk, since the kit sends no
    /// credentials. A wrong token is still refused, and a worker token too.
    Conformance,
}

impl Access {
    /// Whether a caller of this kind may enter.
    pub fn admits(self, kind: CallerKind) -> bool {
        match self {
            Access::Open => true,
            Access::Askers | Access::Conformance => {
                matches!(kind, CallerKind::Owner | CallerKind::Asker)
            }
            Access::Workers => matches!(kind, CallerKind::Owner | CallerKind::Worker),
            Access::Owner => kind == CallerKind::Owner,
        }
    }

    /// The words of the route table: who may call.
    pub fn who(self) -> &'static str {
        match self {
            Access::Open => "anyone",
            Access::Askers => "owner, askers",
            Access::Workers => "owner, workers",
            Access::Owner => "owner",
            Access::Conformance => "owner, askers, no token (only with --conformance)",
        }
    }

    /// Whether a caller without a token comes in (as the anonymous asker).
    fn admits_no_token(self) -> bool {
        self == Access::Conformance
    }

    /// Why a caller of another kind is refused, and what it should use instead.
    fn refusal(self, kind: CallerKind) -> String {
        let what = match self {
            Access::Open => return String::new(),
            Access::Askers | Access::Conformance => {
                "A2A is for askers (their own tokens) and the owner"
            }
            Access::Workers => {
                "the hook intake and MCP are for this machine's agent sessions (the worker \
                 token in the data directory's `worker-token` file, which `taskkeeper connect` \
                 wires) and the owner"
            }
            Access::Owner => "the owner API needs the owner's token",
        };
        let instead = match kind {
            CallerKind::Asker => "; askers use /a2a",
            CallerKind::Worker => "; sessions use /hooks and /mcp",
            CallerKind::Owner => "",
        };
        format!("{what}{instead}")
    }
}

/// One row of the route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteDoc {
    /// The methods the route answers, e.g. `GET POST`.
    pub methods: &'static str,
    /// The path as the router writes it (`{name}` for a parameter, `{*rest}` for the rest).
    pub path: &'static str,
    pub access: Access,
    /// Served on the network listener too.
    pub network: bool,
}

impl RouteDoc {
    /// The words of the route table's last column: who may call it on the network listener
    /// (only askers' tokens are taken there), or `no`.
    pub fn on_network(&self) -> &'static str {
        match (self.network, self.access) {
            (false, _) => "no",
            (true, Access::Open) => "anyone",
            (true, _) => "askers",
        }
    }
}

/// An area's routes, all behind one [`Access`].
pub(crate) struct Room<S = ()> {
    access: Access,
    network: bool,
    router: Router<S>,
    routes: Vec<RouteDoc>,
}

impl<S: Clone + Send + Sync + 'static> Room<S> {
    pub fn new(access: Access) -> Self {
        Self {
            access,
            network: false,
            router: Router::new(),
            routes: Vec::new(),
        }
    }

    /// Serve this room on the network listener too (askers' rooms and the cards only).
    pub fn on_network(mut self) -> Self {
        self.network = true;
        for r in &mut self.routes {
            r.network = true;
        }
        self
    }

    /// A route; `methods` names what `handler` answers, for the table.
    pub fn route(
        mut self,
        methods: &'static str,
        path: &'static str,
        handler: MethodRouter<S>,
    ) -> Self {
        self.router = self.router.route(path, handler);
        self.routes.push(RouteDoc {
            methods,
            path,
            access: self.access,
            network: self.network,
        });
        self
    }

    pub fn with_state<S2>(self, state: S) -> Room<S2> {
        Room {
            access: self.access,
            network: self.network,
            router: self.router.with_state(state),
            routes: self.routes,
        }
    }
}

impl Room<()> {
    /// A service at `path` and everything under it (the MCP transport).
    pub fn nest_service<T>(mut self, methods: &'static str, path: &'static str, service: T) -> Self
    where
        T: tower::Service<Request, Error = std::convert::Infallible>
            + Clone
            + Send
            + Sync
            + 'static,
        T::Response: axum::response::IntoResponse,
        T::Future: Send + 'static,
    {
        self.router = self.router.nest_service(path, service);
        self.routes.push(RouteDoc {
            methods,
            path,
            access: self.access,
            network: self.network,
        });
        self
    }
}

/// Every room, each behind its layer; those on the network in a router of their own too.
#[derive(Default)]
pub(crate) struct House {
    router: Router,
    network: Router,
    routes: Vec<RouteDoc>,
}

impl House {
    pub fn room(mut self, room: Room) -> Self {
        let router = match room.access {
            Access::Open => room.router,
            access => room
                .router
                .route_layer(axum::middleware::from_fn_with_state(access, admit)),
        };
        if room.network {
            self.network = self.network.merge(router.clone());
        }
        self.router = self.router.merge(router);
        self.routes.extend(room.routes);
        self
    }

    pub fn rooms(self, rooms: impl IntoIterator<Item = Room>) -> Self {
        rooms.into_iter().fold(self, House::room)
    }

    /// The loopback router, the network listener's, and the table.
    pub fn into_parts(self) -> (Router, Router, Vec<RouteDoc>) {
        (self.router, self.network, self.routes)
    }
}

/// A room's layer: let in the kinds of caller the room admits, with the [`Caller`] in the
/// request's extensions for the handlers; refuse everyone else, saying what to use.
async fn admit(State(access): State<Access>, mut request: Request, next: Next) -> Response {
    let presented = request
        .extensions()
        .get::<Presented>()
        .cloned()
        .unwrap_or(Presented::Nothing);
    let path = request.uri().path().to_owned();
    match presented {
        Presented::Caller(caller) if access.admits(caller.kind()) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Presented::Caller(caller) => {
            let kind = caller.kind();
            if let Caller::Asker(name) = &caller {
                tracing::warn!(asker = %name, %path, "refused: an asker outside A2A");
            } else {
                tracing::warn!(caller = kind.as_str(), %path, "refused: the wrong kind of caller");
            }
            crate::http::guard::refuse(StatusCode::FORBIDDEN, access.refusal(kind))
        }
        Presented::Unknown => {
            tracing::warn!(%path, "refused: wrong token");
            crate::http::guard::refuse(
                StatusCode::UNAUTHORIZED,
                "wrong bearer token; the owner's token is in the data directory's `token` file, \
                 the sessions' in `worker-token`, and askers get theirs from `taskkeeper asker add`",
            )
        }
        Presented::Nothing if access.admits_no_token() => {
            request
                .extensions_mut()
                .insert(Caller::Asker(crate::http::auth::ANONYMOUS_ASKER.to_owned()));
            next.run(request).await
        }
        Presented::Nothing => crate::http::guard::refuse(
            StatusCode::UNAUTHORIZED,
            format!(
                "missing `Authorization: Bearer <token>`; {}",
                access.refusal(CallerKind::Owner)
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_room_admits_its_callers() {
        use CallerKind::*;
        let admitted = |a: Access| -> Vec<CallerKind> {
            CallerKind::ALL
                .into_iter()
                .filter(|k| a.admits(*k))
                .collect()
        };
        assert_eq!(admitted(Access::Open), vec![Owner, Worker, Asker]);
        assert_eq!(admitted(Access::Askers), vec![Owner, Asker]);
        assert_eq!(admitted(Access::Workers), vec![Owner, Worker]);
        assert_eq!(admitted(Access::Owner), vec![Owner]);
        assert_eq!(admitted(Access::Conformance), vec![Owner, Asker]);
        assert!(Access::Conformance.admits_no_token());
        assert!(!Access::Askers.admits_no_token() && !Access::Owner.admits_no_token());
    }
}
