//! Between gRPC's messages and the one dispatch's JSON: a request arrives as a prost message
//! of `a2a_pb::proto` and leaves for the dispatch as its ProtoJSON (the v1.0 JSON both other
//! bindings take), a result comes back as that JSON and leaves as the prost message; an
//! [`RpcError`] leaves as a `google.rpc.Status` with the spec's gRPC code (A2A §5.4) and its
//! `ErrorInfo`.
//!
//! `a2a-pb` generates each message twice from the same `a2a.proto`: once for tonic
//! (`a2a_pb::proto`) and once with ProtoJSON's serde (`a2a_pb::protojson`). Both are the same
//! protobuf message, so one becomes the other through its wire bytes.

use std::collections::HashMap;

use a2a_pb::{proto, protojson};
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt as _};

use crate::a2a::rpc::{RpcError, domain_of};

/// A message of `a2a_pb::proto` and its ProtoJSON twin of `a2a_pb::protojson`.
pub(super) trait Twin: Message + Default {
    type Json: Message + Default + Serialize + DeserializeOwned;
}

macro_rules! twins {
    ($($name:ident),* $(,)?) => {
        $(impl Twin for proto::$name {
            type Json = protojson::$name;
        })*
    };
}

twins!(
    SendMessageRequest,
    SendMessageResponse,
    StreamResponse,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    CancelTaskRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    AgentCard,
    Task,
);

/// One generated form of a message as the other, through its wire bytes.
fn transcode<From: Message, To: Message + Default>(from: &From) -> Result<To, prost::DecodeError> {
    To::decode(from.encode_to_vec().as_slice())
}

/// A request as the dispatch's params: its ProtoJSON object, `tenant` taken out (it names the
/// desk, which the binding resolves; the methods never read it).
pub(super) fn params<T: Twin>(request: &T) -> Result<(Value, String), Status> {
    let json: T::Json = transcode(request).map_err(|e| {
        Status::internal(format!("the request could not be read as ProtoJSON: {e}"))
    })?;
    let mut value = serde_json::to_value(json)
        .map_err(|e| Status::internal(format!("the request could not be written as JSON: {e}")))?;
    let tenant = match &mut value {
        Value::Object(o) => match o.remove("tenant") {
            Some(Value::String(t)) => t,
            _ => String::new(),
        },
        _ => String::new(),
    };
    Ok((value, tenant))
}

/// A result of the dispatch as the reply's message.
pub(super) fn reply<T: Twin>(result: Value) -> Result<T, Status> {
    let json: T::Json = serde_json::from_value(result).map_err(|e| {
        tracing::error!(error = %e, "an A2A result does not fit its gRPC message");
        Status::internal(format!("the reply does not fit its gRPC message: {e}"))
    })?;
    transcode(&json)
        .map_err(|e| Status::internal(format!("the reply could not be encoded for gRPC: {e}")))
}

/// The gRPC code of an A2A error (A2A §5.4's table; JSON-RPC's own errors as their kind;
/// Taskkeeper's limits as quotas).
pub(super) fn code_of(e: &RpcError) -> Code {
    match e.code {
        -32001 => Code::NotFound,
        -32002 | -32007 | -32008 => Code::FailedPrecondition,
        -32003 | -32004 | -32009 | -32601 => Code::Unimplemented,
        -32005 | -32700 | -32600 | -32602 => Code::InvalidArgument,
        -32000 => Code::ResourceExhausted,
        _ => Code::Internal,
    }
}

/// An A2A error as a gRPC status with `code` and the error's `google.rpc.ErrorInfo` in its
/// details (`grpc-status-details-bin`): the reason, its domain, the metadata as strings.
pub(super) fn status_with(code: Code, e: &RpcError) -> Status {
    let reason = e
        .reason
        .unwrap_or_else(|| crate::a2a::rpc::standard_reason(e.code));
    let metadata: HashMap<String, String> = e
        .metadata
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect();
    Status::with_error_details(
        code,
        e.message.clone(),
        ErrorDetails::with_error_info(reason, domain_of(reason), metadata),
    )
}

pub(super) fn status(e: &RpcError) -> Status {
    status_with(code_of(e), e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_error_has_the_spec_grpc_code() {
        let cases = [
            (RpcError::task_not_found("t"), Code::NotFound),
            (RpcError::not_cancelable("x"), Code::FailedPrecondition),
            (RpcError::unsupported("x"), Code::Unimplemented),
            (RpcError::content_type("x"), Code::InvalidArgument),
            (RpcError::version("9"), Code::Unimplemented),
            (RpcError::invalid_params("x"), Code::InvalidArgument),
            (RpcError::parse("x"), Code::InvalidArgument),
            (RpcError::method_not_found("x"), Code::Unimplemented),
            (RpcError::internal("x"), Code::Internal),
        ];
        for (e, code) in cases {
            assert_eq!(code_of(&e), code, "{e:?}");
        }
    }

    #[test]
    fn an_error_carries_its_error_info() {
        let status = status(&RpcError::task_not_found("t-1"));
        let info = status.get_details_error_info().expect("an ErrorInfo");
        assert_eq!(info.reason, "TASK_NOT_FOUND");
        assert_eq!(info.domain, "a2a-protocol.org");
        assert_eq!(info.metadata.get("taskId").map(String::as_str), Some("t-1"));
    }

    #[test]
    fn a_request_becomes_protojson_params_without_its_tenant() {
        let request = proto::GetTaskRequest {
            tenant: "web".into(),
            id: "t-1".into(),
            history_length: Some(2),
        };
        let (params, tenant) = params(&request).unwrap();
        assert_eq!(tenant, "web");
        assert_eq!(params, json!({"id": "t-1", "historyLength": 2}));
    }

    #[test]
    fn a_result_becomes_its_message() {
        let task: proto::Task = reply(json!({
            "id": "t-1",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-12-03T10:00:00.000Z"},
        }))
        .unwrap();
        assert_eq!(task.id, "t-1");
        let status = task.status.unwrap();
        assert_eq!(status.state(), proto::TaskState::Working);
        assert!(status.timestamp.is_some());
    }
}
