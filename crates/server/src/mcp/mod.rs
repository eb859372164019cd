//! The MCP server at `/mcp` (design.md §7): how the agent sessions working at the desks end
//! their tasks, and how a session asks another desk for something. Streamable HTTP through
//! rmcp, the official Rust SDK, in the workers' room ([`crate::http::routes`]): only the worker
//! token (what `taskkeeper connect` configures in Claude Code) and the owner's reach it, and
//! the [`Caller`] is in the request's extensions. Askers use A2A.
//!
//! Tools: `task_update` (the ending: done, blocked, failed or rejected, with its text), `task_list`
//! (this desk's open tasks) and `task_get` (one with its request); for asking other desks,
//! `desks_list`, `task_send`, `task_status`, `task_ack`.
//!
//! **Which session is calling.** Claude Code sends no session identity to HTTP MCP servers
//! (docs/claude-code.md §13), and `Mcp-Session-Id` names a transport connection, not a
//! Claude session (protocol 2026-07-28 drops it altogether). So every tool takes `session_id`
//! and `session_proof` arguments, and the PreToolUse hook that `taskkeeper connect` installs
//! (matcher `mcp__taskkeeper__.*`) answers with `updatedInput` = the model's arguments plus
//! the hook payload's own `session_id` and the daemon's proof for it, and allows the call.
//! The hook's id is always the current one (it rotates on `/clear`), it needs no launcher,
//! and the model never has to know either; an id the model writes itself has no proof and
//! is refused. A session Taskkeeper launched carries both in headers of its private MCP
//! configuration, which no argument overrides. A worker's call must name a proven session
//! the daemon knows, and that session scopes the call: `task_update` ends only a task handed
//! to it ([`taskkeeper_core::queue::session_may_end`]), `task_get`
//! refuses a task of another desk, `task_list` lists that desk, and `task_send` asks as
//! `desk:<desk>` (a name no registered asker can have, since asker names cannot contain
//! ':'). The owner's token may name a session without proof, or none: then it acts as the
//! owner, like the CLI's `taskkeeper task update`.
//!
//! This module translates; the task rules stay in the core. Every write goes through
//! [`Tasks`] (so it is published), the worker's word is parsed by [`WorkerStatus`], and a
//! refused transition comes back from `transition::apply` and is turned into a tool error
//! (`isError: true`, a message naming the thing and the fix). A call rmcp cannot decode is
//! answered by rmcp itself: arguments that do not fit the schema as a tool error naming the
//! field, an unknown tool as a JSON-RPC error.
//!
//! Results: text for the model, and the same as `structuredContent` JSON (snake_case fields,
//! with a `next` hint where there is a next step). Claude Code 2.1.332 shows the model the
//! structured content of a successful result and the text of an error, so both carry the
//! guidance; an error also has `structuredContent.error = {kind, message}`.
//!
//! Transport: requests are served statelessly (`legacy_session_mode` off, JSON responses).
//! Claude Code 2.1.332 against this server probes `server/discover` for protocol 2026-07-28,
//! which rmcp answers, and then sends `tools/list` and `tools/call` with their per-request
//! `_meta` and no `initialize` at all. A client without 2026-07-28 (or Claude Code when the
//! probe fails) sends `initialize` with 2025-11-25 and a `GET` for an event stream, whose 405
//! it accepts. Neither needs a server-side session, none of these tools sends anything to
//! the client unasked, and a daemon restart leaves no stale `Mcp-Session-Id` behind. The
//! daemon's shutdown cancels the service's token, so no open response keeps the graceful
//! shutdown waiting.

use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};
use taskkeeper_core::asker::{self, Reader};
use taskkeeper_core::{Session, SessionId, StoreError, Task, TaskId, TransitionError};
use tokio_util::sync::CancellationToken;

use crate::http::auth::{Caller, Credentials};
use crate::http::routes::{Access, Room};
use crate::owner::OwnerErrorKind;
use crate::tasks::Tasks;

