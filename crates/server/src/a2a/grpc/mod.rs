//! The gRPC binding (A2A v1.0 §10): the `lf.a2a.v1.A2AService` that `a2a-pb` (the official
//! Rust SDK's crate, generated from the spec's `a2a.proto`) defines, served by tonic on the
//! daemon's own port (HTTP/2 without TLS on loopback, by prior knowledge) and on the network
//! listener where it serves TLS (HTTP/2 by ALPN). Like `rpc.rs` and
//! `rest.rs` it is only an envelope around the one [`super::dispatch`]: each call's message
//! becomes the method's v1.0 params ([`convert`]), and its result, stream items or error
//! become the reply's message, StreamResponses or `google.rpc.Status`, so rooms, limits and
//! errors are the other bindings'.
//!
//! A gRPC path names no desk, so the request's `tenant` does: a desk card's GRPC interface
//! names its desk as the tenant, and an SDK sets it on every request. No tenant is the machine
//! endpoint (the caller's tasks on any desk), except for a caller without a token under
//! `serve --conformance`, who is confined to the conformance desk (the kit sends no tenant).
//! The credentials are the other bindings': `authorization: Bearer …` metadata, which is the
//! HTTP/2 header the guard reads; its refusals reach a gRPC client as gRPC statuses
//! ([`crate::http::grpc_refusals`]). `a2a-version` metadata, when given, must be 1.0.

mod convert;

use std::pin::Pin;

use a2a_pb::proto;
use a2a_pb::proto::a2a_service_server::{A2aService, A2aServiceServer};
use axum::http::HeaderMap;
use serde_json::{Value, json};
use tokio_stream::{Stream, StreamExt as _};
use tonic::{Code, Request, Response, Status};

use super::rpc::RpcError;
use super::wire::{self, Dialect};
use super::{A2a, Ctx, Envelope, Reply};
use crate::http::auth::{ANONYMOUS_ASKER, Caller};
use crate::http::network::Outside;
use crate::http::routes::{Access, Room};
use convert::Twin;

/// The service's path; each method is one segment under it.
const PATH: &str = "/lf.a2a.v1.A2AService/{method}";

/// The binding's room: askers and the owner, on the network listener too (which serves it
/// over HTTP/2 where it serves TLS itself); under `serve --conformance`, callers without a
/// token too (the kit's), each confined to the conformance desk by [`Service::desk`], on
/// loopback only, as the other bindings' conformance rooms.
pub(super) fn rooms(a2a: &A2a) -> Vec<Room> {
    let service = A2aServiceServer::new(Service { a2a: a2a.clone() })
        .max_decoding_message_size(crate::http::MAX_BODY);
    let route = axum::routing::post_service(service);
    let room = if a2a.card.conformance_desk.is_some() {
        Room::new(Access::Conformance)
    } else {
        Room::new(Access::Askers).on_network()
    };
    vec![room.route("POST", PATH, route)]
}

/// A card's GRPC interface at `target` (`host:port`, what gRPC clients take).
pub(super) fn interface(target: &str, tenant: Option<&str>) -> Value {
    let mut interface = json!({
        "url": target,
        "protocolBinding": "GRPC",
        "protocolVersion": "1.0",
    });
    if let Some(t) = tenant {
        interface["tenant"] = json!(t);
    }
    interface
}

#[derive(Clone)]
struct Service {
    a2a: A2a,
}

type Items = Pin<Box<dyn Stream<Item = Result<proto::StreamResponse, Status>> + Send>>;

impl Service {
    /// The request's context: who calls (the room put it there), from where, on which desk.
    async fn context<T: Twin>(&self, request: &Request<T>) -> Result<(Ctx, Value), Status> {
        let caller = request
            .extensions()
            .get::<Caller>()
            .cloned()
            // The room's layer puts the caller in before the service runs.
            .ok_or_else(|| Status::internal("no caller on an A2A request"))?;
        let outside = request.extensions().get::<Outside>().cloned();
        check_version(request.metadata().as_ref())?;
        let (params, tenant) = convert::params(request.get_ref())?;
        let mut a2a = self.a2a.clone();
        a2a.outside = outside;
        let desk = self.desk(&a2a, &caller, tenant).await?;
        let ctx = Ctx {
            a2a,
            desk,
            caller,
            dialect: Dialect::V1,
            envelope: Envelope::Grpc,
        };
        Ok((ctx, params))
    }

    /// The desk a request's `tenant` names; none (the machine endpoint) without one, but for
    /// the conformance desk's callers without a token.
    async fn desk(
        &self,
        a2a: &A2a,
        caller: &Caller,
        tenant: String,
    ) -> Result<Option<taskkeeper_core::DeskName>, Status> {
        let anonymous = caller.asker_name() == ANONYMOUS_ASKER;
        let name = match (tenant.is_empty(), &a2a.card.conformance_desk) {
            (true, Some(conformance)) if anonymous => conformance.clone(),
            (true, _) => return Ok(None),
            (false, Some(conformance)) if anonymous && tenant != *conformance => {
                return Err(Status::permission_denied(format!(
                    "a caller without a token reaches the conformance desk only (tenant \
                     {conformance:?} or none), not {tenant:?}"
                )));
            }
            (false, _) => tenant,
        };
        match super::check_desk(a2a, name).await {
            Ok(d) => Ok(Some(d)),
            Err(e) => Err(convert::status_with(Code::NotFound, &e)),
        }
    }

