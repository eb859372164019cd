//! What Linux says of a process (`/proc/PID/stat`, read with `procfs`): its parent, its
//! process group, its terminal, who is in front of that terminal, and when it started. The
//! tmux paste asks it whether the session's own process is in front of its pane, and the hook
//! intake when a reported pid started, so a pid reused by another process is told apart.
//! Elsewhere there is no `/proc`: nothing can be read, and no pane is pasted into.

/// One process as `/proc/PID/stat` has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Process {
    pub(crate) pid: u32,
    /// Its name (`comm`), for a refusal's reason.
    pub(crate) name: String,
    pub(crate) parent: u32,
    /// Its process group: what a terminal has in front, or not.
    pub(crate) group: i32,
    /// Its controlling terminal (the kernel's device number; 0 for none).
    pub(crate) terminal: i32,
    /// The process group in front of its terminal (the one keys and pastes go to; -1 for
    /// none).
    pub(crate) in_front: i32,
    /// When it started, in clock ticks after boot: the same pid with another start time is
    /// another process.
    pub(crate) started: u64,
}

/// Process `pid`, as it is now.
#[cfg(target_os = "linux")]
pub(crate) fn read(pid: u32) -> Result<Process, String> {
    let stat = i32::try_from(pid)
        .map_err(|e| e.to_string())
        .and_then(|p| {
            procfs::process::Process::new(p)
                .and_then(|p| p.stat())
                .map_err(|e| e.to_string())
        })
        .map_err(|e| format!("cannot read process {pid}: {e}"))?;
    Ok(Process {
        pid,
        name: stat.comm,
        parent: u32::try_from(stat.ppid).unwrap_or(0),
        group: stat.pgrp,
        terminal: stat.tty_nr,
        in_front: stat.tpgid,
        started: stat.starttime,
    })
}

/// Elsewhere there is no `/proc` to read a process from, and a pane that cannot be checked is
/// not pasted into: the waiter or the desk's command delivers instead.
#[cfg(not(target_os = "linux"))]
pub(crate) fn read(_pid: u32) -> Result<Process, String> {
    Err("a process can only be read on Linux".into())
}

/// When process `pid` started, if it can be read (the hook intake records it with the pid).
pub(crate) fn started(pid: u32) -> Option<u64> {
    read(pid).ok().map(|p| p.started)
}

/// `pid` and its ancestors, nearest first, up to the first process (or a bound, against a
/// table that changes while it is read).
pub(crate) fn process_and_ancestors(pid: u32) -> Result<Vec<u32>, String> {
    let mut line = vec![pid];
    let mut at = pid;
    while at > 1 && line.len() < 256 {
        let parent = read(at)?.parent;
        if parent == 0 || line.contains(&parent) {
            break;
        }
        line.push(parent);
        at = parent;
    }
    Ok(line)
}
