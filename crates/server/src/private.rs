//! Private by default: every task's text is in the data directory, so nobody but the owner
//! may read it. The directory is made 0700 at every start (not only when it is new: one
//! made by hand, or by an older version, may be 0755), and every file of ours in it is 0600:
//! the database and the files SQLite keeps beside it, the lock file, the log and the tokens.
//!
//! SQLite creates its `-wal` and `-shm` files with the database file's own mode, so making
//! the database file 0600 before SQLite opens it (creating it empty if need be; an empty
//! file is a new database to SQLite) keeps them private too, without touching the process's
//! umask, which the daemon's children (a launched session writing the owner's sources)
//! would inherit. A file found with a looser mode is made private and the fix is logged.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Create the data directory if it is missing, and make it 0700 either way.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    restrict(dir, 0o700)
}

/// Open `path` for appending, creating it 0600, and make an existing one 0600.
pub fn open_private_append(path: &Path) -> io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(path)?;
    restrict(path, 0o600)?;
    Ok(file)
}

/// Write a new file at `path`, 0600 from its creation on; refused if anything is there already
/// (a file, or a link planted to send the write elsewhere).
pub fn write_new_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut options = fs::OpenOptions::new();
    options.create_new(true).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

/// Write `path` 0600 (made so at creation), replacing it whole: the bytes go to a new file
/// beside it that is renamed over it, so a reader finds the old file or the new, never half.
pub fn replace_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
    let tmp = path.with_file_name(format!(".{name}.tmp"));
    let mut options = fs::OpenOptions::new();
    options.create(true).write(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fs::rename(&tmp, path)
}

/// Make the data directory and every file of ours in it private, before the store opens:
/// the files that exist get 0600, and the database file and its lock file are created 0600
/// when missing, so what SQLite creates beside them follows. `others` names the rest of our
/// files in `dir` (the log, the tokens): their owners pass them in, as this module sits
/// below them.
pub fn secure_data_dir(dir: &Path, db: &Path, others: &[&str]) -> io::Result<()> {
    ensure_private_dir(dir)?;
    for path in [db.to_owned(), taskkeeper_core::store::lock_path(db)] {
        let mut options = fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(&path)?;
    }
    for path in ours(dir, db, others) {
        match fs::metadata(&path) {
            Ok(_) => restrict(&path, 0o600)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Every file of ours in the data directory: the database's, and `others`.
fn ours(dir: &Path, db: &Path, others: &[&str]) -> Vec<PathBuf> {
    let with_suffix = |suffix: &str| {
        let mut name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
        name.push(suffix);
        db.with_file_name(name)
    };
    let mut files = vec![
        db.to_owned(),
        with_suffix("-wal"),
        with_suffix("-shm"),
        taskkeeper_core::store::lock_path(db),
    ];
    files.extend(others.iter().map(|name| dir.join(name)));
    files
}

/// Give `path` exactly `mode` if it has more; logged, since someone (or something) made it
/// readable to others.
#[cfg(unix)]
fn restrict(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    let had = fs::metadata(path)?.permissions().mode() & 0o777;
    if had & !mode != 0 {
        fs::set_permissions(path, fs::Permissions::from_mode(mode))?;
        tracing::warn!(
            path = %path.display(),
            had = format!("{had:o}"),
            now = format!("{mode:o}"),
            "made private: only the owner may read Taskkeeper's data"
        );
    }
    Ok(())
}

/// Elsewhere the data directory's place in the user's profile keeps it private.
#[cfg(not(unix))]
fn restrict(_path: &Path, _mode: u32) -> io::Result<()> {
    Ok(())
}
