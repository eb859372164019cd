//! The tools: their arguments (the JSON schemas the model sees) and what each does, one thin
//! step from the owner service and the task service.

use std::fmt::Write as _;
use std::str::FromStr;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use taskkeeper_core::store::{StateFilter, TaskFilter};
use taskkeeper_core::{DeskName, Message, NewTask, TaskId};

use super::read::{Audience, queue_words, render_task, task_json, task_line};
use super::{INSTRUCTIONS, McpServer, ToolError, ToolOutcome, finish, success};
use crate::owner::{UpdateRefused, WorkerStatus};

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
        let mut tasks = self
            .tasks
            .list(filter)
            .await
            .map_err(|e| ToolError::store(e, |_, _| String::new()))?;
        tasks.retain(|t| taskkeeper_core::asker::may_read(call.reader(), t));
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
        call.may_read(&task)?;
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
            .desks()
            .list()
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
        let task = self.sent_task(&call, &args.task_id, false).await?;
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
        let task = self.sent_task(&call, &args.task_id, true).await?;
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