mod read;
mod tools;

pub use tools::{SessionArgs, SessionClaim, TaskIdArgs, TaskSendArgs, TaskUpdateArgs};

/// The prefix of the asker name a session's `task_send` carries.
const DESK_ASKER_PREFIX: &str = "desk:";

const INSTRUCTIONS: &str = "Taskkeeper keeps the tasks that other agents (askers) give to this \
desk open until you say how they ended. Each task reaches the session with a header naming its \
id and its asker. When you have finished one, call task_update with status `done` and a short \
summary; if you need something from the asker, `blocked` and what you need; if it cannot be \
done, `failed` and why; to decline a task you will not take on, `rejected` and why. The ending comes only from task_update: your reply text is never read \
as one. task_list shows this desk's open tasks, task_get one of them with its request. To ask \
another desk for something, use desks_list, task_send, then task_status (and task_ack once you \
have read the ending). The session_id and session_proof arguments are filled in by \
Taskkeeper's hook; leave them out.";

/// The `/mcp` room: the agent sessions of this machine (the worker token) and the owner.
/// `cancel` is cancelled when the daemon shuts down.
pub(crate) fn room(
    tasks: Tasks,
    credentials: Credentials,
    port: u16,
    body_limit: usize,
    cancel: CancellationToken,
) -> Room {
    let loopback = [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        // rmcp's own DNS-rebinding check, kept on; `host:port` entries match that port only.
        // The guard in front already enforces the same hosts and origins.
        .with_allowed_hosts(loopback.clone())
        .with_allowed_origins(loopback.iter().map(|h| format!("http://{h}")))
        .with_max_request_body_bytes(body_limit)
        .with_cancellation_token(cancel);
    let server = McpServer { tasks, credentials };
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Room::new(Access::Workers).nest_service("POST", "/mcp", service)
}

/// The MCP server; one per request (it is only handles to shared state).
#[derive(Clone, Debug)]
pub(crate) struct McpServer {
    tasks: Tasks,
    credentials: Credentials,
}

// ---- tool errors ------------------------------------------------------------------------

/// A refusal the caller sees as a tool result with `isError: true`; its kind is the owner
/// error's kind (the daemon's one vocabulary of refusals), its message written for the model.
#[derive(Debug)]
struct ToolError {
    kind: OwnerErrorKind,
    message: String,
}

impl ToolError {
    fn new(kind: OwnerErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    fn invalid(message: impl Into<String>) -> Self {
        Self::new(OwnerErrorKind::Invalid, message)
    }
    fn not_found(message: impl Into<String>) -> Self {
        Self::new(OwnerErrorKind::NotFound, message)
    }
    fn forbidden(message: impl Into<String>) -> Self {
        Self::new(OwnerErrorKind::Forbidden, message)
    }

    fn into_result(self) -> CallToolResult {
        let mut result = CallToolResult::error(vec![ContentBlock::text(self.message.clone())]);
        result.structured_content =
            Some(json!({"error": {"kind": self.kind, "message": self.message}}));
        result
    }

    /// A store error, said for this tool's caller: the kind is [`OwnerErrorKind::of`]'s; the
    /// wording points at the tools where the generic one (written for the CLI and askers)
    /// would point the wrong way, and ended tasks get `ended`.
    fn store(e: StoreError, ended: impl FnOnce(&TaskId, &str) -> String) -> Self {
        let kind = OwnerErrorKind::of(&e);
        let message = match e {
            StoreError::NoSuchTask(id) => format!("no task {id}; task_list shows the open tasks"),
            StoreError::NoSuchDesk(name) => {
                format!("no desk named {name}; desks_list shows the desks")
            }
            StoreError::Transition(TransitionError::Ended { id, state }) => {
                ended(&id, state.as_str())
            }
            other if kind == OwnerErrorKind::Internal => {
                tracing::error!(error = %other, "store error in an MCP tool");
                format!(
                    "Taskkeeper could not do this: {other}. Try again; if it persists, the daemon's log says more"
                )
            }
            other => other.to_string(),
        };
        Self::new(kind, message)
    }
}

type ToolOutcome = Result<CallToolResult, ToolError>;

fn finish(outcome: ToolOutcome) -> Result<CallToolResult, ErrorData> {
    Ok(outcome.unwrap_or_else(ToolError::into_result))
}

fn success(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

// ---- who is calling ---------------------------------------------------------------------

/// The caller of one tool call: the token's identity and the session it acts as. A worker's
/// call always has its session, proven; the owner's has one only when it names one.
struct Call {
    caller: Caller,
    session: Option<Session>,
}

impl Call {
    /// The asker name `task_send` gives, and `task_status`/`task_ack` must find.
    fn asker(&self) -> String {
        match &self.session {
            Some(s) => format!("{DESK_ASKER_PREFIX}{}", s.desk),
            None => self.caller.asker_name().to_owned(),
        }
    }

    /// Who this call reads its desk's work as (`asker::may_read`): its session, else the
    /// owner (a worker's call always has its session).
    fn reader(&self) -> Reader<'_> {
        match &self.session {
            Some(s) => Reader::Session(s),
            None => self.caller.reader(),
        }
    }

    /// Refuse a task this call may not read as a worker (`asker::may_read`): one of another
    /// desk than the calling session's, or one handed to another session of its desk.
    fn may_read(&self, task: &Task) -> Result<(), ToolError> {
        if asker::may_read(self.reader(), task) {
            return Ok(());
        }
        let refusal = match (&self.session, &task.delivered_to) {
            (Some(s), _) if s.desk != task.desk => taskkeeper_core::queue::NotHeld::OtherDesk {
                task: task.id.clone(),
                task_desk: task.desk.clone(),
                desk: s.desk.clone(),
            }
            .to_string(),
            (Some(_), Some(other)) => format!(
                "task {} was handed to session {other}, not to this one; it is that session's \
                 to read and to end. task_list shows the tasks this session may take",
                task.id
            ),
            _ => format!("task {} is not this caller's to read", task.id),
        };
        Err(ToolError::forbidden(refusal))
    }
}

impl McpServer {
    /// Who calls, as which session. The session comes from what the caller can prove, never
    /// from what it merely says: a launched session's headers (its private MCP
    /// configuration) are authoritative and no argument overrides them; otherwise the
    /// arguments' `session_id` counts only with its `session_proof` (which Taskkeeper's
    /// PreToolUse hook adds). A worker's call without a proven session is refused; the
    /// owner may name a session without proof (it may do everything anyway) or none.
    async fn call(
        &self,
        ctx: &RequestContext<RoleServer>,
        claim: SessionClaim,
    ) -> Result<Call, ToolError> {
        let parts = ctx.extensions.get::<Parts>();
        let caller = parts
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned()
            .ok_or_else(|| {
                ToolError::forbidden("this call carried no verified caller; send the bearer token")
            })?;
        if let Caller::Asker(name) = &caller {
            // The route's layer admits no asker; this stays true if that ever changes.
            return Err(ToolError::forbidden(format!(
                "MCP is for the agent sessions on this machine; asker {name} uses A2A"
            )));
        }
        let header = |name: &str| {
            parts
                .and_then(|p| p.headers.get(name))
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let launched = header(crate::agents::headers::SESSION);
        tracing::debug!(
            argument = claim.session_id.as_deref(),
            header = launched.as_deref(),
            "an MCP tool call's session"
        );
        let named = claim.session_id.filter(|s| !s.trim().is_empty());
        // Checked before anything is looked up: an id no session can have names none.
        for id in [launched.as_deref(), named.as_deref()]
            .into_iter()
            .flatten()
        {
            SessionId::parse(id).map_err(|e| {
                ToolError::invalid(format!("{e}. Nothing changed: leave session_id out"))
            })?;
        }
        let session_id = if let Some(launched) = launched {
            let proof = header(crate::agents::headers::SESSION_PROOF).unwrap_or_default();
            if !self.credentials.proves(&launched, &proof) {
                return Err(ToolError::forbidden(format!(
                    "the X-Taskkeeper-Session header names {launched:?} without its proof; only \
                     the MCP configuration Taskkeeper wrote for a session it launched carries it"
                )));
            }
            if let Some(named) = named.as_ref().filter(|n| **n != launched) {
                return Err(ToolError::forbidden(format!(
                    "this is session {launched} (its MCP configuration says so); session_id \
                     {named:?} cannot make it another session. Nothing changed: leave \
                     session_id out"
                )));
            }
            launched
        } else if let Some(named) = named {
            let proven = claim
                .session_proof
                .as_deref()
                .is_some_and(|p| self.credentials.proves(&named, p));
            if !proven && caller != Caller::Owner {
                return Err(ToolError::forbidden(format!(
                    "session_id {named:?} came without its proof, so it is not taken; nothing \
                     changed. Taskkeeper's PreToolUse hook (Gemini: BeforeTool) adds both to this \
                     tool's calls: leave them out, and if this keeps happening run `taskkeeper \
                     connect` for your agent (claude-code, codex or gemini) or restart the session"
                )));
            }
            named
        } else if caller == Caller::Owner {
            return Ok(Call {
                caller,
                session: None,
            });
        } else {
            return Err(ToolError::forbidden(
                "this call names no session, and a session's tool calls must say which session \
                 they are: Taskkeeper's PreToolUse hook (Gemini: BeforeTool) adds that (check that \
                 `taskkeeper connect claude-code`, `codex` or `gemini` set it up, then restart the \
                 session). Nothing changed",
            ));
        };
        let id = SessionId::from(session_id.clone());
        let session = self
            .tasks
            .session_store()
            .get(&id)
            .await
            .map_err(|e| ToolError::store(e, |_, _| String::new()))?;
        match session {
            Some(session) => Ok(Call {
                caller,
                session: Some(session),
            }),
            None => Err(ToolError::not_found(format!(
                "no session {session_id:?} is known to Taskkeeper; its hooks report a session \
                 when it starts: check that `taskkeeper connect` set them up for this project, \
                 or restart the session"
            ))),
        }
    }

    async fn task(&self, id: &str) -> Result<Task, ToolError> {
        let id = TaskId::from(id.trim());
        self.tasks
            .get(&id)
            .await
            .map_err(|e| ToolError::store(e, |_, _| String::new()))?
            .ok_or_else(|| {
                ToolError::not_found(format!("no task {id}; task_list shows the open tasks"))
            })
    }

    /// The task of `id` as `call` sees the tasks it asked for: to read (`act` false), one it
    /// may read as that asker (`asker::may_read`; the owner without a session reads any); to
    /// act on, one it asked (`asker::asked`). Any other task is not found, exactly like a
    /// task that does not exist (as in A2A).
    async fn sent_task(&self, call: &Call, id: &str, act: bool) -> Result<Task, ToolError> {
        let asker = call.asker();
        let reader = match &call.session {
            Some(_) => Reader::Asker(&asker),
            None => call.caller.reader(),
        };
        let may = |t: &Task| {
            if act {
                asker::asked(&asker, t)
            } else {
                asker::may_read(reader, t)
            }
        };
        match self.task(id).await {
            Ok(t) if may(&t) => Ok(t),
            Err(e) if e.kind != OwnerErrorKind::NotFound => Err(e),
            _ => Err(ToolError::not_found(format!(
                "no task {} sent by {asker}; task_send's answer names the task id",
                id.trim()
            ))),
        }
    }
}
