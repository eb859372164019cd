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
//! to it or its desk's current one ([`taskkeeper_core::queue::session_may_end`]), `task_get`
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

use std::fmt::Write as _;
use std::str::FromStr;
use std::sync::Arc;

use axum::http::request::Parts;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{
    DeskName, Message, NewTask, Role, Session, SessionId, StoreError, Task, TaskId, Timestamp,
    TransitionError,
};
use tokio_util::sync::CancellationToken;

use crate::http::auth::{Caller, Credentials};
use crate::http::routes::{Access, Room};
use crate::owner::{UpdateRefused, WorkerStatus};
use crate::tasks::Tasks;

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

// ---- arguments --------------------------------------------------------------------------

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TaskUpdateArgs {
    /// The task's id, as the task's header named it.
    pub task_id: String,
    /// How the task ended: `done` (finished; `text` is the summary the asker reads),
    /// `blocked` (you need something from the asker; `text` says what), `failed` (you tried
    /// and it cannot be done; `text` says why) or `rejected` (you decline it without taking
    /// it on, e.g. it is not this desk's work; `text` says why). Or `working`: attach
    /// `files`/`data` now and keep the task open (the asker sees them at once).
    #[schemars(extend("enum" = ["done", "blocked", "failed", "rejected", "working"]))]
    pub status: String,
    /// The summary, what you need, why it failed or why you reject it. The asker reads
    /// exactly this. Not needed with `working`.
    #[serde(default)]
    pub text: String,
    /// Files to give the asker as artifacts: paths inside this desk's directory (relative
    /// ones from there). Each becomes a file artifact with its name and media type.
    #[serde(default)]
    pub files: Vec<String>,
    /// JSON values to give the asker as data artifacts.
    #[serde(default)]
    pub data: Vec<Value>,
    /// The calling session, filled in by Taskkeeper's hook.
    #[serde(flatten)]
    pub session: SessionClaim,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TaskIdArgs {
    /// The task's id.
    pub task_id: String,
    /// The calling session, filled in by Taskkeeper's hook.
    #[serde(flatten)]
    pub session: SessionClaim,
}

/// Which session calls, and its proof: both filled in by Taskkeeper's PreToolUse hook (see
/// the module doc); the model leaves them out.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct SessionClaim {
    /// Filled in automatically by Taskkeeper's hook with the calling session's id; leave it
    /// out.
    #[serde(default)]
    pub session_id: Option<String>,
    /// Filled in automatically by Taskkeeper's hook; leave it out.
    #[serde(default)]
    pub session_proof: Option<String>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct SessionArgs {
    /// The calling session, filled in by Taskkeeper's hook.
    #[serde(flatten)]
    pub session: SessionClaim,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct TaskSendArgs {
    /// The desk to ask (desks_list shows them).
    pub desk: String,
    /// What you ask for, in full: the desk's session reads only this.
    pub text: String,
    /// The calling session, filled in by Taskkeeper's hook.
    #[serde(flatten)]
    pub session: SessionClaim,
}

// ---- tool errors ------------------------------------------------------------------------

/// A refusal the caller sees as a tool result with `isError: true`.
#[derive(Debug)]
struct ToolError {
    kind: &'static str,
    message: String,
}

impl ToolError {
    fn new(kind: &'static str, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    fn invalid(message: impl Into<String>) -> Self {
        Self::new("invalid", message)
    }
    fn not_found(message: impl Into<String>) -> Self {
        Self::new("not_found", message)
    }
    fn forbidden(message: impl Into<String>) -> Self {
        Self::new("forbidden", message)
    }

    fn into_result(self) -> CallToolResult {
        let mut result = CallToolResult::error(vec![ContentBlock::text(self.message.clone())]);
        result.structured_content =
            Some(json!({"error": {"kind": self.kind, "message": self.message}}));
        result
    }

    /// A store error, said for this tool's caller. Ended tasks get `ended` when the generic
    /// wording (written for askers) would point the wrong way.
    fn store(e: StoreError, ended: impl FnOnce(&TaskId, &str) -> String) -> Self {
        match e {
            StoreError::NoSuchTask(id) => {
                Self::not_found(format!("no task {id}; task_list shows the open tasks"))
            }
            StoreError::NoSuchDesk(name) => {
                Self::not_found(format!("no desk named {name}; desks_list shows the desks"))
            }
            StoreError::Transition(TransitionError::Ended { id, state }) => {
                Self::new("conflict", ended(&id, state.as_str()))
            }
            StoreError::Transition(t) => Self::new("conflict", t.to_string()),
            StoreError::Conflict(_) => Self::new("conflict", e.to_string()),
            StoreError::Limit(l) => Self::new("limit", l.to_string()),
            other => {
                tracing::error!(error = %other, "store error in an MCP tool");
                Self::new(
                    "internal",
                    format!(
                        "Taskkeeper could not do this: {other}. Try again; if it persists, the daemon's log says more"
                    ),
                )
            }
        }
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

    /// Refuse a task of another desk than the calling session's.
    fn same_desk(&self, task: &Task) -> Result<(), ToolError> {
        match &self.session {
            Some(s) if s.desk != task.desk => Err(ToolError::forbidden(
                taskkeeper_core::queue::NotHeld::OtherDesk {
                    task: task.id.clone(),
                    task_desk: task.desk.clone(),
                    desk: s.desk.clone(),
                }
                .to_string(),
            )),
            _ => Ok(()),
        }
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
            .blocking(move |s, _| s.session(&id))
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

    /// The task of `id` if `call`'s asker identity gave it; any other task is not found,
    /// exactly like a task that does not exist (as in A2A).
    async fn own_task(&self, call: &Call, id: &str) -> Result<Task, ToolError> {
        let asker = call.asker();
        match self.task(id).await {
            Ok(t) if t.asker == asker => Ok(t),
            Err(e) if e.kind != "not_found" => Err(e),
            _ => Err(ToolError::not_found(format!(
                "no task {} sent by {asker}; task_send's answer names the task id",
                id.trim()
            ))),
        }
    }
}

// ---- the tools --------------------------------------------------------------------------

#[tool_router]
impl McpServer {
    #[tool(
        description = "End a task of this desk: status `done` with a summary of what you did, \
        `blocked` with what you need from the asker (its answer comes back to this session), \
        `failed` with why it cannot be done, or `rejected` with why you decline it (not this \
        desk's work, not something you will do). The asker reads `text` exactly. Call it once per \
        task, when the work is really finished or stuck; an ended task cannot be updated again. \
        `files` (paths inside this desk's directory) and `data` (JSON values) go to the asker as \
        artifacts; status `working` attaches them and keeps the task open.",
        annotations(
            title = "End a task",
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn task_update(
        &self,
        Parameters(args): Parameters<TaskUpdateArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.task_update_inner(args, &ctx).await)
    }

    #[tool(
        description = "List the open tasks (queued, working or blocked) of this session's desk, \
        oldest first, with their ids, states and requests. Called without session_id (outside a \
        session set up by `taskkeeper connect`) it lists the open tasks of every desk.",
        annotations(title = "Open tasks", read_only_hint = true, open_world_hint = false)
    )]
    async fn task_list(
        &self,
        Parameters(args): Parameters<SessionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.task_list_inner(args, &ctx).await)
    }

    #[tool(
        description = "Show one task of this desk: its state, the asker's request, any later \
        messages from the asker (such as the answer to a blocked task), and its status.",
        annotations(title = "Read a task", read_only_hint = true, open_world_hint = false)
    )]
    async fn task_get(
        &self,
        Parameters(args): Parameters<TaskIdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.task_get_inner(args, &ctx).await)
    }

    #[tool(
        description = "List the desks you can give a task to with task_send.",
        annotations(title = "Desks", read_only_hint = true, open_world_hint = false)
    )]
    async fn desks_list(
        &self,
        Parameters(args): Parameters<SessionArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.desks_list_inner(args, &ctx).await)
    }

    #[tool(
        description = "Ask another desk to do something: creates a task on that desk and returns \
        its id at once (it is queued while the desk is busy). Follow it with task_status; the \
        desk's session ends it with done, blocked, failed or rejected.",
        annotations(
            title = "Ask a desk",
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn task_send(
        &self,
        Parameters(args): Parameters<TaskSendArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.task_send_inner(args, &ctx).await)
    }

    #[tool(
        description = "Show a task you sent with task_send: its state (submitted while queued, \
        working, input-required when the desk needs something from you, completed, failed or \
        canceled), its queue position, and the desk's answer.",
        annotations(
            title = "Status of a sent task",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn task_status(
        &self,
        Parameters(args): Parameters<TaskIdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.task_status_inner(args, &ctx).await)
    }

    #[tool(
        description = "Acknowledge that you have read how a task you sent ended (bookkeeping \
        only: the task's state does not change). Only an ended task can be acknowledged.",
        annotations(
            title = "Acknowledge an ended task",
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn task_ack(
        &self,
        Parameters(args): Parameters<TaskIdArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        finish(self.task_ack_inner(args, &ctx).await)
    }
}

