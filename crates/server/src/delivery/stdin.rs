//! Writing to a headless session's stdin: the strongest means, since Taskkeeper owns that
//! process's input.

use taskkeeper_core::delivery::{self};
use taskkeeper_core::session::Session;

use super::Delivery;
use super::push::Pushed;
use crate::sessions::lock;

impl Delivery {
    /// A user message on the stdin of a session Taskkeeper launched. Written is delivered:
    /// the session reads its stdin in order, however long it takes to start (a session still
    /// starting up begins its turn late, not never); the turn it starts is only logged.
    pub(crate) async fn send_stdin(&self, session: &Session, text: &str) -> Pushed {
        let text = &delivery::terminal_safe(text);
        let turn0 = self.sessions.turns(&session.id);
        self.expect_turn(&session.id);
        if !self.stdins.send(&session.id, text) {
            lock(&self.state.expecting).remove(&session.id);
            return Pushed::Failed("the session's stdin is closed".into());
        }
        if !self.turn_started(&session.id, turn0).await {
            tracing::info!(session = %session.id, "written to the session's stdin; no turn has started yet");
        }
        Pushed::Delivered
    }
}
