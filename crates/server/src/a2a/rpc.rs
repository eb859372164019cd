//! JSON-RPC 2.0 for A2A: reading the envelope, and errors with the spec's codes. In v1.0 an
//! A2A error carries `data: [ErrorInfo]`; in v0.3 `data` is a plain object or absent.

use serde_json::{Map, Value, json};
use taskkeeper_core::limits::{Limit, LimitExceeded};
use taskkeeper_core::{StoreError, TransitionError};

use super::wire::Dialect;

/// A parsed request envelope.
#[derive(Debug)]
pub struct Request {
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// A JSON-RPC error with the A2A reason that names it.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    /// ErrorInfo `reason` for A2A errors (-32001..-32009) and Taskkeeper's limits
    /// (`*_LIMIT`, in Taskkeeper's domain: see [`domain_of`]).
    pub reason: Option<&'static str>,
    pub metadata: Map<String, Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>, reason: Option<&'static str>) -> Self {
        Self {
            code,
            message: message.into(),
            reason,
            metadata: Map::new(),
        }
    }

    pub fn with(mut self, key: &str, value: impl Into<String>) -> Self {
        self.metadata
            .insert(key.to_owned(), Value::String(value.into()));
        self
    }

    pub fn parse(detail: impl std::fmt::Display) -> Self {
        Self::new(-32700, format!("Invalid JSON payload: {detail}"), None)
    }
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(-32600, message, None)
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(-32601, format!("Method not found: {method}"), None)
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(-32602, format!("Invalid params: {}", message.into()), None)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(-32603, message, None)
    }
    pub fn task_not_found(id: &str) -> Self {
        Self::new(
            -32001,
            format!("Task not found: {id}"),
            Some("TASK_NOT_FOUND"),
        )
        .with("taskId", id)
    }
    pub fn not_cancelable(message: impl Into<String>) -> Self {
        Self::new(-32002, message, Some("TASK_NOT_CANCELABLE"))
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(-32004, message, Some("UNSUPPORTED_OPERATION"))
    }
    pub fn content_type(message: impl Into<String>) -> Self {
        Self::new(-32005, message, Some("CONTENT_TYPE_NOT_SUPPORTED"))
    }
    pub fn version(requested: &str) -> Self {
        Self::new(
            -32009,
            format!("Version not supported: {requested:?}; this server speaks 1.0 and 0.3"),
            Some("VERSION_NOT_SUPPORTED"),
        )
        .with("requested", requested)
        .with("supported", "1.0,0.3")
    }

    /// A refusal by one of Taskkeeper's limits. A2A defines no error for a quota, so the code
    /// is JSON-RPC's implementation-defined server error (-32000, outside A2A's
    /// -32001..-32099) and the ErrorInfo's reason, in Taskkeeper's domain, names the limit;
    /// its metadata names the setting and its value.
    pub fn limit(e: &LimitExceeded) -> Self {
        let reason = match e.limit() {
            Limit::OpenTasksPerAsker => "OPEN_TASKS_PER_ASKER_LIMIT",
            Limit::MessageBytes => "MESSAGE_BYTES_LIMIT",
            Limit::TaskBytes => "TASK_BYTES_LIMIT",
            Limit::FileBytes => "FILE_BYTES_LIMIT",
            Limit::Sessions => "SESSIONS_LIMIT",
            Limit::CreateDesks => "CREATE_DESKS_LIMIT",
            Limit::StreamsPerCaller => "STREAMS_PER_CALLER_LIMIT",
            Limit::PushConfigsPerTask => "PUSH_CONFIGS_PER_TASK_LIMIT",
        };
        Self::new(-32000, e.to_string(), Some(reason))
            .with("setting", e.limit().setting())
            .with("limit", e.max())
    }

    /// The `error` member in the request's dialect.
    pub fn to_json(&self, dialect: Dialect) -> Value {
        let mut e = json!({"code": self.code, "message": self.message});
        if let Some(reason) = self.reason {
            let data = match dialect {
                Dialect::V1 => json!([{
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": reason,
                    "domain": domain_of(reason),
                    "metadata": self.metadata,
                }]),
                Dialect::V03 => json!({"reason": reason, "metadata": self.metadata}),
            };
            e["data"] = data;
        }
        e
    }

    /// A store refusal as the A2A error that means it.
    pub fn from_store(e: StoreError) -> Self {
        match e {
            StoreError::NoSuchTask(id) => Self::task_not_found(id.as_str()),
            StoreError::Transition(t) => match &t {
                TransitionError::NotCancelable { id, .. } => {
                    Self::not_cancelable(t.to_string()).with("taskId", id.as_str())
                }
                TransitionError::Ended { id, .. }
                | TransitionError::StillOpen { id, .. }
                | TransitionError::NotQueued { id, .. }
                | TransitionError::NotWorking { id, .. }
                | TransitionError::NotStalled { id }
                | TransitionError::NothingToDeliver { id, .. } => {
                    Self::unsupported(t.to_string()).with("taskId", id.as_str())
                }
            },
            StoreError::NoSuchDesk(d) => Self::unsupported(format!("no desk named {d}")),
            StoreError::Limit(l) => Self::limit(&l),
            other => {
                tracing::error!(error = %other, "store error under A2A");
                Self::internal(format!("internal error: {other}"))
            }
        }
    }
}

/// The ErrorInfo domain of a reason: Taskkeeper's own reasons are its limits, all named
/// `*_LIMIT` (no A2A reason is); every other reason is the protocol's. Derived rather than
/// kept beside the reason, so the error stays small enough to travel in every `Result`.
pub fn domain_of(reason: &str) -> &'static str {
    if reason.ends_with("_LIMIT") {
        super::wire::ERROR_DOMAIN
    } else {
        "a2a-protocol.org"
    }
}

pub fn success(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

pub fn failure(id: &Value, error: &RpcError, dialect: Dialect) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_json(dialect)})
}

/// Read the envelope. On error, also return the id when one could be read.
#[allow(clippy::result_large_err)] // built once per request; boxing buys nothing
pub fn parse(body: &[u8]) -> Result<Request, (Value, RpcError)> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| (Value::Null, RpcError::parse(e)))?;
    let Value::Object(mut o) = value else {
        let what = if value.is_array() {
            "batch requests are not supported"
        } else {
            "the request must be a JSON object"
        };
        return Err((Value::Null, RpcError::invalid_request(what)));
    };
    let id = match o.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        Some(Value::Null) | None => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` is required (a string or a number)"),
            ));
        }
        Some(_) => {
            return Err((
                Value::Null,
                RpcError::invalid_request("`id` must be a string or a number"),
            ));
        }
    };
    if o.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err((id, RpcError::invalid_request("`jsonrpc` must be \"2.0\"")));
    }
    let method = match o.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => {
            return Err((
                id,
                RpcError::invalid_request("`method` must be a non-empty string"),
            ));
        }
    };
    let params = match o.remove("params") {
        Some(p @ Value::Object(_)) => p,
        None => Value::Object(Map::new()),
        Some(_) => return Err((id, RpcError::invalid_params("`params` must be an object"))),
    };
    Ok(Request { id, method, params })
}