#[tool_handler]
impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("taskkeeper", env!("CARGO_PKG_VERSION"))
                    .with_title("Taskkeeper"),
            )
            .with_instructions(INSTRUCTIONS)
    }
}

impl McpServer {
    async fn task_update_inner(
        &self,
        args: TaskUpdateArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let status = WorkerStatus::from_str(args.status.trim())
            .map_err(|e| ToolError::invalid(format!("{e}; nothing changed")))?;
        let task = self.task(&args.task_id).await?;
        if let Some(session) = &call.session {
            taskkeeper_core::queue::session_may_end(&task, session)
                .map_err(|e| ToolError::forbidden(e.to_string()))?;
        }
        let updated = crate::owner::worker_update(
            &self.tasks,
            &task,
            status,
            &args.text,
            &args.files,
            args.data,
        )
        .await
        .map_err(|e| match e {
            UpdateRefused::Invalid(message) => ToolError::invalid(message),
            UpdateRefused::Store(e) => ToolError::store(e, |id, state| {
                format!(
                    "task {id} has already ended ({state}); nothing changed: an ended task \
                     keeps its ending. task_list shows the open tasks"
                )
            }),
        })?;
        let task = updated;
        tracing::info!(task = %task.id, desk = %task.desk, state = %task.state().as_str(), "task_update over MCP");
        let text = format!(
            "Task {} is now {}. The asker will read your text.\n\n{}",
            task.id,
            task.state().as_str(),
            render_task(&task, Audience::Worker)
        );
        Ok(success(text, task_json(&task, Some(Audience::Worker))))
    }

