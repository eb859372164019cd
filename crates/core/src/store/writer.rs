//! The one writer: a thread that owns the only read-write connection and commits whatever
//! writes are queued in one `BEGIN IMMEDIATE` transaction (group commit), so concurrent
//! writers share an fsync. Each write runs in its own savepoint, so one refused write does
//! not undo the others in its group, and each writer hears back only after the commit that
//! made its change durable.

use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;

use rusqlite::Connection;

use super::error::StoreError;
use super::reads;

/// Told the outcome of the commit; `Err` means the whole group was rolled back.
type Reply = Box<dyn FnOnce(Result<(), StoreError>) + Send>;
/// Runs inside the group's transaction (or is told why it could not run) and says whether
/// its savepoint should be kept.
type Job = Box<dyn FnOnce(Result<&Connection, StoreError>) -> (bool, Reply) + Send>;

/// The most writes one commit carries; beyond it the rest wait for the next commit.
const MAX_GROUP: usize = 256;

/// The writer thread of one database, and the queue to it. The store's handle owns one and
/// hands its writes to it.
pub(super) struct Writer {
    queue: Mutex<Option<mpsc::Sender<Job>>>,
    thread: Mutex<Option<thread::JoinHandle<()>>>,
    reads: Arc<reads::Totals>,
}

impl Writer {
    /// Start the writer thread on `conn`, the only read-write connection; what its writes
    /// read is added to `reads`.
    pub(super) fn spawn(conn: Connection, reads: Arc<reads::Totals>) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::channel::<Job>();
        let handle = thread::Builder::new()
            .name("taskkeeper-store-writer".into())
            .spawn(move || run(conn, rx))?;
        Ok(Writer {
            queue: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(handle)),
            reads,
        })
    }

    /// Commit what is queued, then end the thread; later writes get [`StoreError::Closed`].
    pub(super) fn stop(&self) {
        // Closing the channel ends the writer after it has committed what is queued.
        self.queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(h) = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            let _ = h.join();
        }
    }

    /// Run `f` in the writer's next group commit and wait for that commit.
    pub(super) fn write<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
    ) -> Result<R, StoreError> {
        let (tx, rx) = mpsc::sync_channel::<Result<R, StoreError>>(1);
        self.write_then(f, move |result| {
            let _ = tx.send(result);
        });
        rx.recv().map_err(|_| StoreError::Closed)?
    }

    /// Run `f` in the writer's next group commit and hand its outcome to `done` once that
    /// commit is durable (or refused). Returns at once: `done` runs on the writer thread, so
    /// it must only pass the outcome on (an async caller's channel), never block.
    pub(super) fn write_then<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<R, StoreError> + Send + 'static,
        done: impl FnOnce(Result<R, StoreError>) + Send + 'static,
    ) {
        let totals = Arc::clone(&self.reads);
        let job: Job = Box::new(move |conn| {
            let result = totals.counting(|| conn.and_then(f));
            let keep = result.is_ok();
            let reply: Reply = Box::new(move |commit| done(commit.and(result)));
            (keep, reply)
        });
        let sender = self
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match sender {
            Some(sender) => {
                if let Err(mpsc::SendError(job)) = sender.send(job) {
                    let (_, reply) = job(Err(StoreError::Closed));
                    reply(Err(StoreError::Closed));
                }
            }
            None => {
                let (_, reply) = job(Err(StoreError::Closed));
                reply(Err(StoreError::Closed));
            }
        }
    }
}

fn run(conn: Connection, rx: mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        commit_group(&conn, group);
    }
}

/// Run one statement of the commit protocol from the connection's statement cache: these run
/// for every write, so each is parsed once for the writer's life.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(drop)
}

fn commit_group(conn: &Connection, group: Vec<Job>) {
    if let Err(e) = run_cached(conn, "BEGIN IMMEDIATE") {
        let err = StoreError::from(e);
        for job in group {
            let (_, reply) = job(Err(err.clone()));
            reply(Err(err.clone()));
        }
        return;
    }
    let mut replies = Vec::with_capacity(group.len());
    let mut broken: Option<StoreError> = None;
    for job in group {
        if let Some(err) = &broken {
            let (_, reply) = job(Err(err.clone()));
            replies.push(reply);
            continue;
        }
        if let Err(e) = run_cached(conn, "SAVEPOINT job") {
            broken = Some(e.into());
            let (_, reply) = job(Err(broken.clone().unwrap_or(StoreError::Closed)));
            replies.push(reply);
            continue;
        }
        let (keep, reply) = job(Ok(conn));
        let end = if keep {
            run_cached(conn, "RELEASE job")
        } else {
            run_cached(conn, "ROLLBACK TO job").and_then(|()| run_cached(conn, "RELEASE job"))
        };
        if let Err(e) = end {
            broken = Some(e.into());
        }
        replies.push(reply);
    }
    let outcome = match broken {
        Some(err) => Err(err),
        None => run_cached(conn, "COMMIT").map_err(StoreError::from),
    };
    if outcome.is_err() {
        // Nothing of this group is durable; make sure the transaction is gone.
        let _ = conn.execute_batch("ROLLBACK");
    }
    for reply in replies {
        reply(outcome.clone());
    }
}