    async fn run<T: Twin>(&self, method: &str, request: Request<T>) -> Result<Reply, Status> {
        let (ctx, params) = self.context(&request).await?;
        super::dispatch(&ctx, method, params)
            .await
            .map_err(|e| convert::status(&e))
    }

    async fn unary<T: Twin, R: Twin>(
        &self,
        method: &str,
        request: Request<T>,
    ) -> Result<Response<R>, Status> {
        let echo = activated_extension(request.metadata().as_ref());
        match self.run(method, request).await? {
            Reply::Json(result) => Ok(respond(convert::reply(result)?, echo)),
            Reply::Stream(_) => Err(Status::internal(format!(
                "{method} answered with a stream, where gRPC expects one message"
            ))),
        }
    }

    async fn streaming<T: Twin>(
        &self,
        method: &str,
        request: Request<T>,
    ) -> Result<Response<Items>, Status> {
        let echo = activated_extension(request.metadata().as_ref());
        match self.run(method, request).await? {
            Reply::Stream(events) => {
                let items = tokio_stream::wrappers::ReceiverStream::new(events.items)
                    .map(convert::reply::<proto::StreamResponse>);
                Ok(respond(Box::pin(items) as Items, echo))
            }
            Reply::Json(_) => Err(Status::internal(format!(
                "{method} answered with one message, where gRPC expects a stream"
            ))),
        }
    }
}

/// `a2a-version`, when given, must name 1.0: this service is v1.0's (v0.3's gRPC service
/// was another, `a2a.v1.A2AService`, not served here).
fn check_version(headers: &HeaderMap) -> Result<(), Status> {
    let given = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if given.trim().is_empty() {
        return Ok(());
    }
    match super::dialect_of(headers, None) {
        Ok(Dialect::V1) => Ok(()),
        _ => Err(convert::status(&RpcError::version(given.trim()))),
    }
}

/// Whether the caller activated our extension (`a2a-extensions`), whose URI the reply
/// then echoes, as the other bindings do.
fn activated_extension(headers: &HeaderMap) -> bool {
    headers
        .get_all("a2a-extensions")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|uri| uri.trim() == wire::EXTENSION_URI)
}

fn respond<T>(message: T, echo: bool) -> Response<T> {
    let mut response = Response::new(message);
    if echo && let Ok(uri) = wire::EXTENSION_URI.parse() {
        response.metadata_mut().insert("a2a-extensions", uri);
    }
    response
}

#[tonic::async_trait]
impl A2aService for Service {
    async fn send_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<proto::SendMessageResponse>, Status> {
        self.unary("SendMessage", request).await
    }

    type SendStreamingMessageStream = Items;

    async fn send_streaming_message(
        &self,
        request: Request<proto::SendMessageRequest>,
    ) -> Result<Response<Items>, Status> {
        self.streaming("SendStreamingMessage", request).await
    }

    async fn get_task(
        &self,
        request: Request<proto::GetTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary("GetTask", request).await
    }

    async fn list_tasks(
        &self,
        request: Request<proto::ListTasksRequest>,
    ) -> Result<Response<proto::ListTasksResponse>, Status> {
        self.unary("ListTasks", request).await
    }

    async fn cancel_task(
        &self,
        request: Request<proto::CancelTaskRequest>,
    ) -> Result<Response<proto::Task>, Status> {
        self.unary("CancelTask", request).await
    }

    type SubscribeToTaskStream = Items;

    async fn subscribe_to_task(
        &self,
        request: Request<proto::SubscribeToTaskRequest>,
    ) -> Result<Response<Items>, Status> {
        self.streaming("SubscribeToTask", request).await
    }

    async fn create_task_push_notification_config(
        &self,
        request: Request<proto::TaskPushNotificationConfig>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary("CreateTaskPushNotificationConfig", request)
            .await
    }

    async fn get_task_push_notification_config(
        &self,
        request: Request<proto::GetTaskPushNotificationConfigRequest>,
    ) -> Result<Response<proto::TaskPushNotificationConfig>, Status> {
        self.unary("GetTaskPushNotificationConfig", request).await
    }

    async fn list_task_push_notification_configs(
        &self,
        request: Request<proto::ListTaskPushNotificationConfigsRequest>,
    ) -> Result<Response<proto::ListTaskPushNotificationConfigsResponse>, Status> {
        self.unary("ListTaskPushNotificationConfigs", request).await
    }

    async fn get_extended_agent_card(
        &self,
        request: Request<proto::GetExtendedAgentCardRequest>,
    ) -> Result<Response<proto::AgentCard>, Status> {
        self.unary("GetExtendedAgentCard", request).await
    }

    async fn delete_task_push_notification_config(
        &self,
        request: Request<proto::DeleteTaskPushNotificationConfigRequest>,
    ) -> Result<Response<()>, Status> {
        match self
            .run("DeleteTaskPushNotificationConfig", request)
            .await?
        {
            Reply::Json(_) => Ok(Response::new(())),
            Reply::Stream(_) => Err(Status::internal(
                "DeleteTaskPushNotificationConfig answered with a stream",
            )),
        }
    }
}