    async fn task_list_inner(
        &self,
        args: SessionArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let desk = call.session.as_ref().map(|s| s.desk.clone());
        let filter = TaskFilter {
            state: StateFilter::Open,
            desk: desk.clone(),
            asker: None,
            limit: None,
        };
        let tasks = self
            .tasks
            .list(filter)
            .await
            .map_err(|e| ToolError::store(e, |_, _| String::new()))?;
        let scope = match &desk {
            Some(d) => format!("desk {d}"),
            None => "all desks".to_owned(),
        };
        let mut text = if tasks.is_empty() {
            format!("No open tasks ({scope}).")
        } else {
            format!("{} open task(s) ({scope}), oldest first:\n", tasks.len())
        };
        for t in &tasks {
            let _ = writeln!(text, "- {}", task_line(t));
        }
        let next =
            (!tasks.is_empty()).then_some("task_get shows one in full; task_update ends one.");
        if let Some(next) = next {
            let _ = write!(text, "\n{next}");
        }
        let list: Vec<Value> = tasks.iter().map(|t| task_json(t, None)).collect();
        let mut structured = json!({"desk": desk.map(|d| d.to_string()), "tasks": list});
        if let Some(next) = next {
            structured["next"] = json!(next);
        }
        Ok(success(text, structured))
    }

