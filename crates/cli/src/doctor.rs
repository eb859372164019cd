//! `taskkeeper doctor`: what the database's write-ahead log holds, read without letting
//! SQLite touch it, and with `--recover` the one explicit way past a damaged log (the daemon
//! refuses to start on one rather than drop committed work unannounced). Either way a damaged
//! log's loss is named task by task (`store::lost_tasks`): a transaction may hold many tasks.

use std::path::PathBuf;

use anyhow::bail;
use taskkeeper_core::store::wal::{self, WalCheck};
use taskkeeper_core::{Clock as _, SystemClock, store};
use taskkeeper_server::DaemonConfig;

use crate::out::say;

pub fn doctor(data_dir: Option<PathBuf>, recover: bool) -> anyhow::Result<()> {
    let mut config = DaemonConfig::from_env()?;
    if let Some(dir) = data_dir {
        config.data_dir = dir;
    }
    let db = config.db_path();
    if !db.exists() {
        say!("no database at {} yet: nothing to check", db.display());
        return Ok(());
    }
    say!("database: {}", db.display());
    let wal_file = wal::wal_path(&db);
    let found = wal::check_files(&db)
        .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", wal_file.display()))?;
    match &found {
        None => say!("write-ahead log: none (everything is in the database)"),
        Some(check) => describe(&wal_file, check),
    }
    let damaged = found.as_ref().is_some_and(WalCheck::is_damaged);
    if !recover {
        if damaged {
            say_lost(&store::lost_tasks(&db)?, "would be", None);
            bail!(
                "the write-ahead log is damaged and `taskkeeper serve` refuses to start; \
                 `taskkeeper doctor --recover` copies the files aside, keeps what verifies \
                 and names the tasks it dropped"
            );
        }
        say!("nothing is damaged");
        return Ok(());
    }
    if !damaged {
        say!("nothing is damaged: nothing to recover, nothing was changed");
        return Ok(());
    }
    let aside = store::aside_dir(&config.data_dir, SystemClock.now());
    let recovery = store::recover(&db, &aside)?;
    if let Some((dir, copies)) = &recovery.aside {
        let names: Vec<String> = copies
            .iter()
            .filter_map(|c| c.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        say!("copied {} to {}", names.join(", "), dir.display());
    }
    if let Some(check) = &recovery.found {
        say!(
            "recovered: {} committed transaction(s) replayed into the database",
            check.replayed_transactions
        );
        say!(
            "dropped: {} (their bytes are in the copies)",
            check.dropped()
        );
    }
    let listed = recovery
        .aside
        .as_ref()
        .map(|(dir, _)| dir.join(store::LOST_TASKS_FILE));
    say_lost(&recovery.lost, "were", listed.as_deref());
    if recovery.integrity != "ok" {
        bail!(
            "the recovered database fails its integrity check ({}); the damaged files are \
             kept aside: restore a backup",
            recovery.integrity
        );
    }
    say!("integrity check: ok; `taskkeeper serve` starts again");
    Ok(())
}

fn describe(path: &std::path::Path, check: &WalCheck) {
    let page = check
        .page_size
        .map_or_else(String::new, |p| format!(" of {p}-byte pages"));
    say!(
        "write-ahead log: {} ({} bytes, {} frame(s){})",
        path.display(),
        check.bytes,
        check.frames,
        page
    );
    say!(
        "  SQLite would replay {} frame(s): {} committed transaction(s)",
        check.replayed_frames,
        check.replayed_transactions
    );
    if check.is_damaged() {
        say!("  DAMAGED: {}", check.damage());
    } else if check.unfinished_frames > 0 || check.trailing_bytes > 0 {
        say!(
            "  then {} frame(s) and {} byte(s) of a write that never committed (normal after a \
             crash: it was never acknowledged)",
            check.unfinished_frames,
            check.trailing_bytes
        );
    }
}

/// The acknowledged tasks whose committed writes are lost, a line each (`LostTask::line`
/// makes the asker's words safe for a terminal), and what cannot be named.
fn say_lost(lost: &store::Lost, were: &str, listed: Option<&std::path::Path>) {
    let in_file = listed.map_or_else(String::new, |p| format!(", listed in {}", p.display()));
    say!(
        "lost: {} acknowledged task(s) whose committed writes {} dropped{}",
        lost.tasks.len(),
        were,
        in_file
    );
    for task in &lost.tasks {
        say!("  {}", task.line());
    }
    if let Some(why) = &lost.unnamed {
        say!("  and more not named: {}", why);
    }
}
