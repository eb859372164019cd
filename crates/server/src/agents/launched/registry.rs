//! The registry of the sessions this daemon launched ([`Launched`]): the driver each one's
//! input goes to, the permission request it waits on the owner for, and the tasks awaited at
//! shutdown; and what the owner does to them through the launcher (stop one, stop all,
//! answer what one asks, end those an earlier run left).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use taskkeeper_core::StoreError;
use taskkeeper_core::session::{Edge, Session, SessionId};
use tokio::sync::{Notify, mpsc};

use super::process::STOP_GRACE;
use super::{Input, Launcher};
use crate::agents::launch::LaunchError;
use crate::agents::permission::Permission;

/// The sessions this process launched: their stdin, and how to stop them.
#[derive(Debug, Default)]
pub(crate) struct Launched {
    running: Mutex<HashMap<SessionId, Handle>>,
    /// The permission request each session waits on the owner for.
    asked: Mutex<HashMap<SessionId, Permission>>,
    /// The processes' lifecycle tasks, awaited at shutdown.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

#[derive(Debug, Clone)]
struct Handle {
    /// What goes to the driver of the session's stdin ([`super::Launcher::run_launched`]).
    input: mpsc::UnboundedSender<Input>,
    stop: Arc<Notify>,
}

impl Launched {
    pub(crate) fn holds(&self, id: &SessionId) -> bool {
        crate::sessions::lock(&self.running).contains_key(id)
    }

    /// Queue `text` as a task for the session's protocol; false when its stdin is gone.
    pub(crate) fn send(&self, id: &SessionId, text: &str) -> bool {
        self.send_input(id, Input::Task(text.to_owned()))
    }

    /// Hold a launched session: what it is given goes to `input`, its driver.
    pub(crate) fn hold(
        &self,
        id: SessionId,
        input: mpsc::UnboundedSender<Input>,
        stop: Arc<Notify>,
    ) {
        crate::sessions::lock(&self.running).insert(id, Handle { input, stop });
    }

    /// The session asks the owner to allow a tool.
    pub(crate) fn ask(&self, id: &SessionId, permission: Permission) {
        crate::sessions::lock(&self.asked).insert(id.clone(), permission);
    }

    /// The session withdrew request `request_id`: true when it was the one it waited on.
    pub(crate) fn withdraw(&self, id: &SessionId, request_id: &str) -> bool {
        let mut asked = crate::sessions::lock(&self.asked);
        let ours = asked.get(id).is_some_and(|p| p.request_id == request_id);
        if ours {
            asked.remove(id);
        }
        ours
    }

    /// Forget what a session that is gone asked.
    pub(crate) fn forget_asked(&self, id: &SessionId) {
        crate::sessions::lock(&self.asked).remove(id);
    }

    /// A launched process's lifecycle, awaited at shutdown.
    pub(crate) fn track(&self, task: tokio::task::JoinHandle<()>) {
        crate::sessions::lock(&self.tasks).push(task);
    }

    /// Forget a session whose process is gone (its input closes).
    pub(crate) fn release(&self, id: &SessionId) {
        crate::sessions::lock(&self.running).remove(id);
    }

    fn send_input(&self, id: &SessionId, input: Input) -> bool {
        crate::sessions::lock(&self.running)
            .get(id)
            .is_some_and(|h| h.input.send(input).is_ok())
    }

    /// What the session asks the owner to allow, if anything.
    pub(crate) fn asked(&self, id: &SessionId) -> Option<Permission> {
        crate::sessions::lock(&self.asked).get(id).cloned()
    }
}

/// Delivery writes to what the launcher holds.
impl crate::delivery::Stdins for Launched {
    fn holds(&self, id: &SessionId) -> bool {
        Launched::holds(self, id)
    }

    fn send(&self, id: &SessionId, text: &str) -> bool {
        Launched::send(self, id, text)
    }
}

impl Launcher {
    /// Stop a session this daemon launched: its stdin closes (it finishes the message it is on
    /// and exits), and it is killed if it has not exited after a grace period.
    pub async fn stop_launched(&self, id: &SessionId) -> Result<(), LaunchError> {
        let handle = crate::sessions::lock(&self.launched().running).remove(id);
        match handle {
            Some(h) => {
                h.stop.notify_one();
                Ok(())
            }
            None => Err(LaunchError::NotLaunched(id.to_string())),
        }
    }

    /// At shutdown: stop every launched session and wait (briefly) until they are gone.
    pub(crate) async fn stop_all_launched(&self) {
        let handles: Vec<Handle> = crate::sessions::lock(&self.launched().running)
            .drain()
            .map(|(_, h)| h)
            .collect();
        for h in handles {
            h.stop.notify_one();
        }
        let tasks: Vec<_> = crate::sessions::lock(&self.launched().tasks)
            .drain(..)
            .collect();
        for t in tasks {
            // The grace, and time to record the end.
            let _ = tokio::time::timeout(STOP_GRACE + Duration::from_secs(5), t).await;
        }
    }

    /// Sessions launched by an earlier run of the daemon died with it (their stdin was its):
    /// end them.
    pub(crate) async fn end_orphaned_headless(&self) -> Result<(), StoreError> {
        let orphans: Vec<Session> = self
            .sessions()
            .tasks()
            .session_store()
            .list(None)
            .await?
            .into_iter()
            .filter(|s| s.reach.headless && s.is_live() && !self.launched().holds(&s.id))
            .collect();
        for s in orphans {
            tracing::info!(session = %s.id, "a headless session of an earlier run ended with it");
            // Its desk's tasks wait on the owner no more (`Sessions::edges`).
            self.sessions().edge(&s.id, Edge::Ended).await?;
        }
        Ok(())
    }

    /// The owner's answer to what a launched session asks: allowed, or denied with a message
    /// the model reads.
    pub async fn answer_permission(
        &self,
        id: &SessionId,
        allow: bool,
        message: Option<&str>,
        request_id: Option<&str>,
    ) -> Result<(), LaunchError> {
        if !self.launched().holds(id) {
            return Err(LaunchError::NotLaunched(id.to_string()));
        }
        let permission = {
            let mut asked = crate::sessions::lock(&self.launched().asked);
            let current = asked
                .get(id)
                .ok_or_else(|| LaunchError::NothingAsked(id.to_string()))?;
            if let Some(answered) = request_id
                && answered != current.request_id
            {
                return Err(LaunchError::AskedSomethingElse {
                    session: id.to_string(),
                    asked: current.request_id.clone(),
                    answered: answered.to_owned(),
                });
            }
            asked
                .remove(id)
                .ok_or_else(|| LaunchError::NothingAsked(id.to_string()))?
        };
        // Answered, the turn goes on; the desk's tasks wait on the owner no more
        // (`Sessions::edges`). Recorded before the answer goes, so what the session asks next
        // (an agent that asked several things at once) is marked after it, not before.
        self.sessions().edge(id, Edge::ToolActivity).await?;
        if !self.launched().send_input(
            id,
            Input::Answer {
                request_id: permission.request_id.clone(),
                line: permission.answer(allow, message),
                allow,
                message: message.map(str::to_owned),
            },
        ) {
            return Err(LaunchError::NotLaunched(id.to_string()));
        }
        tracing::info!(session = %id, tool = %permission.tool, allow, "the owner answered a permission request");
        Ok(())
    }
}