    async fn task_get_inner(
        &self,
        args: TaskIdArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let task = self.task(&args.task_id).await?;
        call.same_desk(&task)?;
        Ok(success(
            render_task(&task, Audience::Worker),
            task_json(&task, Some(Audience::Worker)),
        ))
    }

    async fn desks_list_inner(
        &self,
        args: SessionArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let desks = self
            .tasks
            .blocking(|s, _| s.desks())
            .await
            .map_err(|e| ToolError::store(e, |_, _| String::new()))?;
        let own = call.session.as_ref().map(|s| s.desk.clone());
        let mut text = if desks.is_empty() {
            "No desks yet; the owner adds them with `taskkeeper desk add`.".to_owned()
        } else {
            format!("{} desk(s):\n", desks.len())
        };
        for d in &desks {
            let mine = if own.as_ref() == Some(&d.name) {
                " (this session's own desk)"
            } else {
                ""
            };
            let _ = writeln!(text, "- {} ({}){mine}", d.name, d.agent);
        }
        let list: Vec<Value> = desks
            .iter()
            .map(|d| json!({"name": d.name.to_string(), "agent": d.agent.to_string()}))
            .collect();
        Ok(success(text, json!({"desks": list})))
    }

    async fn task_send_inner(
        &self,
        args: TaskSendArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let desk = DeskName::from_str(args.desk.trim())
            .map_err(|e| ToolError::invalid(format!("{e}; desks_list shows the desks")))?;
        if args.text.trim().is_empty() {
            return Err(ToolError::invalid(
                "text must not be empty: say what you ask the desk to do",
            ));
        }
        if let Some(s) = &call.session
            && s.desk == desk
        {
            return Err(ToolError::invalid(format!(
                "desk {desk} is this session's own desk; a task sent to it would wait behind \
                 the work in hand. Ask another desk (desks_list shows them)"
            )));
        }
        let asker = call.asker();
        let new = NewTask {
            desk,
            asker: asker.clone(),
            request: Message::user_text(TaskId::generate().to_string(), args.text),
            context_id: None,
            metadata: serde_json::Map::new(),
        };
        let task = self
            .tasks
            .submit(new)
            .await
            .map_err(|e| ToolError::store(e, |_, _| String::new()))?
            .task;
        tracing::info!(task = %task.id, desk = %task.desk, %asker, "task_send over MCP");
        let text = format!(
            "Sent: task {} on desk {} ({}).\n\n{}",
            task.id,
            task.desk,
            queue_words(&task),
            render_task(&task, Audience::Asker)
        );
        Ok(success(text, task_json(&task, Some(Audience::Asker))))
    }

    async fn task_status_inner(
        &self,
        args: TaskIdArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let task = self.own_task(&call, &args.task_id).await?;
        Ok(success(
            render_task(&task, Audience::Asker),
            task_json(&task, Some(Audience::Asker)),
        ))
    }

    async fn task_ack_inner(
        &self,
        args: TaskIdArgs,
        ctx: &RequestContext<RoleServer>,
    ) -> ToolOutcome {
        let call = self.call(ctx, args.session).await?;
        let task = self.own_task(&call, &args.task_id).await?;
        let task = self
            .tasks
            .apply(&task.id, taskkeeper_core::Event::Acknowledge)
            .await
            .map_err(|e| ToolError::store(e, |id, state| format!("task {id} ended as {state}")))?
            .task;
        let text = format!("Acknowledged task {} ({}).", task.id, task.state().as_str());
        Ok(success(text, task_json(&task, None)))
    }
}

// ---- rendering --------------------------------------------------------------------------

/// Who reads a rendered task: the worker gets the way to end it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Audience {
    Worker,
    Asker,
}

#[derive(Serialize)]
struct MessageOut {
    /// `asker` or `worker`.
    from: &'static str,
    text: String,
}

#[derive(Serialize)]
struct TaskOut {
    id: String,
    state: &'static str,
    desk: String,
    asker: String,
    request: String,
    status_text: Option<String>,
    queue_position: Option<u32>,
    stalled: bool,
    acknowledged: bool,
    created_at: Timestamp,
    updated_at: Timestamp,
    /// The messages after the request: follow-ups from the asker, the worker's words.
    messages: Vec<MessageOut>,
    /// The result artifact's text, once the task is done.
    result: Option<String>,
    /// What the reader can do next. Claude Code shows the model a result's structured
    /// content rather than its text, so the guidance the text gives is here too.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<String>,
}

fn message_out(m: &Message) -> MessageOut {
    MessageOut {
        from: match m.role {
            Role::User => "asker",
            Role::Agent => "worker",
        },
        text: m.text(),
    }
}

fn task_out(t: &Task, audience: Option<Audience>) -> TaskOut {
    let result = t
        .artifacts
        .iter()
        .find(|a| a.artifact_id == "result")
        .map(|a| {
            a.parts
                .iter()
                .filter_map(|p| match &p.content {
                    taskkeeper_core::task::PartContent::Text(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n\n")
        });
    TaskOut {
        id: t.id.to_string(),
        state: t.state().as_str(),
        desk: t.desk.to_string(),
        asker: t.asker.clone(),
        request: t.request_text(),
        status_text: t.status.message.as_ref().map(Message::text),
        queue_position: t.queue_position,
        stalled: t.stalled_at.is_some(),
        acknowledged: t.acknowledged_at.is_some(),
        created_at: t.created_at,
        updated_at: t.updated_at,
        messages: t.history.iter().skip(1).map(message_out).collect(),
        result,
        next: audience.and_then(|a| next_step(t, a)),
    }
}

fn next_step(t: &Task, audience: Audience) -> Option<String> {
    match audience {
        Audience::Worker if t.is_open() => Some(format!(
            "When the work is finished or stuck, end it with task_update(task_id: \"{}\", \
             status: \"done\" | \"blocked\" | \"failed\", text: …).",
            t.id
        )),
        Audience::Asker if t.is_open() => Some(format!(
            "The desk works on it; task_status(task_id: \"{}\") shows how it ends.",
            t.id
        )),
        Audience::Asker if t.acknowledged_at.is_none() => Some(format!(
            "It has ended; task_ack(task_id: \"{}\") acknowledges that you read it.",
            t.id
        )),
        _ => None,
    }
}

fn task_json(t: &Task, audience: Option<Audience>) -> Value {
    serde_json::to_value(task_out(t, audience)).unwrap_or(Value::Null)
}

fn queue_words(t: &Task) -> String {
    match t.queue_position {
        Some(p) => format!("queued, position {p}"),
        None => t.state().as_str().to_owned(),
    }
}

/// One line of a list.
fn task_line(t: &Task) -> String {
    let request = t.request_text();
    let first = request.lines().next().unwrap_or("");
    let mut short: String = first.chars().take(160).collect();
    if short.len() < request.trim_end().len() {
        short.push('…');
    }
    let stalled = if t.stalled_at.is_some() {
        ", stalled"
    } else {
        ""
    };
    format!(
        "{} — {}{stalled} — desk {}, from {} — {short}",
        t.id,
        queue_words(t),
        t.desk,
        t.asker
    )
}

fn render_task(t: &Task, audience: Audience) -> String {
    let o = task_out(t, Some(audience));
    let mut s = format!(
        "Task {} — {} — desk {}, asked by {}\n",
        o.id,
        queue_words(t),
        o.desk,
        o.asker
    );
    if o.stalled {
        s.push_str("Stalled: the owner was told; it holds the desk no longer.\n");
    }
    let _ = write!(s, "\nRequest:\n{}\n", o.request.trim_end());
    for m in &o.messages {
        // The worker's last words are the status below; no need to say them twice.
        if m.from == "worker" && o.status_text.as_deref() == Some(m.text.as_str()) {
            continue;
        }
        let _ = write!(s, "\nFrom the {}:\n{}\n", m.from, m.text.trim_end());
    }
    if let Some(status) = &o.status_text {
        let _ = write!(s, "\nStatus ({}):\n{}\n", o.state, status.trim_end());
    }
    if let Some(next) = &o.next {
        let _ = write!(s, "\n{next}\n");
    }
    s
}
